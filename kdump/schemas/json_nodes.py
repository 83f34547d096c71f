"""JSON schemas as Schema Registry's validator library models them, for the compatibility rules
(``compat_json``): each sub-schema one kind (string, number, object, array, enum, const,
not, a combination, anything, nothing), a ``type`` list an anyOf, and a schema holding several
kinds (``"type": "string", "enum": [...]``) an allOf of them. ``$ref`` is followed: ``#/...``
in its own document, or another document by its reference name (or ``$id``).
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from kdump.errors import DecodeError

_OBJECT_WORDS = ("properties", "required", "additionalProperties", "patternProperties", "dependencies",
                 "minProperties", "maxProperties", "propertyNames", "unevaluatedProperties", "dependentRequired",
                 "dependentSchemas")
_ARRAY_WORDS = ("items", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains", "prefixItems",
                "unevaluatedItems", "minContains", "maxContains")
_NUMBER_WORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRING_WORDS = ("minLength", "maxLength", "pattern", "format")
_TYPE_WORDS = {"object": _OBJECT_WORDS, "array": _ARRAY_WORDS, "number": _NUMBER_WORDS, "string": _STRING_WORDS}
COMBINERS = ("allOf", "anyOf", "oneOf")


@dataclass(eq=False)
class Node:
    """A schema as the registry's validator library sees it: one kind, or several combined."""
    kind: str                    # empty, false, string, number, boolean, null, object, array, enum, const,
    raw: Any                     # allOf, anyOf, oneOf, not
    doc: Any = None              # the document it belongs to (for #/ references)
    parts: list[Any] = field(default_factory=list)       # combined: the sub-schemas (raw, doc)
    integer: bool = False

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default) if isinstance(self.raw, dict) else default

    def has_default(self) -> bool:
        return isinstance(self.raw, dict) and "default" in self.raw


class Loader:
    """Turns (raw JSON, its document) into Nodes, resolving references."""

    def __init__(self, root: Any, resources: dict[str, Any]) -> None:
        self.root = root
        self.resources = resources
        self._memo: dict[tuple[int, str | None], Node] = {}

    def node(self, raw: Any, doc: Any = None, type_name: str | None = None, depth: int = 0) -> Node:
        doc = self.root if doc is None else doc
        key = (id(raw), type_name)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        n = self._make(raw, doc, type_name, depth)
        self._memo[key] = n
        return n

    def _make(self, raw: Any, doc: Any, type_name: str | None, depth: int) -> Node:
        if depth > 64:
            raise DecodeError("JSON schema references nest more than 64 deep")
        if raw is True or raw == {}:
            return Node("empty", raw, doc)
        if raw is False:
            return Node("false", raw, doc)
        if not isinstance(raw, dict):
            raise DecodeError(f"not a JSON schema: {json.dumps(raw)[:60]}")
        if isinstance(raw.get("$ref"), str):
            target, tdoc = self.resolve(raw["$ref"], doc)
            return self.node(target, tdoc, None, depth + 1)
        if type_name is not None:
            return self._typed(raw, doc, type_name)
        parts: list[Node] = []
        types = raw.get("type")
        if isinstance(types, list):
            parts.append(Node("anyOf", raw, doc, [self.node(raw, doc, str(t), depth) for t in types]))
        elif isinstance(types, str):
            parts.append(self._typed(raw, doc, types))
        else:
            implied = [t for t, words in _TYPE_WORDS.items() if any(w in raw for w in words)]
            typed = [self._typed(raw, doc, t) for t in implied]
            parts += typed if len(typed) <= 1 else [Node("allOf", raw, doc, typed)]
        if "enum" in raw:
            parts.append(Node("enum", raw, doc))
        if "const" in raw:
            parts.append(Node("const", raw, doc))
        for word in COMBINERS:
            if isinstance(raw.get(word), list):
                parts.append(Node(word, raw, doc, [self.node(s, doc, None, depth + 1) for s in raw[word]]))
        if "not" in raw:
            parts.append(Node("not", raw, doc, [self.node(raw["not"], doc, None, depth + 1)]))
        if not parts:
            return Node("empty", raw, doc)
        return parts[0] if len(parts) == 1 else Node("allOf", raw, doc, parts)

    def _typed(self, raw: dict, doc: Any, type_name: str) -> Node:
        if type_name == "integer":
            return Node("number", raw, doc, integer=True)
        if type_name not in ("string", "number", "boolean", "null", "object", "array"):
            raise DecodeError(f"unknown JSON schema type {type_name!r}")
        return Node(type_name, raw, doc)

    def resolve(self, ref: str, doc: Any) -> tuple[Any, Any]:
        where, _, pointer = ref.partition("#")
        if where:
            target = self.resources.get(where)
            if target is None:
                target = next((d for name, d in self.resources.items()
                               if name.rsplit("/", 1)[-1] == where.rsplit("/", 1)[-1]
                               or (isinstance(d, dict) and d.get("$id") == where)), None)
            if target is None:
                raise DecodeError(f"the JSON schema's $ref {ref!r} names nothing the store holds")
            doc = target
        node = doc
        for step in (p for p in pointer.split("/") if p):
            step = urllib.parse.unquote(step).replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(step)] if isinstance(node, list) else node[step]
            except (KeyError, IndexError, ValueError, TypeError):
                raise DecodeError(f"the JSON schema's $ref {ref!r} points at nothing") from None
        return node, doc


