"""Figures put in words for people: plurals, sizes, durations, rates (the human views only;
--json keeps the exact numbers). Imports nothing, so every floor can use it."""

from __future__ import annotations

_IRREGULAR = {"entry": "entries", "anomaly": "anomalies", "index": "indexes", "was": "were"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 batch``, ``2 batches``, ``1 entry``, ``0 entries``."""
    return f"{n} {word if n == 1 else (many or plural_of(word))}"


def plural_of(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))


def size(n: int) -> str:
    """A byte count people read at a glance: ``540 bytes``, ``548.9 kB``, ``1.26 GB`` (decimal
    units, as the progress bar's)."""
    for limit, unit in _UNITS:
        if abs(n) >= limit:
            v = n / limit
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return plural(n, "byte")


def duration(ms: int) -> str:
    """``950 ms``, ``42 s``, ``3 min 20 s``, ``5 h 12 min``, ``1108 days 9 h``."""
    if ms < 1000:
        return f"{ms} ms"
    s = ms // 1000
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s} s" if s else f"{m} min"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(h, 24)
    return f"{plural(d, 'day')} {h} h" if h else plural(d, "day")


def rate(count: int, seconds: float, unit: str) -> str:
    """``in 12.3 s (45,678 rows/s)``; a run under a second gets no rate (it would measure
    start-up, not throughput)."""
    if seconds < 1:
        return f"in {seconds:.1f} s"
    return f"in {seconds:.1f} s ({count / seconds:,.0f} {unit}/s)"


# Characters no line for people carries raw, and how each is shown: the C0 controls, DEL and
# the C1 controls (U+009B is a one-character CSI, U+0085 a line break) as \xNN (as Python's
# backslashreplace shows the bytes of a name that is not UTF-8); as \uNNNN the line and
# paragraph separators, which some terminals and editors break lines at, the bidi controls,
# which reorder what follows them on screen (a name shown as another), and the zero-width
# characters, which hide in a name (two names that look alike). The one table of them:
# render/escape.py (names, messages) and decoders/views.py (the text view of keys, values and
# header keys, and its C twin in _speedups/javautf8.c) show these.
BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
ZERO_WIDTH = (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)
CONTROL_ESCAPES: dict[int, str] = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
CONTROL_ESCAPES.update({c: f"\\u{c:04x}" for c in (0x2028, 0x2029, *BIDI_CONTROLS, *ZERO_WIDTH)})


def utc_text(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC to the millisecond (2026-11-24T01:56:37.530Z)."""
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)
