"""``kdump info --timeline --html FILE``: the timeline as one self-contained page, plain HTML
and inline SVG (no script, no network, nothing to install), that stays small and quick on a
whole broker.

Problems first: an overview (how many partitions, segments, bytes; how many damaged), then
every finding by partition, damage before anomalies, then a chart per partition with
findings (and, up to CHARTS in all, the healthy partitions of more than one segment), then
one row per partition. A chart draws one row per segment against offset: its bar coloured
by status (red damage, orange anomaly), the offsets missing in grey, a cross where a
finding lies; hovering a bar gives its details. Charts scale to the window's width.
"""

from __future__ import annotations

import datetime as dt
from html import escape

from kdump import findings as F
from kdump.render.timeline import human
from kdump.survey.timeline import SegmentSpan, Timeline

COLOR = {"ok": "#1f77b4", "anomaly": "#ff7f0e", "damage": "#d62728", "error": "#d62728"}
GAP_COLOR = "#c7c7c7"
CHARTS = 200                # charts drawn at most (partitions with findings first)
ROWS = 60                   # segment rows in one chart; the rest are counted under it
FINDINGS = 5                # findings listed per partition in the problems table
_RANK = {"error": 0, "damage": 1, "anomaly": 2, "ok": 3}
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%;table-layout:fixed}td,th{padding:2px 6px;border-bottom:1px solid #eee;
text-align:left;overflow-wrap:anywhere;vertical-align:top}th{background:#f6f6f6}
.damage,.error{color:#d62728}.anomaly{color:#c85f00}.ok{color:#1f77b4}figure{margin:1.5em 0}
svg{width:100%;height:auto;display:block}svg text{font:11px monospace;fill:#333}
"""


def _name(t: Timeline) -> str:
    return f"{t.topic}-{t.partition}" if t.topic else t.path


def _status(t: Timeline) -> str:
    classes = {s.status for s in t.segments} | {f.cls for f in t.findings}
    for cls in (F.ERROR, F.DAMAGE, F.ANOMALY):
        if cls in classes:
            return cls
    return "ok"


def _findings(t: Timeline) -> list:
    out = [(s.file.rsplit("/", 1)[-1], f) for s in t.segments for f in s.findings]
    out += [("", f) for f in t.findings]
    return sorted(out, key=lambda x: _RANK.get(x[1].cls, 3))


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _segment_title(label: str, s: SegmentSpan) -> str:
    lines = [label, f"offsets {s.first_offset}..{s.last_offset}", f"{human(s.bytes)}, {s.records:,} records, "
             f"{s.batches:,} batches", f"{_when(s.first_time)} .. {_when(s.last_time)}"
             + ("" if s.rate is None else f" ({s.rate:,.1f} records/s)"), f"{s.missing:,} offsets missing", s.status]
    lines += [f"{f.kind}: {f.message[:160]}" for f in s.findings[:5]]
    return escape("\n".join(lines))


def chart(t: Timeline, index: int) -> str:
    """One partition's segments against offset, as inline SVG."""
    segs = t.segments[:ROWS]
    placed = [s for s in t.segments if s.first_offset is not None]
    lo = min((s.first_offset for s in placed), default=0)
    hi = max((s.last_offset for s in placed), default=0)
    span = max(hi - lo + 1, 1)
    left, width, row = 230, 760, 16

    def x(offset: int) -> float:
        return left + (offset - lo) * width / span

    parts = []
    for i, s in enumerate(segs):
        y = 20 + i * row
        label = s.file.rsplit("/", 1)[-1].removesuffix(".log")
        parts.append(f'<text x="0" y="{y + 11}">{escape(label)} {escape(human(s.bytes))}</text>')
        if s.first_offset is None:
            continue
        w = max(x(s.last_offset + 1) - x(s.first_offset), 1.5)
        parts.append(f'<rect x="{x(s.first_offset):.1f}" y="{y}" width="{w:.1f}" height="{row - 4}" '
                     f'fill="{COLOR.get(s.status, COLOR["ok"])}"><title>{_segment_title(label, s)}</title></rect>')
        for a, b in s.gaps:
            parts.append(f'<rect x="{x(a):.1f}" y="{y}" width="{max(x(b + 1) - x(a), 1):.1f}" height="{row - 4}" '
                         f'fill="{GAP_COLOR}"><title>offsets {a}..{b} missing</title></rect>')
        for at, f in s.marks[:20]:
            cx, cy = x(at), y + (row - 4) / 2
            parts.append(f'<path d="M{cx - 4:.1f} {cy - 4:.1f}l8 8m0 -8l-8 8" stroke="#000" stroke-width="2">'
                         f'<title>{escape(f.kind)} ({f.cls}): {escape(f.message[:200])}</title></path>')
    height = 20 + len(segs) * row + 24
    axis = (f'<text x="{left}" y="14">{lo}</text><text x="{left + width}" y="14" text-anchor="end">{hi}</text>'
            f'<text x="{left + width / 2}" y="14" text-anchor="middle">offsets</text>')
    more = len(t.segments) - len(segs)
    caption = (f"{escape(_name(t))}: {len(t.segments)} segment{'' if len(t.segments) == 1 else 's'}, "
               f'<span class="{_status(t)}">{_status(t)}</span>'
               + (f" ({more} more segments not drawn)" if more > 0 else ""))
    return (f'<figure id="partition-{index}"><figcaption>{caption}</figcaption>'
            f'<svg viewBox="0 0 1000 {height}" role="img">{axis}{"".join(parts)}</svg></figure>')


def page(timelines: list[Timeline]) -> str:
    """The whole page: overview, problems, charts, every partition."""
    order = sorted(range(len(timelines)), key=lambda i: _RANK.get(_status(timelines[i]), 3))
    bad = [i for i in order if _status(timelines[i]) != "ok"]
    drawn = bad[:CHARTS]
    drawn += [i for i in order if i not in set(bad) and len(timelines[i].segments) > 1][:max(CHARTS - len(drawn), 0)]
    drawn_set = set(drawn)
    counts = {cls: sum(1 for t in timelines if _status(t) == cls) for cls in ("damage", "error", "anomaly")}
    seg_count = sum(len(t.segments) for t in timelines)
    total = sum(s.bytes for t in timelines for s in t.segments)
    out = ["<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kdump timeline</title>"
           f"<style>{_STYLE}</style></head>\n<body>\n<h1>kdump timeline</h1>",
           f'<p id="overview">{len(timelines)} partitions, {seg_count} segments, {escape(human(total))}: '
           f'<span class="damage">{counts["damage"]} damaged</span>, <span class="error">{counts["error"]} '
           f'unreadable</span>, <span class="anomaly">{counts["anomaly"]} with anomalies</span>, '
           f'{len(timelines) - len(bad)} ok.</p>']
    if bad:
        out.append('<h2>Problems first</h2><table id="problems"><tr><th style="width:18%">partition</th>'
                   '<th style="width:22%">file</th><th style="width:14%">finding</th><th>what</th></tr>')
        for i in bad:
            t = timelines[i]
            found = _findings(t)
            link = f'<a href="#partition-{i}">{escape(_name(t))}</a>' if i in drawn_set else escape(_name(t))
            for n, (file, f) in enumerate(found[:FINDINGS]):
                out.append(f'<tr><td>{link if n == 0 else ""}</td><td>{escape(file)}</td>'
                           f'<td class="{f.cls}">{escape(f.kind)}</td><td>{escape(f.message[:300])}</td></tr>')
            if len(found) > FINDINGS:
                out.append(f"<tr><td></td><td></td><td></td><td>{len(found) - FINDINGS} more findings</td></tr>")
        out.append("</table>")
    out.append("<h2>Timelines</h2>")
    out += [chart(timelines[i], i) for i in drawn]
    if len(drawn) < len(timelines):
        out.append(f"<p>{len(timelines) - len(drawn)} partitions are not drawn (healthy, one segment or none, "
                   f"or past the first {CHARTS} charts): each has its row below.</p>")
    out.append('<h2>Every partition</h2><table id="partitions"><tr><th style="width:30%">partition</th>'
               "<th>status</th><th>segments</th><th>bytes</th><th>offsets</th><th>time</th></tr>")
    for i, t in enumerate(timelines):
        placed = [s for s in t.segments if s.first_offset is not None]
        offsets = f"{placed[0].first_offset}..{placed[-1].last_offset}" if placed else "-"
        times = [s for s in t.segments if s.first_time is not None]
        when = f"{_when(min(s.first_time for s in times))} .. {_when(max(s.last_time for s in times))}" if times \
            else "-"
        name = f'<a href="#partition-{i}">{escape(_name(t))}</a>' if i in drawn_set else escape(_name(t))
        status = _status(t)
        out.append(f'<tr><td>{name}</td><td class="{status}">{status}</td><td>{len(t.segments)}</td>'
                   f"<td>{escape(human(sum(s.bytes for s in t.segments)))}</td><td>{offsets}</td><td>{when}</td></tr>")
    out.append("</table>\n</body></html>\n")
    return "\n".join(out)
