"""``kdump txn``'s run: producer state replayed per partition, printed as it comes."""

from __future__ import annotations

from kdump.errors import ExitStatus
from kdump.findings import classes_status
from kdump.render.diagnostics import record_findings
from kdump.render.state import emit_json, txn_id_line, txn_partition_text, txn_summary, txn_table
from kdump.state.txn import ONGOING_STATES, only_open, txn_objects


def run_txn(paths, out, *, now_ms: int, hanging_after_ms: int, transactional_id: str | None,
            producer_id: int | None, strict: bool, open_only: bool = False) -> int:
    incomplete, ids, notes, partitions, skipped = txn_objects(
        paths, now_ms=now_ms, hanging_after_ms=hanging_after_ms, transactional_id=transactional_id,
        producer_id=producer_id)
    if open_only:
        ids = [i for i in ids if i["state"] in ONGOING_STATES]
    for n in notes:
        out.note(f"kdump: note: {n}")
    status = max(ExitStatus.DAMAGE if strict and incomplete else ExitStatus.OK, record_findings(out, skipped))
    rows = []
    if out.format == "json":
        for i in incomplete + ids:
            emit_json(out, i)
    elif out.format == "text":
        for i in ids:
            out.stream.write(txn_id_line(i) + "\n")
    seen = [0, 0, 0, 0, 0, 0]     # partitions, producers, committed, aborted, open, hanging
    for p in partitions:
        if open_only:
            p = only_open(p)
            if p is None:
                continue
        opened = [d for d in p["producers"] if d.get("open_txn")]
        for i, n in enumerate((1, len(p["producers"]), p["committed"]["count"], p["aborted"]["count"], len(opened),
                               sum(bool(d["hanging"]) for d in opened))):
            seen[i] += n
        status = max(status, classes_status((f["class"] for f in p["findings"]), strict))
        if out.format == "json":
            emit_json(out, p)
        elif out.format == "text":
            out.stream.write(txn_partition_text(p))
        else:
            rows.append(p)
    if out.format == "table":
        txn_table(out.console(), ids, rows)
    if out.format != "json":
        out.note(txn_summary(*seen))
    return int(status)

