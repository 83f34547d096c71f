"""How ``--remote-storage``'s findings (verify) and segments (info) look: a line each, or JSON."""

from __future__ import annotations

import json

from kdump.check.tiered import TieredPartition
from kdump.errors import ExitStatus
from kdump.findings import ANOMALY, DAMAGE, ERROR


def report(parts: list[TieredPartition], out, strict: bool = False) -> ExitStatus:
    """verify's lines for the tiered findings; the exit status they call for."""
    status = ExitStatus.OK
    for t in parts:
        for loc in t.findings:
            f = loc.finding
            if f.cls == DAMAGE or (strict and f.cls == ANOMALY):
                status = max(status, ExitStatus.DAMAGE)
            elif f.cls == ERROR:    # a side file that could not be read back, as verify's unreadable
                status = max(status, ExitStatus.INCOMPLETE)
            if out.format == "json":
                row = {"object": "finding", "file": loc.path, "topic": t.topic, "partition": t.partition, **f.to_dict()}
                out.stream.write(json.dumps(row) + "\n")
            else:
                out.stream.write(f"{loc.path}: {f.kind} ({f.cls}): {f.message}\n")
        if out.format != "json" and not out.quiet:
            n = sum(1 for loc in t.findings if loc.finding.cls in (DAMAGE, ANOMALY, ERROR))
            out.note(f"kdump: {t.topic}-{t.partition}: {len(t.remote)} live remote segments, "
                     f"{len(t.local)} local{_both(t)}; {n} tiered problem{'s' if n != 1 else ''}")
    return status


def _both(t: TieredPartition) -> str:
    both = t.both_tiers()
    return "" if both is None else f" (offsets {both[0]}..{both[1]} in both: read from the local log)"


def timeline(parts: list[TieredPartition], out) -> None:
    """info's lines: the segments a fetch reads, remote and local, in offset order, each
    offset once (a remote segment the local log serves in part shows the part it serves)."""
    for t in parts:
        locals_ = {f.path for f in t.local}
        reads = t.reads()
        for i, (f, end) in enumerate(reads):
            where, start, path = ("local" if f.path in locals_ else "remote"), f.base_offset, f.path
            if end is None and i + 1 < len(reads) and reads[i + 1][0].base_offset is not None:
                end = reads[i + 1][0].base_offset - 1       # a local segment ends where the next starts
            if out.format == "json":
                out.stream.write(json.dumps({"object": "segment", "topic": t.topic, "partition": t.partition,
                                             "tier": where, "base_offset": start, "end_offset": end,
                                             "file": path}) + "\n")
            else:
                span = f"{start}..{end}" if end is not None else f"{start}.."
                out.stream.write(f"{t.topic}-{t.partition}  {where:<6}  {span:<24}  {path}\n")
        if out.format != "json" and not out.quiet and t.both_tiers() is not None:
            out.note(f"kdump: {t.topic}-{t.partition}:{_both(t)}")
