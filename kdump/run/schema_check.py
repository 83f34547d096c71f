"""``verify --schemas``: after the segments' own check, every Schema Registry record decoded
under its schema, and the schema store checked; one report per segment with findings (text
line, table row or JSON object, as verify's), exit 1 for damage."""

from __future__ import annotations

import json

from kdump import findings
from kdump.errors import ExitStatus
from kdump.model import Finding


def run_schema_check(paths, out, store, strict: bool = False, store_path: str | None = None) -> int:
    from kdump.schemas.check import segment_findings, store_findings
    from kdump.schemas.decoder import SchemaDecoder
    from kdump.storage.levels import expand

    decoder = SchemaDecoder("auto", store, validate=True)
    reports: list[tuple[str, list[Finding]]] = []
    found = store_findings(store, decoder)
    if found:
        reports.append((store_path or "schema store", found))
    checked = 0
    for path in paths:
        for f in sorted(expand(path), key=lambda f: (f.path.rsplit("/", 1)[0], f.base_offset or 0)):
            if f.kind != "log" or f.leftover is not None:
                continue
            checked += 1
            found = segment_findings(f, decoder)
            if found:
                reports.append((f.path, found))
    status = ExitStatus.OK
    n = 0
    for file, items in reports:
        n += len(items)
        if any(findings.is_damage(x.kind) for x in items) or (strict and items):
            status = ExitStatus.DAMAGE
        if out.format == "json":
            out.stream.write(json.dumps({"object": "file", "file": file, "kind": "schemas",
                                         "findings": [x.to_dict() for x in items]}, ensure_ascii=False) + "\n")
        else:
            for x in items:
                where = f"byte {x.position} " if x.position is not None else ""
                at = f"offset {x.offset}" if x.offset is not None else ""
                out.stream.write(f"{file}: {x.kind} at {where}{at}: {x.message}\n".replace(" at : ", ": "))
    out.note(f"kdump: schemas: {checked} segments checked against {len(store)} schema ids: "
             f"{n} finding{'s' if n != 1 else ''}")
    return int(status)
