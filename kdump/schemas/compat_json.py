"""Schema Registry's compatibility rules for JSON Schema: which differences between an
``original`` schema (the writer) and an ``update`` (the reader) make the registry refuse the
update (its default, strict policy).

The update must accept every document the original accepted. So, in the registry's terms:

- a type may widen (integer -> number, a type -> a union holding it, anything -> ``{}``), not
  narrow or change; ``allOf`` may lose parts, ``anyOf``/``oneOf`` may gain branches (their
  parts are matched pairwise); ``not`` may only narrow what it excludes;
- limits may only loosen: maxLength/maximum/maxItems/maxProperties raised or removed,
  minLength/minimum/minItems/minProperties lowered or removed, pattern removed, multipleOf
  divided, uniqueItems dropped, an enum extended (never narrowed, a const never changed);
- a property may become required only with a default;
- the content model decides added and removed properties. An open object (no
  additionalProperties, no patternProperties) may lose properties but not gain them (an
  old writer may have put anything there), except a property whose schema is ``{}``. A
  closed object (``additionalProperties: false``) may gain optional properties but not
  lose them, except one whose schema was ``false``. A partly open one (a schema for
  additional or pattern properties) may gain or lose a property whose schema matches the
  one that covered it. additionalProperties may go from false to anything, not the reverse.
  Arrays' positional ``items`` follow the same model through additionalItems.
- titles, descriptions, ids and defaults may change freely.

Sub-schemas reached through ``$ref`` (``#/...`` in the same document, or a reference's name)
are compared as if written in place; a cycle counts as compatible.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from kdump.schemas.json_nodes import (
    COMBINERS,
    Loader,
    Node,
    all_items,
    dependencies,
    extra_items,
    item_list,
    items_cover,
    mapping,
    names,
    node_default,
    open_items,
    open_model,
    props,
    what,
)
from kdump.schemas.json_schema import search


class _Diff:
    def __init__(self, original: Loader, update: Loader) -> None:
        self.o, self.u = original, update
        self.stack: set[tuple[int, int]] = set()
        self.memo: dict[tuple[int, int], list[str]] = {}

    def compare(self, o: Node | None, u: Node | None, path: str) -> list[str]:
        """The incompatible differences, each naming its path (``#/properties/x``)."""
        if o is None and u is None:
            return []
        if o is None:
            return [f"{path}: a schema was added where there was none"]
        if u is None:
            return []
        key = (id(o), id(u))
        if key in self.stack:
            return []                    # a cycle: taken as compatible
        hit = self.memo.get(key)
        if hit is None:                  # paths below are relative to this pair: the results are shared
            self.stack.add(key)
            try:
                hit = self.memo[key] = self._types(o, u, "")
            finally:
                self.stack.discard(key)
        return [path + h for h in hit]

    def _types(self, o: Node, u: Node, path: str) -> list[str]:
        at = path
        ocomb, ucomb = o.kind in COMBINERS, u.kind in COMBINERS
        if not ocomb and ucomb:
            if len(u.parts) == 1:
                inner = self.compare(o, u.parts[0], path)
                if not inner:
                    return []
            elif u.kind in ("anyOf", "oneOf"):
                if any(not self.compare(o, p, path) for p in u.parts):
                    return []
        elif ocomb and not ucomb:
            if len(o.parts) == 1:
                if not self.compare(o.parts[0], u, path):
                    return []
            elif o.kind == "allOf":
                if any(not self.compare(p, u, path) for p in o.parts):
                    return []
        if o.kind != u.kind and not (ocomb and ucomb):
            if o.kind == "false" or u.kind == "empty":
                return []
            if o.get("connect.type") == "bytes" and u.get("connect.type") == "bytes":
                return []
            return [f"{at}: the type changed from {what(o)} to {what(u)}"]
        method = getattr(self, "_" + o.kind, None) if not ocomb else self._combined
        return method(o, u, path) if method is not None else []

    # -- by kind ---------------------------------------------------------------------------------

    def _string(self, o: Node, u: Node, path: str) -> list[str]:
        out = _limits(o, u, path, ("maxLength", "minLength"))
        op, up = o.get("pattern"), u.get("pattern")
        if up is not None and op != up:
            out.append(f"{path}/pattern: " + ("a pattern was added" if op is None else f"the pattern changed "
                                              f"from {op!r} to {up!r}"))
        return out

    def _number(self, o: Node, u: Node, path: str) -> list[str]:
        out = _limits(o, u, path, ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"))
        om, um = _decimal(o.get("multipleOf")), _decimal(u.get("multipleOf"))
        if um is not None and om != um and not (om is not None and um != 0 and om % um == 0):
            out.append(f"{path}/multipleOf: " + ("multipleOf was added" if om is None else
                                                 f"multipleOf changed from {om} to {um}"))
        if u.integer and not o.integer:
            out.append(f"{path}: number narrowed to integer")
        return out

    def _enum(self, o: Node, u: Node, path: str) -> list[str]:
        ov, uv = _values(o.get("enum")), _values(u.get("enum"))
        missing = [json.loads(v) for v in ov if v not in uv]
        return [f"{path}/enum: the values {missing} are no longer allowed"] if missing else []

    def _const(self, o: Node, u: Node, path: str) -> list[str]:
        same = _values([o.get("const")]) == _values([u.get("const")])
        return [] if same else [f"{path}/const: the constant changed from {json.dumps(o.get('const'))} to "
                                f"{json.dumps(u.get('const'))}"]

    def _not(self, o: Node, u: Node, path: str) -> list[str]:
        # what ``not`` excludes may only shrink: the update's excluded set must fit in the original's
        if self.compare(u.parts[0], o.parts[0], path + "/not"):
            return [f"{path}/not: it excludes more than before"]
        return []

    def _combined(self, o: Node, u: Node, path: str) -> list[str]:
        at = path
        if o.kind != u.kind:
            single_o, single_u = len(o.parts) == 1, len(u.parts) == 1
            widened = (u.kind == "anyOf" or (single_o and single_u) or (single_o and u.kind == "oneOf")
                       or (single_u and o.kind == "allOf"))
            if not widened:
                return [f"{at}: {o.kind} became {u.kind}"]
        ops, ups = _unique(o.parts), _unique(u.parts)
        out = []
        if len(ops) < len(ups) and u.kind == "allOf":
            out.append(f"{at}: allOf gained a part")
        elif len(ops) > len(ups) and o.kind in ("anyOf", "oneOf"):
            out.append(f"{at}: {o.kind} lost a branch")
        edges = {i: [j for j, up in enumerate(ups) if not self.compare(op, up, f"{path}/{o.kind}/{i}")]
                 for i, op in enumerate(ops)}
        if _matching(edges, len(ups)) < min(len(ops), len(ups)):
            out.append(f"{at}: the {o.kind} branches no longer match up")
        return out

    def _object(self, o: Node, u: Node, path: str) -> list[str]:
        out: list[str] = []
        oprops, uprops = props(o), props(u)
        oreq, ureq = names(o, "required"), names(u, "required")
        for name in oprops:
            if name in uprops and name in ureq and name not in oreq and not node_default(uprops[name]):
                out.append(f"{path}/required/{name}: the property became required without a default")
        for name in sorted(set(oprops) | set(uprops)):
            where = f"{path}/properties/{name}"
            if name not in uprops:
                if open_model(u, self.u):
                    continue
                cover = self._partial(u, self.u, name)
                ol = self.o.node(oprops[name], o.doc)
                if cover is not None:
                    inner = self.compare(ol, cover, where)
                    if inner:
                        out += inner + [f"{where}: removed, and what now covers it does not accept it"]
                elif ol.kind != "false":
                    out.append(f"{where}: removed from a closed content model")
            elif name not in oprops:
                un = self.u.node(uprops[name], u.doc)
                if open_model(o, self.o):
                    if un.kind == "empty":
                        continue
                    if name in ureq and not un.has_default():
                        out.append(f"{where}: a required property was added to an open content model")
                    else:
                        out.append(f"{where}: a property was added to an open content model (a writer of "
                                   f"the old schema may have put anything there)")
                    continue
                cover = self._partial(o, self.o, name)
                if cover is not None:
                    inner = self.compare(cover, un, where)
                    if inner:
                        out += inner + [f"{where}: added, and does not accept what already covered it"]
                if name in ureq and not un.has_default():
                    out.append(f"{where}: a required property without a default was added")
            else:
                out += self.compare(self.o.node(oprops[name], o.doc), self.u.node(uprops[name], u.doc), where)
        out += self._dependencies(o, u, path)
        out += self._additional(o, u, f"{path}/additionalProperties", o.get("additionalProperties", True),
                                u.get("additionalProperties", True), "properties")
        out += self._unevaluated(o, u, path, "unevaluatedProperties")
        out += _limits(o, u, path, ("maxProperties", "minProperties"))
        return out

    def _dependencies(self, o: Node, u: Node, path: str) -> list[str]:
        out = []
        od, ud = dependencies(o), dependencies(u)
        for name in sorted(set(od) | set(ud)):
            where = f"{path}/dependencies/{name}"
            a, b = od.get(name), ud.get(name)
            if isinstance(b, list):      # the properties a present one requires: may only shrink
                if not (isinstance(a, list) and set(map(str, b)) <= set(map(str, a))):
                    out.append(f"{where}: the properties it requires grew")
            elif b is not None:
                if not isinstance(a, (dict, bool)):
                    out.append(f"{where}: a dependency schema was added")
                else:
                    out += self.compare(self.o.node(a, o.doc), self.u.node(b, u.doc), where)
        return out

    def _additional(self, o: Node, u: Node, where: str, oa: Any, ua: Any, what: str) -> list[str]:
        """additionalProperties / additionalItems: from false to anything is allowed, not back;
        from absent (or true) to a schema narrows."""
        if (oa is not False) != (ua is not False):
            return [f"{where}: additional {what} are no longer allowed"] if ua is False else []
        oschema, uschema = isinstance(oa, dict), isinstance(ua, dict)
        if not oschema and uschema:
            return [f"{where}: additional {what} were narrowed to a schema"]
        if oschema and uschema:
            return self.compare(self.o.node(oa, o.doc), self.u.node(ua, u.doc), where)
        return []

    def _unevaluated(self, o: Node, u: Node, path: str, word: str) -> list[str]:
        oa, ua = o.get(word), u.get(word)
        if oa is None and ua is None:
            return []
        where = f"{path}/{word}"
        on = None if oa is None else self.o.node(oa, o.doc)
        un = None if ua is None else self.u.node(ua, u.doc)
        if un is None or (on is not None and on.kind == "false"):
            return []
        if un.kind == "false" or on is None or (on.kind == "empty" and un.kind != "empty"):
            return [f"{where}: narrowed"]
        if un.kind == "empty":
            return []
        return self.compare(on, un, where)

    def _partial(self, n: Node, loader: Loader, name: str) -> Node | None:
        """The schema that covers property ``name`` in a partly open content model, if any."""
        for pattern, schema in mapping(n, "patternProperties").items():
            if search(pattern, name):          # under the regex time budget (BudgetError past it)
                return loader.node(schema, n.doc)
        extra = n.get("additionalProperties", True)
        if isinstance(extra, dict):
            return loader.node(extra, n.doc)
        if extra is True and "unevaluatedProperties" in n.raw:
            un = loader.node(n.raw["unevaluatedProperties"], n.doc)
            if un.kind not in ("false", "empty"):
                return un
        return None

    def _array(self, o: Node, u: Node, path: str) -> list[str]:
        out: list[str] = []
        oall, uall = all_items(o), all_items(u)
        out += self.compare(None if oall is None else self.o.node(oall, o.doc),
                            None if uall is None else self.u.node(uall, u.doc), path + "/items")
        olist, ulist = item_list(o), item_list(u)
        for i in range(max(len(olist), len(ulist))):
            where = f"{path}/items/{i}"
            if i < len(olist) and i < len(ulist):
                out += self.compare(self.o.node(olist[i], o.doc), self.u.node(ulist[i], u.doc), where)
            elif i < len(olist):
                if open_items(u):
                    continue
                cover = items_cover(u)
                on = self.o.node(olist[i], o.doc)
                if cover is not None:
                    inner = self.compare(on, self.u.node(cover, u.doc), where)
                    if inner:
                        out += inner + [f"{where}: removed, and what now covers it does not accept it"]
                elif on.kind != "false":
                    out.append(f"{where}: an item was removed from a closed content model")
            else:
                un = self.u.node(ulist[i], u.doc)
                if open_items(o):
                    if un.kind != "empty":
                        out.append(f"{where}: an item was added to an open content model")
                    continue
                cover = items_cover(o)
                if cover is not None:
                    inner = self.compare(self.o.node(cover, o.doc), un, where)
                    if inner:
                        out += inner + [f"{where}: added, and does not accept what already covered it"]
        out += self._additional(o, u, f"{path}/additionalItems", extra_items(o), extra_items(u), "items")
        out += self._unevaluated(o, u, path, "unevaluatedItems")
        out += _limits(o, u, path, ("maxItems", "minItems", "maxContains", "minContains"))
        if u.get("uniqueItems") is True and o.get("uniqueItems") is not True:
            out.append(f"{path}/uniqueItems: items must now be unique")
        return out


# -- helpers ---------------------------------------------------------------------------------------

_RAISE_OK = {"maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties", "maxContains"}


def _limits(o: Node, u: Node, path: str, words) -> list[str]:
    """A limit may be removed, or moved to let more through; adding or tightening one is refused."""
    out = []
    for w in words:
        a, b = _decimal(o.get(w)), _decimal(u.get(w))
        if b is None or a == b:
            continue
        if a is None:
            out.append(f"{path}/{w}: {w} {b} was added")
        elif (b < a) if w in _RAISE_OK else (b > a):
            out.append(f"{path}/{w}: {w} went from {a} to {b}")
    return out


def _decimal(v: Any) -> Decimal | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None                      # draft 4's boolean exclusiveMaximum modifies maximum
    try:
        return Decimal(str(v))
    except InvalidOperation:
        return None


def _values(vs: Any) -> set[str]:
    return {json.dumps(v, sort_keys=True) for v in vs} if isinstance(vs, list) else set()


def _unique(parts: list[Node]) -> list[Node]:
    seen, out = set(), []
    for p in parts:
        k = json.dumps(p.raw, sort_keys=True, default=str) + p.kind + str(p.integer)
        if k not in seen:
            seen.add(k)
            out.append(p)
    return out


def _matching(edges: dict[int, list[int]], n_right: int) -> int:
    """The size of a maximum matching of the bipartite graph (Kuhn's augmenting paths)."""
    owner: list[int | None] = [None] * n_right

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if owner[j] is None or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    return sum(1 for i in edges if augment(i, set()))


def breaks(original, update) -> list[str]:
    """What makes the registry refuse ``update`` (the reader) after ``original`` (the writer):
    empty when it accepts it. Both are ``json_schema.Parsed``."""
    lo, lu = Loader(original.schema, original.resources), Loader(update.schema, update.resources)
    d = _Diff(lo, lu)
    return d.compare(lo.node(original.schema), lu.node(update.schema), "#")