def mapping(n: Node, word: str) -> dict[str, Any]:
    """A keyword whose value should be an object ({} when it is something else)."""
    v = n.get(word)
    return v if isinstance(v, dict) else {}


def names(n: Node, word: str) -> set[str]:
    """A keyword whose value should be a list of names (``required``)."""
    v = n.get(word)
    return {x for x in v if isinstance(x, str)} if isinstance(v, list) else set()


def props(n: Node) -> dict[str, Any]:
    p = n.get("properties") or {}
    return p if isinstance(p, dict) else {}


def dependencies(n: Node) -> dict[str, Any]:
    """draft 7's dependencies, and 2019-09's dependentRequired and dependentSchemas."""
    out: dict[str, Any] = {}
    for word in ("dependencies", "dependentRequired", "dependentSchemas"):
        d = n.get(word)
        if isinstance(d, dict):
            out.update(d)
    return out


def node_default(raw: Any) -> bool:
    return isinstance(raw, dict) and "default" in raw


def open_model(n: Node, loader: Loader) -> bool:
    """Fully open: additionalProperties absent or true, no patternProperties, and
    unevaluatedProperties absent or true."""
    if n.get("additionalProperties", True) is not True or mapping(n, "patternProperties"):
        return False
    un = n.get("unevaluatedProperties")
    return un is None or loader.node(un, n.doc).kind == "empty"


def all_items(n: Node) -> Any:
    if "prefixItems" in n.raw:
        return None                      # items after prefixItems are the additional items
    items = n.get("items")
    return items if isinstance(items, (dict, bool)) else None


def item_list(n: Node) -> list:
    items = n.get("prefixItems") if "prefixItems" in n.raw else n.get("items")
    return items if isinstance(items, list) else []


def extra_items(n: Node) -> Any:
    return n.get("items", True) if "prefixItems" in n.raw else n.get("additionalItems", True)


def open_items(n: Node) -> bool:
    return extra_items(n) is True and n.get("unevaluatedItems", True) in (True, {})


def items_cover(n: Node) -> Any:
    extra = extra_items(n)
    if isinstance(extra, dict):
        return extra
    un = n.get("unevaluatedItems")
    return un if extra is True and isinstance(un, dict) and un else None


def what(n: Node) -> str:
    if n.kind == "number":
        return "integer" if n.integer else "number"
    return {"empty": "anything", "false": "nothing"}.get(n.kind, n.kind)
