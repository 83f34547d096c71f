"""``kdump txn``'s run: producer state replayed per partition, printed as it comes."""

from __future__ import annotations

from kdump.errors import ExitStatus
from kdump.findings import classes_status
from kdump.render.state import emit_json, txn_id_line, txn_partition_text, txn_table
from kdump.state.txn import txn_objects


def run_txn(paths, out, *, now_ms: int, hanging_after_ms: int, transactional_id: str | None,
            producer_id: int | None, strict: bool) -> int:
    incomplete, ids, notes, partitions = txn_objects(paths, now_ms=now_ms, hanging_after_ms=hanging_after_ms,
                                                     transactional_id=transactional_id, producer_id=producer_id)
    for n in notes:
        out.note(f"kdump: note: {n}")
    status = ExitStatus.DAMAGE if strict and incomplete else ExitStatus.OK
    rows = []
    if out.format == "json":
        for i in incomplete + ids:
            emit_json(out, i)
    elif out.format == "text":
        for i in ids:
            out.stream.write(txn_id_line(i) + "\n")
    for p in partitions:
        status = max(status, classes_status((f["class"] for f in p["findings"]), strict))
        if out.format == "json":
            emit_json(out, p)
        elif out.format == "text":
            out.stream.write(txn_partition_text(p))
        else:
            rows.append(p)
    if out.format == "table":
        txn_table(out.console(), ids, rows)
    return int(status)
