"""``kdump groups``' run: __consumer_offsets replayed, its groups printed."""

from __future__ import annotations

from kdump.errors import ExitStatus
from kdump.render.diagnostics import record_findings, say
from kdump.render.escape import printable
from kdump.render.state import emit_json, group_text, groups_table, offsets_topic_line, pending_table
from kdump.state.groups import group_objects


def run_groups(paths, out, *, group_id: str | None, partitions: int | None, at_ms: int | None, now_ms: int,
               retention_ms: int, strict: bool) -> int:
    header, notes, found, skipped = group_objects(paths, group_id=group_id, partitions=partitions, at_ms=at_ms,
                                                  now_ms=now_ms, retention_ms=retention_ms)
    for n in notes:
        out.note(f"kdump: note: {n}")
    if out.format == "json":
        emit_json(out, header)
        for g in found:
            emit_json(out, g)
    elif out.format == "text":
        out.stream.write(offsets_topic_line(header))
        for g in found:
            out.stream.write(group_text(g))
    else:
        out.stream.write(offsets_topic_line(header))
        groups_table(out.console(), found)
        pending_table(out.console(), found)
    status = record_findings(out, skipped)
    for stop in header["stopped"]:
        out.note(f"kdump: note: read stopped early: {stop}")
    if group_id is not None and not found:
        # Asked for one group and it is not there: say so (a hash says where it would be, not that it is).
        say(printable(f"kdump: group {group_id} not found (it would be in "
                      f"__consumer_offsets-{header['coordinator_partition']})"))
        return int(ExitStatus.DAMAGE)
    damaged = header["stopped"] or (strict and header["incomplete"])
    return int(max(status, ExitStatus.DAMAGE if damaged else ExitStatus.OK))
