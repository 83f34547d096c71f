"""JSON Schema payloads: the JSON after the frame, and (``verify --schemas``, or when asked)
checked against its schema with the jsonschema library, references resolved from the store."""

from __future__ import annotations

import json
from typing import Any

from kdump.errors import DecodeError
from kdump.schemas.store import Schema, SchemaStore


class Parsed:
    def __init__(self, schema: Any, resources: dict[str, Any]) -> None:
        self.schema = schema
        self.resources = resources
        self._validator = None

    def validate(self, value: Any) -> None:
        if self._validator is None:
            try:
                import jsonschema
                from referencing import Registry, Resource
            except ImportError as e:
                raise DecodeError(f"validating needs kdump's schemas extra: {e}") from None
            registry = Registry().with_resources(
                (name, Resource.from_contents(doc, default_specification=_draft7())) for name, doc in
                self.resources.items())
            try:
                cls = jsonschema.validators.validator_for(self.schema)
                cls.check_schema(self.schema)
                self._validator = cls(self.schema, registry=registry)
            except jsonschema.SchemaError as e:
                raise DecodeError(f"the JSON schema is not valid: {e.message}") from None
        from jsonschema.exceptions import best_match

        err = best_match(self._validator.iter_errors(value))       # the most telling of them, every time
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "the top level"
            raise DecodeError(f"does not match its JSON schema at {where}: {err.message[:200]}")


def _draft7():
    from referencing.jsonschema import DRAFT7

    return DRAFT7


def parse(s: Schema, store: SchemaStore) -> Parsed:
    resources: dict[str, Any] = {}

    def load(schema: Schema) -> Any:
        try:
            return json.loads(schema.text)
        except (ValueError, RecursionError) as e:
            raise DecodeError(f"schema {schema.id} does not parse: {e}") from None

    for ref, target in store.references_of(s, s.id):
        resources[ref.name] = load(target)
    return Parsed(load(s), resources)


def decode(p: Parsed | None, data: bytes, pos: int, validate: bool = False) -> Any:
    try:
        value = json.loads(memoryview(data)[pos:].tobytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise DecodeError(f"the payload after byte {pos} is not JSON: {e}") from None
    except RecursionError:
        raise DecodeError("the JSON payload is nested too deeply") from None
    if validate and p is not None:
        p.validate(value)
    return value
