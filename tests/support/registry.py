"""A small Schema Registry: Confluent's REST API on 127.0.0.1, its state kept as Schema
Registry keeps it, in ``_schemas`` records.

``fixtures/schemas/generate.py`` runs it for confluent-kafka's serializers and produces each
record it writes to a real broker's ``_schemas`` topic (``sink``); the live-registry tests
start it from those records (``Registry.from_records``). What it stores follows Schema
Registry: a global id per distinct schema, versions per subject, soft deletes rewrite the
version with ``deleted: true`` after a DELETE_SUBJECT record, hard deletes are tombstones, and
a Protobuf schema sent as a base64 descriptor (as confluent-kafka's Python serializer sends
it) is stored as .proto text (``proto_text``). It does not check compatibility.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Record = tuple[bytes, bytes | None]


def _j(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Registry:
    def __init__(self, sink: Callable[[bytes, bytes | None], None] | None = None) -> None:
        self.sink = sink or (lambda k, v: None)
        self.lock = threading.Lock()
        self.schemas: dict[int, dict] = {}                   # id -> {schema, schemaType, references, b64}
        self.subjects: dict[str, dict[int, dict]] = {}       # subject -> version -> value
        self.config: dict[str | None, str] = {}
        self.records: list[Record] = []

    # -- state changes, each one written as Schema Registry writes it ----------------------------

    def _emit(self, key: dict, value: dict | None) -> None:
        k, v = _j(key), None if value is None else _j(value)
        self.records.append((k, v))
        self.sink(k, v)

    def noop(self) -> None:
        self._emit({"keytype": "NOOP", "magic": 0}, None)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO", refs: list | None = None) -> dict:
        refs = refs or []
        b64 = None
        if schema_type == "PROTOBUF" and not schema.lstrip().startswith(("syntax", "package", "import", "message",
                                                                           "//", "option", "enum")):
            b64 = schema
            schema = proto_text(base64.b64decode(schema))
        elif schema_type == "AVRO":
            schema = json.dumps(json.loads(schema), separators=(",", ":"))
        with self.lock:
            versions = self.subjects.setdefault(subject, {})
            for v in versions.values():
                if not v.get("deleted") and v["schema"] == schema and v.get("references", []) == refs:
                    return v
            sid = next((i for i, s in self.schemas.items() if s["schema"] == schema
                        and s["schemaType"] == schema_type and s["references"] == refs), None)
            if sid is None:
                sid = max(self.schemas, default=0) + 1
                self.schemas[sid] = {"schema": schema, "schemaType": schema_type, "references": refs, "b64": b64}
            version = max(versions, default=0) + 1
            value = {"subject": subject, "version": version, "id": sid, "schema": schema, "deleted": False}
            if schema_type != "AVRO":
                value["schemaType"] = schema_type
            if refs:
                value["references"] = refs
            versions[version] = value
            self._emit({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}, value)
            return value

    def set_config(self, subject: str | None, level: str) -> None:
        with self.lock:
            self.config[subject] = level
            self._emit({"keytype": "CONFIG", "subject": subject, "magic": 0}, {"compatibilityLevel": level})

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        with self.lock:
            versions = self.subjects.get(subject, {})
            if permanent:
                gone = sorted(versions)
                for n in gone:
                    self._emit({"keytype": "SCHEMA", "subject": subject, "version": n, "magic": 1}, None)
                self.subjects.pop(subject, None)
                return gone
            live = sorted(n for n, v in versions.items() if not v.get("deleted"))
            self._emit({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0},
                       {"subject": subject, "version": max(live)})
            for n in live:
                versions[n] = {**versions[n], "deleted": True}
                self._emit({"keytype": "SCHEMA", "subject": subject, "version": n, "magic": 1}, versions[n])
            return live

    @classmethod
    def from_records(cls, records: list[Record]) -> Registry:
        """A registry in the state these ``_schemas`` records leave (the last value of each key)."""
        reg = cls()
        for k, v in records:
            key = json.loads(k)
            if key["keytype"] == "SCHEMA":
                subject, version = key["subject"], key["version"]
                if v is None:
                    reg.subjects.get(subject, {}).pop(version, None)
                    continue
                value = json.loads(v)
                reg.subjects.setdefault(subject, {})[version] = value
                reg.schemas.setdefault(value["id"], {"schema": value["schema"],
                                                      "schemaType": value.get("schemaType", "AVRO"),
                                                      "references": value.get("references", []), "b64": None})
            elif key["keytype"] == "CONFIG" and v is not None:
                reg.config[key.get("subject")] = json.loads(v)["compatibilityLevel"]
        return reg

    # -- HTTP ------------------------------------------------------------------------------------

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        """Start serving on a free 127.0.0.1 port in a thread: (server, base URL)."""
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, code: int, body: Any) -> None:
                data = _j(body)
                self.send_response(code)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                url = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(url.query))
                parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
                body = None
                if method in ("POST", "PUT"):
                    n = int(self.headers.get("Content-Length") or 0)
                    body = json.loads(self.rfile.read(n) or b"{}")
                try:
                    code, out = registry.handle(method, parts, q, body)
                except KeyError:
                    code, out = 404, {"error_code": 40403, "message": "Not found"}
                self._reply(code, out)

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

            def do_PUT(self):
                self._route("PUT")

            def do_DELETE(self):
                self._route("DELETE")

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}"

    def _version(self, subject: str, version: str, deleted: bool) -> dict:
        versions = self.subjects[subject]
        live = {n: v for n, v in versions.items() if deleted or not v.get("deleted")}
        n = max(live) if version in ("latest", "-1") else int(version)
        return self._full(live[n])

    def _full(self, v: dict) -> dict:
        out = {"subject": v["subject"], "version": v["version"], "id": v["id"], "schema": v["schema"],
               "schemaType": v.get("schemaType", "AVRO")}
        if v.get("references"):
            out["references"] = v["references"]
        return out

    def handle(self, method: str, parts: list[str], q: dict, body: Any) -> tuple[int, Any]:
        deleted = q.get("deleted") == "true"
        if parts[0] == "schemas" and parts[1] == "ids":
            s = self.schemas[int(parts[2])]
            if len(parts) > 3 and parts[3] == "versions":
                return 200, [{"subject": v["subject"], "version": v["version"]} for vs in self.subjects.values()
                             for v in vs.values() if v["id"] == int(parts[2])]
            text = s["b64"] if q.get("format") == "serialized" and s["b64"] else s["schema"]
            out = {"schema": text, "schemaType": s["schemaType"]}
            if s["references"]:
                out["references"] = s["references"]
            return 200, out
        if parts[0] == "subjects":
            if len(parts) == 1:
                return 200, sorted(s for s, vs in self.subjects.items()
                                   if vs and (deleted or any(not v.get("deleted") for v in vs.values())))
            subject = parts[1]
            if method == "POST" and len(parts) == 3:
                v = self.register(subject, body["schema"], body.get("schemaType", "AVRO"), body.get("references"))
                return 200, self._full(v)
            if method == "POST" and len(parts) == 2:        # lookup
                want = self._lookup_text(body)
                for v in self.subjects[subject].values():
                    if v["schema"] == want and not v.get("deleted"):
                        return 200, self._full(v)
                return 404, {"error_code": 40403, "message": "Schema not found"}
            if method == "DELETE" and len(parts) == 2:
                return 200, self.delete_subject(subject, q.get("permanent") == "true")
            if len(parts) == 3:
                return 200, sorted(n for n, v in self.subjects[subject].items() if deleted or not v.get("deleted"))
            return 200, self._version(subject, parts[3], deleted)
        if parts[0] == "config":
            subject = parts[1] if len(parts) > 1 else None
            if method == "PUT":
                self.set_config(subject, body["compatibility"])
                return 200, {"compatibility": body["compatibility"]}
            level = self.config.get(subject) if subject else self.config.get(None, "BACKWARD")
            if level is None:
                return 404, {"error_code": 40408, "message": "Subject does not have subject-level compatibility"}
            return 200, {"compatibilityLevel": level}
        raise KeyError(parts[0])

    def _lookup_text(self, body: dict) -> str:
        text = body["schema"]
        if body.get("schemaType") == "PROTOBUF" and not text.lstrip().startswith(("syntax", "package")):
            return proto_text(base64.b64decode(text))
        if body.get("schemaType", "AVRO") == "AVRO":
            return json.dumps(json.loads(text), separators=(",", ":"))
        return text


# -- a FileDescriptorProto as .proto text (what Schema Registry stores for Protobuf) -------------

_SCALARS = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32", 8: "bool",
            9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}


def proto_text(serialized: bytes) -> str:
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto.FromString(serialized)
    out = [f'syntax = "{fd.syntax or "proto2"}";']
    if fd.package:
        out.append(f"package {fd.package};")
    out += [f'import "{dep}";' for dep in fd.dependency]
    for m in fd.message_type:
        out += _message(m, "")
    for e in fd.enum_type:
        out += _enum(e, "")
    return "\n".join(out) + "\n"


def _type(f) -> str:
    return f.type_name if f.type in (11, 14) else _SCALARS[f.type]


def _message(m, ind: str) -> list[str]:
    entries = {n.name: n for n in m.nested_type if n.options.map_entry}
    out = [f"{ind}message {m.name} {{"]
    oneofs: dict[int, list] = {}
    for f in m.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            oneofs.setdefault(f.oneof_index, []).append(f)
            continue
        entry = entries.get(f.type_name.rsplit(".", 1)[-1]) if f.type == 11 else None
        if entry is not None and f.label == 3:
            k, v = entry.field[0], entry.field[1]
            out.append(f"{ind}  map<{_type(k)}, {_type(v)}> {f.name} = {f.number};")
            continue
        label = "repeated " if f.label == 3 else "optional " if f.proto3_optional else ""
        out.append(f"{ind}  {label}{_type(f)} {f.name} = {f.number};")
    for i, fields in sorted(oneofs.items()):
        out.append(f"{ind}  oneof {m.oneof_decl[i].name} {{")
        out += [f"{ind}    {_type(f)} {f.name} = {f.number};" for f in fields]
        out.append(f"{ind}  }}")
    for n in m.nested_type:
        if not n.options.map_entry:
            out += _message(n, ind + "  ")
    for e in m.enum_type:
        out += _enum(e, ind + "  ")
    out.append(f"{ind}}}")
    return out


def _enum(e, ind: str) -> list[str]:
    return [f"{ind}enum {e.name} {{", *(f"{ind}  {v.name} = {v.number};" for v in e.value), f"{ind}}}"]

