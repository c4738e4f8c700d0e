"""One exception hierarchy: the CLI catches `TriageError` in one place and prints it as one line."""

from __future__ import annotations


class TriageError(Exception):
    """An error the user can act on (never a bug): printed as `error: ... / --> where / help: ...`."""

    exit_code = 2

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def render(self) -> str:
        """Three lines at most, each safe for a terminal and a CI log (a newline in a file name cannot start
        a workflow command of its own)."""
        from .display import one_line

        lines = [f"error: {one_line(self.message)}"]
        if self.where:
            lines.append(f"  --> {one_line(self.where)}")
        if self.hint:
            lines.append(f"  help: {one_line(self.hint)}")
        return "\n".join(lines)


class PackError(TriageError):
    """A pattern pack is invalid; raised at load time, before any log line is read."""


class InputError(TriageError):
    """A path cannot be read or a stream is unusable."""


class StoreError(TriageError):
    """The run database cannot be opened or written."""
