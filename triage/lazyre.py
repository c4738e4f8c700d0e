"""Module-level regexes compiled on first use: importing a module then costs no command that never runs them
(`regex` compiles a pattern in Python, about a millisecond each; a scan of a short log used a third of them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_BOUND = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "pattern", "flags",
          "groups", "groupindex")


class LazyPattern:
    """Stands in for `compile(*args)`. The first attribute read compiles it and binds the pattern's methods
    on this object, so later calls cost what calls on the compiled pattern cost."""

    def __init__(self, compile: Callable[..., Any], *args: Any) -> None:  # noqa: A002 - re.compile, regex.compile
        self._compile = compile
        self._args = args

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_compile", "_args"):
            raise AttributeError(name)
        compiled = self._compile(*self._args)
        for attr in _BOUND:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)


def lazy(compile: Callable[..., Any], *args: Any) -> Any:  # noqa: A002
    """`lazy(regex.compile, r"...", flags)`: typed as the compiled pattern it stands in for."""
    return LazyPattern(compile, *args)
