"""``kdump metadata``'s run: the cluster image (or two, and their difference) loaded from
__cluster_metadata and printed."""

from __future__ import annotations

from kdump.errors import ExitStatus
from kdump.render.diagnostics import record_findings, say
from kdump.render.escape import printable
from kdump.render.state import emit_json, metadata_table, metadata_text
from kdump.state.cluster_image import Point, load, short_of
from kdump.state.image_objects import diff as diff_images
from kdump.state.image_objects import objects
from kdump.state.source import LogDirs


def run_metadata(paths, out, *, at: str | None, point: Point, diff: tuple[str, str] | None,
                 points: tuple[Point, Point] | None, strict: bool) -> int:
    """The image at ``point`` (``at`` as the user wrote it), or with ``diff`` the change between
    ``points``."""
    dirs = LogDirs(paths)
    for n in dirs.notes:
        out.note(f"kdump: note: {n}")
    if diff:
        a, b = load(dirs, points[0]), load(dirs, points[1])
        objs = [{"object": "metadata", "from": a.to_dict(), "to": b.to_dict()}] + diff_images(a, b)
        _incomplete_notes(out, a, b)
        damaged = _damaged(a, strict) or _damaged(b, strict)
        if out.format == "json":
            for o in objs:
                emit_json(out, o)
        else:
            out.stream.write(f"from offset {a.last_offset} ({a.to_dict()['snapshot'] or 'no snapshot'}) "
                             f"to offset {b.last_offset}\n" + metadata_text(objs[1:]))
        found = record_findings(out, dict.fromkeys(a.findings + b.findings))
        shorts = [(v, m) for v, img, p in zip(diff, (a, b), points) if (m := short_of(img, p)) is not None]
        for value, message in shorts:
            say(printable(f"kdump: error: --diff {value}: {message}"))
        if shorts:
            return int(ExitStatus.INCOMPLETE)
        return int(max(found, ExitStatus.DAMAGE if damaged else ExitStatus.OK))
    img = load(dirs, point)
    _incomplete_notes(out, img)
    short = short_of(img, point)
    objs = objects(img)
    if out.format == "json":
        for o in objs:
            emit_json(out, o)
    elif out.format == "text":
        out.stream.write(metadata_text(objs))
    else:
        metadata_table(out.console(), objs)
    found = record_findings(out, img.findings)
    if short is not None:
        # The image shown is the nearest one here, not the one asked for: say so, and fail.
        say(printable(f"kdump: error: --at {at}: {short}"))
        return int(ExitStatus.INCOMPLETE)
    return int(max(found, ExitStatus.DAMAGE if _damaged(img, strict) else ExitStatus.OK))


def _damaged(img, strict: bool) -> bool:
    """A replay stopped early, a record that did not decode (or a snapshot not used), or with
    --strict records missing: the image shown is not all the log holds."""
    return bool(img.stop or img.errors or (strict and img.incomplete))


def _incomplete_notes(out, *images) -> None:
    for why in dict.fromkeys(w for img in images for w in img.incomplete):
        out.note(f"kdump: note: incomplete: {why}")
