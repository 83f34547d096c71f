"""The terminal chart of ``kdump info --timeline``: a row per segment, its offsets and times
drawn on the partition's own axes.

Each row has two strips of STRIP cells. On the offset strip a segment's cells are
``█`` where it holds batches, ``╌`` where compaction (or anything else) left the offsets
missing, and ``✗`` where a finding lies; green ok, yellow anomaly, red damage. On the time
strip the block height is the segment's record rate against the partition's highest
(``▁`` .. ``█``). Gaps between segments get a row of their own.
"""

from __future__ import annotations

from kdump import findings as F
from kdump.render.escape import printable
from kdump.survey.timeline import SegmentSpan, Timeline

STRIP = 24
LEVELS = "▁▂▃▄▅▆▇█"
STYLE = {"ok": "green", "anomaly": "yellow", "damage": "red", "error": "red"}
# Columns a narrow terminal drops first (last listed, first dropped); names, offsets and the
# offset strip always stay.
OPTIONAL = ("size", "records", "gaps", "rate/s", "time")


def human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _cell(lo: int, hi: int, i: int, cells: int) -> tuple[float, float]:
    width = (hi - lo + 1) / cells
    return lo + i * width, lo + (i + 1) * width


def offset_strip(s: SegmentSpan, lo: int, hi: int, cells: int = STRIP):
    from rich.text import Text

    text = Text()
    if s.first_offset is None:
        return Text(" " * cells)
    marks = [(at, f.cls) for at, f in s.marks]
    for i in range(cells):
        a, b = _cell(lo, hi, i, cells)
        if b <= s.first_offset or a >= s.last_offset + 1:
            text.append(" ")
            continue
        hits = [cls for o, cls in marks if a <= o < b]
        if hits:
            text.append("✗", style="bold yellow" if set(hits) == {F.ANOMALY} else "bold red")
            continue
        mid = (a + b) / 2
        gap = any(g0 <= mid <= g1 + 1 for g0, g1 in s.gaps)
        text.append("╌" if gap else "█", style=STYLE[s.status])
    return text


def time_strip(s: SegmentSpan, lo: int, hi: int, top_rate: float, cells: int = STRIP):
    from rich.text import Text

    if s.first_time is None or hi <= lo:
        return Text(" " * cells if s.first_time is None else "█" + " " * (cells - 1), style=STYLE[s.status])
    rate = s.rate
    level = LEVELS[-1] if rate is None or not top_rate else LEVELS[max(0, min(7, round(rate / top_rate * 7)))]
    text = Text()
    for i in range(cells):
        a, b = _cell(lo, hi, i, cells)
        text.append(level if b > s.first_time and a <= s.last_time else " ", style=STYLE[s.status])
    return text


COLUMNS = (("segment", "left"), ("offsets", "right"), ("size", "right"), ("records", "right"),
           ("rate/s", "right"), ("gaps", "right"), ("offset axis", "left"), ("time", "left"), ("findings", "left"))


def _title(t: Timeline) -> tuple[str, int, int]:
    from kdump.render.state import when

    spans = [s for s in t.segments if s.first_offset is not None]
    lo = min((s.first_offset for s in spans), default=0)
    hi = max((s.last_offset for s in spans), default=0)
    times = [x for s in spans for x in (s.first_time, s.last_time) if x is not None]
    name = f"{t.topic}-{t.partition}" if t.topic else t.path
    span = f"times {when(min(times))} .. {when(max(times))}" if times else "no times"
    count = f"{len(t.segments)} segment{'' if len(t.segments) == 1 else 's'}"
    return f"{printable(name)}: {count}, offsets {lo}..{hi}\n{span}", lo, hi


