"""``kdump info --timeline --html FILE``: the timeline as a self-contained page, drawn by
plotly (its Python package embeds plotly.js in the page: it opens with no network).

One figure per partition, three rows sharing the segments' names: the segments against
offset (grey where offsets are missing, a cross where a finding lies: red damage, orange
anomaly), against time (the label gives the record rate), and their sizes.
"""

from __future__ import annotations

import datetime as dt
import html

from kdump import findings as F
from kdump.errors import KdumpError
from kdump.render.timeline import human
from kdump.survey.timeline import Timeline

COLOR = {"ok": "#1f77b4", "anomaly": "#ff7f0e", "damage": "#d62728", "error": "#d62728"}
GAP_COLOR = "#c7c7c7"


def _plotly():
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise KdumpError("--html needs plotly: pip install 'kafka-kdump[timeline]' (or '.[timeline]' in a clone)",
                         hint=None) from None
    return go, make_subplots


def _time(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def figure(t: Timeline):
    go, make_subplots = _plotly()
    name = f"{t.topic}-{t.partition}" if t.topic else t.path
    segs = [s for s in t.segments]
    labels = [s.file.rsplit("/", 1)[-1].removesuffix(".log") for s in segs]
    fig = make_subplots(rows=3, cols=1, vertical_spacing=0.12,
                        subplot_titles=("segments by offset", "segments by time (label: records per second)",
                                        "segment sizes"))
    hover = [f"{label}<br>offsets {s.first_offset}..{s.last_offset}<br>{human(s.bytes)}, {s.records:,} records, "
             f"{s.batches:,} batches<br>{s.missing:,} offsets missing<br>{s.status}"
             + "".join(f"<br>{html.escape(f.kind)}: {html.escape(f.message[:120])}" for f in s.findings[:5])
             for label, s in zip(labels, segs)]
    placed = [(label, s, h) for label, s, h in zip(labels, segs, hover) if s.first_offset is not None]
    fig.add_trace(go.Bar(
        name="segment", orientation="h", y=[p[0] for p in placed], base=[p[1].first_offset for p in placed],
        x=[p[1].last_offset - p[1].first_offset + 1 for p in placed], hovertext=[p[2] for p in placed],
        hoverinfo="text", marker_color=[COLOR[p[1].status] for p in placed], showlegend=False), row=1, col=1)
    gaps = [(label, g) for label, s in zip(labels, segs) for g in s.gaps]
    gaps += [("(missing)", g) for g in t.between]
    if gaps:
        fig.add_trace(go.Bar(
            name="offsets missing", orientation="h", y=[g[0] for g in gaps], base=[g[1][0] for g in gaps],
            x=[g[1][1] - g[1][0] + 1 for g in gaps], marker_color=GAP_COLOR,
            hovertext=[f"offsets {a}..{b} missing ({b - a + 1:,})" for _, (a, b) in gaps], hoverinfo="text"),
            row=1, col=1)
    marks = [(label, at, f) for label, s in zip(labels, segs) for at, f in s.marks]
    if marks:
        fig.add_trace(go.Scatter(
            name="findings", mode="markers", y=[m[0] for m in marks], x=[m[1] for m in marks],
            marker={"symbol": "x", "size": 12, "color": ["#ff7f0e" if m[2].cls == F.ANOMALY else "#d62728"
                                                         for m in marks]},
            hovertext=[f"{html.escape(m[2].kind)} ({m[2].cls}): {html.escape(m[2].message[:200])}" for m in marks],
            hoverinfo="text"), row=1, col=1)
    timed = [(label, s) for label, s in zip(labels, segs) if s.first_time is not None]
    if timed:
        fig.add_trace(go.Bar(
            name="time", orientation="h", y=[p[0] for p in timed], base=[_time(p[1].first_time) for p in timed],
            x=[max(p[1].last_time - p[1].first_time, 1) for p in timed],
            text=["-" if p[1].rate is None else f"{p[1].rate:,.1f}/s" for p in timed], textposition="auto",
            marker_color=[COLOR[p[1].status] for p in timed], showlegend=False,
            hovertext=[f"{p[0]}<br>{_time(p[1].first_time):%Y-%m-%d %H:%M:%S.%f}"[:-3] for p in timed],
            hoverinfo="text"), row=2, col=1)
        fig.update_xaxes(type="date", row=2, col=1)
    fig.add_trace(go.Bar(name="bytes", x=labels, y=[s.bytes for s in segs], text=[human(s.bytes) for s in segs],
                         marker_color=[COLOR[s.status] for s in segs], showlegend=False), row=3, col=1)
    fig.update_yaxes(title_text="bytes", row=3, col=1)
    fig.update_layout(title=f"{name}: {len(segs)} segment{'' if len(segs) == 1 else 's'}", barmode="overlay",
                      height=520 + 40 * len(segs),
                      template="plotly_white", legend={"orientation": "h"})
    return fig


def page(timelines: list[Timeline]) -> str:
    """The whole page: plotly.js once, inline, then a figure per partition."""
    _plotly()
    parts = [figure(t).to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"partition-{i}")
             for i, t in enumerate(timelines)]
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kdump timeline</title></head>\n<body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
