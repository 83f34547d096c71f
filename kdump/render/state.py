"""Text and table forms of the state commands' objects (their JSON form is the objects)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kdump.render.escape import printable_obj
from kdump.words import duration, plural

# Every text and table below shows a command's objects through printable_obj: their names
# (group ids, topics, transactional ids, features, hosts) are a client's or a file's.


def emit_json(out, obj) -> None:
    """One object of the state commands' --json, a line."""
    from kdump.export.ndjson import dumps

    out.stream.write(dumps(obj) + "\n")


def when(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _opt(v: Any) -> str:
    return "-" if v is None else str(v)


# -- txn --------------------------------------------------------------------------------------

def txn_id_line(t: dict[str, Any]) -> str:
    t = printable_obj(t)
    parts = ",".join(t["partitions"]) or "-"
    return (f"transactional id {t['transactional_id']}: producer {t['producer_id']} epoch {t['producer_epoch']} "
            f"{t['state']} partitions {parts} timeout {t['timeout_ms']} ms "
            f"(__transaction_state-{t['state_partition']} offset {t['state_offset']}"
            + (", incomplete: possibly stale)" if t.get("possibly_stale") else ")"))


def _log_range(start: int | None, end: int | None) -> str:
    """Offsets as every other command prints them, inclusive, then the log end offset."""
    if start is None or end is None:
        return f"log end offset {_opt(end)}"
    if end <= start:
        return f"no records (log end offset {end})"
    return f"offsets {start}..{end - 1} (log end offset {end})"


def txn_summary(partitions: int, producers: int, committed: int, aborted: int, open_: int, hanging: int) -> str:
    return (f"kdump: txn: {plural(partitions, 'partition')}, {plural(producers, 'producer')}; transactions: "
            f"{committed} committed, {aborted} aborted, {open_} open ({hanging} hanging)")


def txn_partition_text(p: dict[str, Any]) -> str:
    p = printable_obj(p)
    c, a = p["committed"], p["aborted"]
    lines = [f"{p['topic']}-{p['partition']}: {_log_range(p['log_start_offset'], p['log_end_offset'])}, "
             f"last stable offset {_opt(p['last_stable_offset'])}; committed {c['count']} "
             f"({plural(c['records'], 'record')}, "
             f"{plural(c['bytes'], 'byte')}), aborted {a['count']} ({plural(a['records'], 'record')}, "
             f"{plural(a['bytes'], 'byte')})"]
    for d in p["producers"]:
        tid = f" ({d['transactional_id']})" if d["transactional_id"] else ""
        line = (f"  producer {d['producer_id']} epoch {d['producer_epoch']}{tid}: last sequence {d['last_sequence']} "
                f"at offset {d['last_offset']}, coordinator epoch {d['coordinator_epoch']}, "
                f"last write {when(d['last_timestamp'])}")
        o = d.get("open_txn")
        if o:
            line += (f"; open transaction from offset {o['first_offset']} ({plural(o['records'], 'record')}, "
                     f"{plural(o['bytes'], 'byte')}, open for {duration(o['age_ms'])})")
            if d["hanging"]:
                line += " HANGING: " + "; ".join(d["hanging_reasons"])
        lines.append(line)
    for t in p["transactions"]:
        lines.append(f"  {t['outcome'].lower()} producer {t['producer_id']} epoch {t['producer_epoch']}: offsets "
                     f"{t['first_offset']}..{t['last_offset']} ({plural(t['records'], 'record')}, "
                     f"{plural(t['bytes'], 'byte')}) "
                     f"at {when(t['timestamp'])}")
    for f in p["findings"]:
        lines.append(f"  finding {f['kind']} at offset {_opt(f['offset'])}: {f['message']}")
    return "\n".join(lines) + "\n"


def txn_table(console, ids: list[dict[str, Any]], parts: list[dict[str, Any]]) -> None:
    from rich.text import Text

    from kdump.tables import Col, print_table

    ids, parts = printable_obj(ids), printable_obj(parts)
    if ids:
        cols = [Col("transactional id"), Col("producer", "right"), Col("epoch", "right", 2), Col("state"),
                Col("partitions", fold=True), Col("timeout ms", "right", 1)]
        print_table(console, cols, [(i["transactional_id"], str(i["producer_id"]), str(i["producer_epoch"]),
                                     i["state"] + (" (stale?)" if i.get("possibly_stale") else ""),
                                     ", ".join(i["partitions"]) or "-", str(i["timeout_ms"]))
                                    for i in ids], "transactional ids (__transaction_state)")
    rows = []
    for p in parts:
        opens = []
        for d in p["producers"]:
            o = d.get("open_txn")
            if o:
                opens.append(Text(f"{d['producer_id']}@{o['first_offset']}" + (" HANGING" if d["hanging"] else ""),
                                  style="red" if d["hanging"] else ""))
        rows.append((f"{p['topic']}-{p['partition']}", _opt(p["log_end_offset"]), _opt(p["last_stable_offset"]),
                     str(len(p["producers"])), str(p["committed"]["count"]), str(p["aborted"]["count"]),
                     Text("\n").join(opens) if opens else "-",
                     Text(str(len(p["findings"])), style="red" if p["findings"] else "green")))
    cols = [Col("partition"), Col("log end", "right"), Col("LSO", "right"), Col("producers", "right", 3),
            Col("committed", "right", 2), Col("aborted", "right", 1), Col("open transactions"),
            Col("findings", "right")]
    print_table(console, cols, rows, "kdump txn")


# -- groups -----------------------------------------------------------------------------------

def offsets_topic_line(h: dict[str, Any]) -> str:
    h = printable_obj(h)
    n = h["partitions"]
    count = "partition count unknown" if n is None else f"{plural(n, 'partition')} (from {h['partitions_from']})"
    line = f"__consumer_offsets: {count}, {len(h['present'])} here"
    if h.get("incomplete"):
        line += ", incomplete: " + ", ".join(f"__consumer_offsets-{i['partition']}" for i in h["incomplete"])
    if "group_id" in h:
        line += f"; group {h['group_id']} belongs in __consumer_offsets-{h['coordinator_partition']}"
    return line + "\n"


def group_text(g: dict[str, Any]) -> str:
    g = printable_obj(g, keep=("metadata",))         # shown by repr, which escapes its own way
    gen = "epoch" if g["protocol"] != "classic" else "generation"
    lines = [f"group {g['group_id']}: protocol {g['protocol']}"
             + (f" ({g['protocol_type']})" if g["protocol_type"] else "")
             + f" state {g['state']} {gen} {_opt(g['generation'])} assignor {_opt(g['assignor'])} "
               f"(__consumer_offsets-{g['coordinator_partition']}"
             + (", incomplete: possibly stale)" if g.get("possibly_stale") else ")")]
    for m in g["members"]:
        lines.append(f"  member {m['member_id']} client {_opt(m.get('client_id'))} host {_opt(m.get('client_host'))}"
                     f" assigned {','.join(m.get('assignment') or []) or '-'}")
    for o in g["offsets"]:
        lines.append(f"  {o['topic']}-{o['partition']}: offset {o['offset']} log end {_opt(o['log_end_offset'])} "
                     f"lag {_opt(o['lag'])} leader epoch {o['leader_epoch']} committed {when(o['commit_timestamp'])}"
                     f" metadata {o['metadata']!r}" + (" (expired)" if o["expired"] else ""))
    for o in g.get("pending_offsets", ()):
        lines.append(f"  {o['topic']}-{o['partition']}: pending offset {o['offset']} producer {o['producer_id']} "
                     f"epoch {o['producer_epoch']} (uncommitted transaction, record at offset {o['record_offset']}) "
                     f"leader epoch {o['leader_epoch']} commit timestamp {when(o['commit_timestamp'])}"
                     f" metadata {o['metadata']!r}")
    return "\n".join(lines) + "\n"


GROUP_COLUMNS = (("group", "left", 0), ("protocol", "left", 5), ("state", "left", 3), ("gen/epoch", "right", 6),
                 ("members", "right", 4), ("topic-partition", "left", 0), ("committed", "right", 0),
                 ("log end", "right", 1), ("lag", "right", 0), ("commit time (UTC)", "left", 2),
                 ("expired", "left", 7))


def groups_table(console, groups: list[dict[str, Any]]) -> None:
    from kdump.tables import Col, print_table

    groups = printable_obj(groups)
    rows = []
    for g in groups:
        for i, o in enumerate(g["offsets"] or [None]):
            state = g["state"] + (" (stale?)" if g.get("possibly_stale") else "")
            head = (g["group_id"], g["protocol"], state, _opt(g["generation"]), str(len(g["members"]))) \
                if i == 0 else ("", "", "", "", "")
            tail = ("-",) * 6 if o is None else (
                f"{o['topic']}-{o['partition']}", str(o["offset"]), _opt(o["log_end_offset"]), _opt(o["lag"]),
                when(o["commit_timestamp"]), "yes" if o["expired"] else "")
            rows.append((*head, *tail))
    print_table(console, [Col(n, j, d) for n, j, d in GROUP_COLUMNS], rows, "kdump groups")


def pending_table(console, groups: list[dict[str, Any]]) -> None:
    """Offsets committed in transactions not yet ended, apart from the committed ones."""
    from kdump.tables import Col, print_table

    groups = printable_obj(groups)
    rows = [(g["group_id"], f"{o['topic']}-{o['partition']}", str(o["offset"]), str(o["producer_id"]),
             str(o["producer_epoch"]), str(o["record_offset"]), when(o["commit_timestamp"]))
            for g in groups for o in g.get("pending_offsets", ())]
    if rows:
        cols = [Col("group"), Col("topic-partition"), Col("offset", "right"), Col("producer", "right"),
                Col("epoch", "right", 2), Col("record at", "right", 1), Col("commit time (UTC)", drop=3)]
        print_table(console, cols, rows, "pending transactional offsets (not committed)")


# -- metadata ---------------------------------------------------------------------------------

def metadata_text(objs: list[dict[str, Any]]) -> str:
    objs = printable_obj(objs)
    lines = []
    for o in objs:
        kind = o["object"]
        if kind == "metadata":
            if o["last_offset"] is None:
                lines.append("cluster metadata: nothing replayed (no snapshot or log at or before the point)")
            else:
                lines.append(f"cluster metadata: snapshot {_opt(o['snapshot'])}, replayed to offset "
                             f"{o['last_offset']} ({when(o['last_timestamp'])})")
            if o["stopped"]:
                lines.append(f"  replay stopped early: {o['stopped']}")
            lines += [f"  not decoded: {e}" for e in o["errors"]]
        elif kind == "feature":
            lines.append(f"feature {o['name']}={o['level']}")
        elif kind in ("broker", "controller"):
            ident = o.get("broker_id", o.get("controller_id"))
            extra = (f" epoch {o['broker_epoch']} fenced {str(o['fenced']).lower()} "
                     f"in_controlled_shutdown {str(o['in_controlled_shutdown']).lower()} rack {_opt(o['rack'])}"
                     if kind == "broker" else "")
            lines.append(f"{kind} {ident}: {' '.join(o['endpoints']) or '-'}{extra}")
        elif kind == "topic":
            lines.append(f"topic {o['name']} id {o['topic_id']} partitions {len(o['partitions'])}")
            for p in o["partitions"]:
                lines.append(f"  partition {p['partition']} leader {p['leader']} leader epoch {p['leader_epoch']} "
                             f"replicas {p['replicas']} isr {p['isr']}")
        elif kind == "config":
            lines.append(f"config {o['resource_type']} {o['resource_name'] or '<default>'}: "
                         + " ".join(f"{k}={v}" for k, v in sorted(o["configs"].items())))
        elif kind == "change":
            lines.append(f"{o['change']} {o['path']}: {_opt(o.get('before'))} -> {_opt(o.get('after'))}")
        else:
            rest = {k: v for k, v in o.items() if k != "object"}
            lines.append(f"{kind} " + " ".join(f"{k}={v}" for k, v in rest.items()))
    return "\n".join(lines) + "\n"


def metadata_table(console, objs: list[dict[str, Any]]) -> None:
    from kdump.tables import Col, print_table

    objs = printable_obj(objs)
    rows = []
    for o in (o for o in objs if o["object"] == "topic"):
        for i, p in enumerate(o["partitions"] or [None]):
            head = (o["name"], o["topic_id"]) if i == 0 else ("", "")
            rows.append((*head, *(("-",) * 5 if p is None else (
                str(p["partition"]), str(p["leader"]), str(p["leader_epoch"]),
                ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"]))))))
    rest = [o for o in objs if o["object"] != "topic"]
    console.print(metadata_text(rest), end="", soft_wrap=True)
    cols = [Col("topic"), Col("topic id", drop=1), Col("partition", "right"), Col("leader", "right"),
            Col("leader epoch", "right", 2), Col("replicas", fold=True), Col("isr", fold=True)]
    print_table(console, cols, rows, "kdump metadata: topics")