def _rows(t: Timeline, cells: int) -> list[dict]:
    from rich.text import Text

    _, lo, hi = _title(t)
    spans = [s for s in t.segments if s.first_offset is not None]
    times = [x for s in spans for x in (s.first_time, s.last_time) if x is not None]
    t0, t1 = (min(times), max(times)) if times else (0, 0)
    top_rate = max((s.rate or 0 for s in spans), default=0)
    between = {g[0]: g for g in t.between}
    rows = []
    for s in t.segments:
        kinds = sorted({f.kind for f in s.findings})
        rows.append({"segment": printable(s.file.rsplit("/", 1)[-1].removesuffix(".log")),
                     "offsets": "-" if s.first_offset is None else f"{s.first_offset}..{s.last_offset}",
                     "size": human(s.bytes), "records": f"{s.records:,}",
                     "rate/s": "-" if s.rate is None else f"{s.rate:,.1f}",
                     "gaps": f"{s.missing:,}" if s.missing else "",
                     "offset axis": offset_strip(s, lo, hi, cells), "time": time_strip(s, t0, t1, top_rate, cells),
                     "findings": Text("\n".join(kinds), style=STYLE[s.status]) if kinds else Text("ok", style="green")})
        if s.last_offset is not None and s.last_offset + 1 in between:
            g0, g1 = between[s.last_offset + 1]
            rows.append({"segment": Text("(missing)", style="dim"), "offsets": Text(f"{g0}..{g1}", style="dim"),
                         "gaps": Text(f"{g1 - g0 + 1:,}", style="dim")})
    return rows


def _widths(rows: list[dict], keep: list[str]) -> dict[str, int]:
    """Each column's natural width: its header or its widest cell (never cut)."""
    return {c: max([len(c), *(len(line) for r in rows for line in str(r.get(c, "")).splitlines())]) for c in keep}


def table(t: Timeline, drop: tuple[str, ...] = (), cells: int = STRIP):
    from rich.table import Table

    rows = _rows(t, cells)
    keep = [c for c, _ in COLUMNS if c not in drop]
    widths = _widths(rows, keep)
    tab = Table(title=_title(t)[0], title_justify="left", show_edge=False, pad_edge=False)
    for column, just in COLUMNS:
        if column in keep:      # every cell whole: a finding's name is never split (one a line)
            tab.add_column(column, justify=just, no_wrap=True, min_width=widths[column])
    for r in rows:
        tab.add_row(*(r.get(c, "") for c in keep))
    return tab


def fitted(console, t: Timeline):
    """(table, whether the findings are left for lines below it, the columns left out): as many
    optional columns, and strip cells, as the terminal takes; names, offsets, findings and the
    offset strip are never cut."""
    best: tuple[tuple[str, ...], int] = ((), STRIP)
    for n in range(len(OPTIONAL) + 1):
        drop = OPTIONAL[len(OPTIONAL) - n:] if n else ()
        for cells in (STRIP, 16, 10):
            keep = [c for c, _ in COLUMNS if c not in drop]
            widths = _widths(_rows(t, cells), keep)
            best = (drop, cells)
            if sum(widths.values()) + 3 * (len(keep) - 1) <= console.width:
                return table(t, drop, cells), False, drop
    # Narrower still: the findings go below the table, a line per segment.
    return table(t, (*best[0], "findings"), best[1]), True, best[0]


def print_timeline(console, t: Timeline) -> tuple[str, ...]:
    """The partition's table (and its findings); the optional columns it had no room for."""
    tab, below, dropped = fitted(console, t)
    console.print(tab)
    for s in t.segments if below else ():
        if s.findings:
            kinds = ", ".join(sorted({f.kind for f in s.findings}))
            console.print(printable(f"{s.file.rsplit('/', 1)[-1]}: {kinds}"), style=STYLE[s.status], markup=False,
                          highlight=False)
    for f in t.findings:
        style = "red" if f.cls == F.DAMAGE else "yellow"
        console.print(printable(f"  {f.kind} ({f.cls}): {f.message}"), style=style, markup=False, highlight=False)
    return dropped


def print_legend(console, left_out=frozenset()) -> None:
    """What the strips' marks mean (the time strip's only where one was drawn), and which
    columns some table had no room for, folded between its items to the terminal's width."""
    items = ["█ batches", "╌ offsets missing (compaction)", "✗ a finding"]
    if "time" not in left_out:
        items.append(f"time: {LEVELS} record rate")
    items.append("green ok, yellow anomaly, red damage")
    lines, line = [], ""
    for item in items:
        if line and len(line) + 2 + len(item) > console.width:
            lines.append(line)
            line = ""
        line = f"{line}  {item}" if line else item
    lines.append(line)
    if left_out:
        import textwrap

        gone = ", ".join(c for c, _ in COLUMNS if c in left_out)
        lines += textwrap.wrap(f"not shown at {console.width} columns: {gone} (--json or a wider terminal "
                               "shows them)", width=max(console.width, 40), break_on_hyphens=False)
    for line in lines:
        console.print(line, style="dim", markup=False, highlight=False, soft_wrap=True)
