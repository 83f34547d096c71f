"""JSON Schema payloads: the JSON after the frame, and (``verify --schemas``, or when asked)
checked against its schema with the jsonschema library, references resolved from the store."""

from __future__ import annotations

import json
import sys
from typing import Any

from kdump.errors import DecodeError
from kdump.schemas import budget
from kdump.schemas.budget import BudgetError
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
            registry = Registry(retrieve=_refuse).with_resources(
                (name, Resource.from_contents(doc, default_specification=_draft7())) for name, doc in
                self.resources.items())
            try:
                cls = _bounded(jsonschema.validators.validator_for(self.schema))
                cls.check_schema(self.schema)
                self._validator = cls(self.schema, registry=registry)
            except jsonschema.SchemaError as e:
                raise DecodeError(f"the JSON schema is not valid: {e.message}") from None
            except RecursionError:
                raise BudgetError("depth", "the JSON schema nests too deeply to check") from None
        from jsonschema.exceptions import best_match
        from referencing.exceptions import Unresolvable

        _Clock.left = budget.REGEX_TIMEOUT * 2
        try:
            err = best_match(self._validator.iter_errors(value))       # the most telling of them, every time
        except RecursionError:
            raise BudgetError("depth", f"the JSON schema's $ref chain or the value nests more than "
                                       f"{sys.getrecursionlimit()} frames deep (a $ref loop?)") from None
        except Unresolvable as e:
            raise _ref_error(e) from None
        except Exception as e:
            cause = e.__cause__ if isinstance(e.__cause__, Unresolvable) else None
            if cause is None and type(e).__name__ != "_WrappedReferencingError":
                raise
            raise _ref_error(cause or e) from None
        finally:
            _Clock.left = None
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "the top level"
            raise DecodeError(f"does not match its JSON schema at {where}: {err.message[:200]}")


class _Refused(Exception):
    pass


def _refuse(uri: str) -> Any:
    """The registry's retrieve: kdump reads no $ref from the network or from files."""
    raise _Refused(uri)


def _ref_error(e: Exception) -> BudgetError:
    ref = getattr(e, "ref", None) or getattr(getattr(e, "_wrapped", None), "ref", None) or str(e)
    return BudgetError("$ref", f"the $ref {str(ref)[:200]!r} is not in the schema store (kdump reads no network "
                               "or file $ref: http://, file://...)")


_SLOW: set[str] = set()


class _Clock:
    left: float | None = None       # seconds of regex time the value being validated has left, all patterns together


def search(pattern: str, text: str) -> bool:
    """``re.search`` under the regex budget (the regex module stops a backtracking pattern)."""
    import time

    import regex

    if pattern in _SLOW:            # a pattern that ran out of time once is not run again: a topic of such
        raise BudgetError("regex time", f"the pattern {pattern[:100]!r} took more than {budget.REGEX_TIMEOUT} s on "
                                        "an earlier value; kdump does not run it again")       # values costs no more
    start, left = time.monotonic(), _Clock.left
    timeout = budget.REGEX_TIMEOUT if left is None else max(0.01, min(budget.REGEX_TIMEOUT, left))
    try:
        found = regex.search(pattern, text, timeout=timeout)
    except TimeoutError:
        if timeout == budget.REGEX_TIMEOUT:
            _SLOW.add(pattern)
        raise BudgetError("regex time", f"the pattern {pattern[:100]!r} took more than {budget.REGEX_TIMEOUT} s "
                                        f"on a string of {len(text)} characters") from None
    except regex.error:
        return False
    finally:
        if left is not None:
            _Clock.left = left - (time.monotonic() - start)
    if _Clock.left is not None and _Clock.left <= 0:
        raise BudgetError("regex time", f"the value's patterns took more than {budget.REGEX_TIMEOUT * 2} s")
    return found is not None


def _bounded(cls: Any) -> Any:
    """The validator class with pattern, patternProperties and additionalProperties searching
    under the regex budget (jsonschema's own use ``re``, which can backtrack for hours)."""
    from jsonschema import ValidationError, validators

    def pattern(v: Any, patrn: str, instance: Any, schema: Any) -> Any:
        if v.is_type(instance, "string") and not search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(v: Any, pp: dict, instance: Any, schema: Any) -> Any:
        if v.is_type(instance, "object"):
            for patrn, sub in pp.items():
                for k, x in instance.items():
                    if search(patrn, k):
                        yield from v.descend(x, sub, path=k, schema_path=patrn)

    def additional_properties(v: Any, ap: Any, instance: Any, schema: Any) -> Any:
        if not v.is_type(instance, "object"):
            return
        known, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
        extras = sorted((k for k in instance if k not in known and not any(search(p, k) for p in patterns)), key=str)
        if v.is_type(ap, "object"):
            for k in extras:
                yield from v.descend(instance[k], ap, path=k)
        elif ap is False and extras:
            names = ", ".join(map(repr, extras))
            if patterns:                     # jsonschema's own wording, both ways
                yield ValidationError(f"{names} {'does' if len(extras) == 1 else 'do'} not match any of the "
                                      f"regexes: {', '.join(map(repr, sorted(patterns)))}")
            else:
                yield ValidationError(f"Additional properties are not allowed ({names} "
                                      f"{'was' if len(extras) == 1 else 'were'} unexpected)")

    mine = {"pattern": pattern, "patternProperties": pattern_properties, "additionalProperties": additional_properties}
    return validators.extend(cls, {k: f for k, f in mine.items() if k in cls.VALIDATORS})


def _draft7():
    from referencing.jsonschema import DRAFT7

    return DRAFT7


def parse(s: Schema, store: SchemaStore) -> Parsed:
    resources: dict[str, Any] = {}

    def load(schema: Schema) -> Any:
        return budget.load_schema_json(schema.text, f"schema {schema.id}")

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
