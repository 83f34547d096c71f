"""Rich tables that fit the terminal without cutting what matters.

Rich shrinks every column of a table wider than the terminal, down to nothing (``┃┃┃``)
and cuts names with an ellipsis. kdump's tables instead:

- give every column at least its content's width: a name, an offset or a time is never cut
  or wrapped; only free text (a ``fold`` column: findings, reasons) wraps, at spaces;
- drop optional columns (``drop`` > 0, the highest first) when the terminal is too narrow,
  and say which;
- fall back to one record per block (``name: value`` lines) when even the columns that
  stay do not fit;
- print a title on a line of its own, never wrapped: a path is not broken across lines.

``FitTable`` keeps its columns and widths across the chunks of a long table, so rows drawn
in pieces (memory stays flat) stay aligned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

FOLD_MIN = 20           # a free-text column is never narrower than this (or its longest word)


@dataclass(frozen=True)
class Col:
    name: str
    justify: str = "left"
    drop: int = 0           # 0: always shown; else dropped, highest first, when the terminal is too narrow
    fold: bool = False      # free text that may wrap at spaces
    join: str = " "         # how a block joins the lines of a multi-line cell


def _lines(cell: Any) -> list[str]:
    return (cell.plain if hasattr(cell, "plain") else str(cell)).split("\n")


def cell_width(cell: Any) -> int:
    from rich.cells import cell_len

    return max(cell_len(line) for line in _lines(cell))


def _longest_word(cell: Any) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for line in _lines(cell) for w in line.split(" ")), default=0)


def _needs(cols: Sequence[Col], rows: Sequence[Sequence[Any]], floor: list[int] | None) -> tuple[list[int], list[int]]:
    """(full width, least width) of each column."""
    full, least = [], []
    for i, c in enumerate(cols):
        head = cell_width(c.name)           # a header is never cut either
        w = max([head, *(cell_width(r[i]) for r in rows)])
        if floor is not None:
            w = max(w, floor[i])
        full.append(w)
        least.append(min(w, max(FOLD_MIN, head, *(_longest_word(r[i]) for r in rows))) if c.fold else w)
    return full, least


def _width(widths: Sequence[int], boxed: bool = True) -> int:
    if boxed:
        return sum(widths) + 3 * len(widths) + 1       # "│ a │ b │": a space each side, a rule between
    return sum(widths) + 2 * max(len(widths) - 1, 0)   # no box, no edge padding: two spaces between


def fit(cols: Sequence[Col], rows: Sequence[Sequence[Any]], width: int,
        floor: list[int] | None = None, boxed: bool = True) -> tuple[list[int], list[int]] | None:
    """(shown column indexes, their widths) fitting ``width``, or None: one record per block."""
    full, least = _needs(cols, rows, floor)
    shown = list(range(len(cols)))
    while _width([least[i] for i in shown], boxed) > width:
        droppable = [i for i in shown if cols[i].drop]
        if not droppable:
            return None
        shown.remove(max(reversed(droppable), key=lambda i: cols[i].drop))
    for i in sorted(set(range(len(cols))) - set(shown), key=lambda i: cols[i].drop):
        if _width([least[j] for j in shown] + [least[i]], boxed) <= width:    # a narrower one may fit again
            shown = sorted(shown + [i])
    widths = [least[i] for i in shown]
    spare = width - _width(widths, boxed)
    for k, i in enumerate(shown):            # room left goes to the free text, up to its full width
        if cols[i].fold and spare > 0:
            extra = min(spare, full[i] - widths[k])
            widths[k] += extra
            spare -= extra
    return shown, widths


def title(console, text: str, style: str = "bold") -> None:
    """A title on its own line, never wrapped (the terminal may wrap a long path; kdump does not)."""
    from rich.text import Text

    console.print(Text(text, style=style), soft_wrap=True)


def blocks(console, cols: Sequence[Col], rows: Sequence[Sequence[Any]]) -> None:
    """One record per block: the first column as its head, then ``name: value`` lines (a
    column joined by "\\n" keeps its lines, indented)."""
    from rich.text import Text

    for row in rows:
        head = _lines(row[0]) if cols[0].join == "\n" else [" ".join(_lines(row[0]))]
        if head[0]:         # a row continuing the record above (its first cell blank) has no head
            console.print(Text(head[0], style="bold"), soft_wrap=True)
            for line in head[1:]:
                console.print(f"  {line}", soft_wrap=True)
        for c, cell in zip(cols[1:], row[1:]):
            lines = _lines(cell) if c.join == "\n" else [c.join.join(_lines(cell))]
            if lines[0]:
                style = getattr(cell, "style", "") if hasattr(cell, "plain") else ""
                if c.fold:      # free text wraps at spaces, indented under its name
                    lines = _wrap(lines, len(c.name) + 4, console.width)
                console.print(Text(f"  {c.name}: ") + Text(lines[0], style=style), soft_wrap=True)
                for line in lines[1:]:
                    console.print(Text(f"    {line}", style=style), soft_wrap=True)


def _wrap(lines: list[str], first: int, width: int) -> list[str]:
    """Free text folded at spaces: the first line after a ``first``-wide head, the others after
    four spaces (a word longer than the room stays whole)."""
    import textwrap

    out: list[str] = []
    for line in lines:
        head = "x" * (first if not out else 4)
        wrapped = textwrap.wrap(line, width=max(width, first + FOLD_MIN), initial_indent=head,
                                subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
        out += [wrapped[0][len(head):], *(w[4:] for w in wrapped[1:])] if wrapped else [""]
    return out


class FitTable:
    """A table drawn in one go or in chunks: the columns shown and their widths are chosen from
    the first chunk (and ``floor``, widths known in advance) and kept for the next ones."""

    def __init__(self, console, cols: Sequence[Col], floor: list[int] | None = None, **table_args) -> None:
        self.console = console
        self.cols = list(cols)
        self.floor = floor
        self.table_args = table_args
        self.plan: tuple[list[int], list[int]] | None = None
        self.drawn = 0

    def draw(self, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        first = self.drawn == 0
        if first:
            boxed = self.table_args.get("box", True) is not None
            self.plan = fit(self.cols, rows, self.console.width, self.floor, boxed)
            if self.plan is not None and len(self.plan[0]) < len(self.cols):
                gone = [c.name for i, c in enumerate(self.cols) if i not in self.plan[0]]
                self.console.print(f"(too narrow for: {', '.join(gone)}; --format text shows every field)",
                                   style="dim", overflow="fold")
        self.drawn += len(rows)
        if self.plan is None:
            return blocks(self.console, self.cols, rows)
        shown, widths = self.plan
        if not first:       # a later chunk with a wider cell widens its column (rare: kept from then on)
            full, _ = _needs([self.cols[i] for i in shown], [[r[i] for i in shown] for r in rows], None)
            widths[:] = [w if self.cols[i].fold else max(w, f) for i, w, f in zip(shown, widths, full)]
        from rich.table import Table

        t = Table(show_header=first, expand=False, **self.table_args)
        for i, w in zip(shown, widths):
            c = self.cols[i]
            t.add_column(c.name, justify=c.justify, width=w, no_wrap=not c.fold, overflow="fold")
        for r in rows:
            t.add_row(*(r[i] for i in shown))
        self.console.print(t)


def print_table(console, cols: Sequence[Col], rows: Sequence[Sequence[Any]], heading: str | None = None,
                **table_args) -> None:
    """A whole table: its heading on a line of its own, then the table (or blocks) fitting the console."""
    if heading:
        title(console, heading)
    if not rows:
        console.print("(none)", style="dim")
        return
    FitTable(console, cols, **table_args).draw(rows)
