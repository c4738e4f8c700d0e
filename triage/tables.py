"""Tables for a terminal and for a pipe, with Rich: ids, timestamps and numbers are never cut or wrapped.

On a terminal the free-text columns wrap; when they would get too narrow to read, each row puts its text
on an indented line of its own below the row instead. When stdout is not a terminal (a CI log, `| grep`,
`| cat`) every row is one line, text columns are cut with `…`, and a row runs past the width rather than
break an id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.segment import Segment, Segments
from rich.text import Text

if TYPE_CHECKING:  # imported by the first table printed: a scan's report and `explain` mostly print none
    from rich.table import Table

GAP = 2
STACK_BELOW = 24  # on a terminal, text columns narrower than this go on a line of their own
STACK_INDENT = 4


@dataclass(frozen=True)
class Column:
    name: str
    whole: bool = False  # an id, a timestamp, a number: always whole, on one line
    justify: str = "left"
    keep_end: bool = False  # a hierarchical name (`top/u_conv/cluster_0`): cut at the start, never wrapped
    min: int = 16  # in a pipe, the row runs past the width rather than cut this column narrower


Cell = Text | str


def print_table(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], *,
                header: bool = True, at_least: Sequence[int] | None = None) -> list[int]:
    """Print `rows` under `columns` at the console's width (see the module docstring). A long listing is
    printed in slices: `at_least` (the widths an earlier slice returned) keeps the columns aligned, and
    `header=False` leaves the column names out. Returns the columns' natural widths."""
    cells = [[c if isinstance(c, Text) else Text(str(c)) for c in row] for row in rows]
    natural = [max([cell_len(col.name)] + [r[i].cell_len for r in cells]) for i, col in enumerate(columns)]
    if at_least is not None:
        natural = [max(n, w) for n, w in zip(natural, at_least)]
    text_cols = [i for i, col in enumerate(columns) if not col.whole]
    room = console.width - sum(natural[i] for i, col in enumerate(columns) if col.whole) - GAP * (len(columns) - 1)
    widths = list(natural)
    if text_cols and sum(natural[i] for i in text_cols) > room:
        wrapping = [i for i in text_cols if not columns[i].keep_end]
        spare = room - sum(min(natural[i], columns[i].min) for i in text_cols if columns[i].keep_end)
        if console.is_terminal and wrapping and spare // len(wrapping) < STACK_BELOW:
            _print_stacked(console, columns, cells, natural, header)
            return natural
        left, todo = room, sorted(text_cols, key=lambda i: natural[i])  # short columns keep their width
        for n, i in enumerate(todo):
            # a terminal wraps a text column, so its minimum (a pipe's) must not push the row past the width
            floor = 1 if console.is_terminal and not columns[i].keep_end else columns[i].min
            widths[i] = min(natural[i], max(floor, left // (len(todo) - n)))
            left -= widths[i]
    table = _table(columns, widths, wrap=console.is_terminal, header=header)
    for row in cells:
        table.add_row(*(_cut_start(c, widths[i]) if columns[i].keep_end else c for i, c in enumerate(row)))
    emit(console, table, sum(widths) + GAP * (len(columns) - 1))
    return natural


def _table(columns: Sequence[Column], widths: Sequence[int], wrap: bool, header: bool = True) -> Table:
    from rich.table import Table  # noqa: PLC0415

    # padding (0, 1) without edge padding: exactly GAP (2) spaces between columns
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, GAP // 2), header_style="bold" if wrap else "",
                  show_header=header)
    for col, width in zip(columns, widths):
        fixed = col.whole or col.keep_end or not wrap
        table.add_column(col.name, justify=col.justify, width=width,  # type: ignore[arg-type]
                         no_wrap=fixed, overflow="ellipsis" if fixed and not col.whole else "fold")
    return table


def _cut_start(text: Text, width: int) -> Text:
    if text.cell_len <= width:
        return text
    return Text("…", style=text.style) + text[len(text.plain) - max(width - 1, 0):]


def _print_stacked(console: Console, columns: Sequence[Column], cells: list[list[Text]], natural: list[int],
                   header: bool = True) -> None:
    """The whole columns as a table, each row followed by its text columns, wrapped and indented."""
    keep = [i for i, col in enumerate(columns) if col.whole]
    table = _table([columns[i] for i in keep], [natural[i] for i in keep], wrap=True, header=header)
    for row in cells:
        table.add_row(*(row[i] for i in keep))
    width = sum(natural[i] for i in keep) + GAP * (len(keep) - 1)
    lines = console.render_lines(table, console.options.update(width=max(width, 1)), pad=False)
    if header:
        _print_line(console, lines[0])
    for row, line in zip(cells, lines[1:] if header else lines):
        _print_line(console, line)
        below = Text("  ").join(row[i] for i, col in enumerate(columns) if not col.whole and row[i].plain)
        if not below.plain:  # nothing to put below this row (a run without a label)
            continue
        for part in below.wrap(console, max(console.width - STACK_INDENT, STACK_BELOW)):
            part.rstrip()
            console.print(Text(" " * STACK_INDENT) + part, soft_wrap=True)


def emit(console: Console, renderable: RenderableType, width: int) -> None:
    """Print `renderable` at `width` cells, even past the console's width (where Rich would cut it), with
    no trailing spaces."""
    for line in console.render_lines(renderable, console.options.update(width=max(width, 1)), pad=False):
        _print_line(console, line)


def _print_line(console: Console, line: list[Segment]) -> None:
    console.print(Segments([*_rstrip(line), Segment.line()]), end="", soft_wrap=True, crop=False)


def _rstrip(line: list[Segment]) -> list[Segment]:
    out = [s for s in line if s.text != "\n"]
    while out and not out[-1].control and not out[-1].text.rstrip(" "):
        out.pop()
    if out and not out[-1].control:
        out[-1] = Segment(out[-1].text.rstrip(" "), out[-1].style)
    return out
