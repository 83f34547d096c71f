"""Findings kept per kind up to a bound, the rest counted: memory that does not grow with a file.

One flipped byte can make every entry of a 100 MB index a finding: 12 million of them, each
with its message, held until the report is drawn (gigabytes). A file's checks append to a
``Capped`` list instead: the first ``MAX_PER_KIND`` findings of each kind are kept, the
others only counted (``not_listed``, which ``verify --json`` reports and the text and table
views print as "N more"), as the segment scan does (``segment_checks``). ``room(kind)`` lets
a loop over many entries build the messages of the kept ones only.
"""

from __future__ import annotations

from collections.abc import Iterable

from kdump.model import Finding

MAX_PER_KIND = 50       # as the segment scan keeps (kdump.check.segment_checks.MAX_FINDINGS_PER_KIND)


class Capped(list):
    """A list of findings that keeps the first ``MAX_PER_KIND`` of each kind."""

    def __init__(self, findings: Iterable[Finding] = ()) -> None:
        self.kept: dict[str, int] = {}
        self.extra: dict[str, int] = {}      # kind -> counted past the first MAX_PER_KIND
        if type(findings) not in (tuple, list) or findings:   # (an empty Capped may still count some)
            self.extend(findings)

    def __reduce__(self):           # (to a -j worker's parent: pickle would append to an empty one)
        return _restored, (list(self), self.kept, self.extra)

    def append(self, f: Finding) -> None:
        n = self.kept.get(f.kind, 0)
        if n < MAX_PER_KIND:
            self.kept[f.kind] = n + 1
            super().append(f)
        else:
            self.extra[f.kind] = self.extra.get(f.kind, 0) + 1

    def extend(self, findings: Iterable[Finding]) -> None:
        for f in findings:
            self.append(f)
        if isinstance(findings, Capped):
            for kind, n in findings.extra.items():      # what another Capped counted
                self.skip(kind, n)

    def room(self, kind: str) -> int:
        """How many more findings of ``kind`` would be kept."""
        return MAX_PER_KIND - self.kept.get(kind, 0)

    def skip(self, kind: str, n: int) -> None:
        """Count ``n`` findings of ``kind`` past the kept ones without making them."""
        if n > 0:
            self.extra[kind] = self.extra.get(kind, 0) + n

    @property
    def not_listed(self) -> dict[str, int]:
        """Kind -> the findings counted past the first ``MAX_PER_KIND``."""
        return dict(self.extra)


def _restored(items: list[Finding], kept: dict[str, int], extra: dict[str, int]) -> Capped:
    c = Capped()
    list.extend(c, items)
    c.kept, c.extra = dict(kept), dict(extra)
    return c


def not_listed(findings) -> dict[str, int]:
    """What a findings list counted but did not keep (none, for a plain list)."""
    return findings.not_listed if isinstance(findings, Capped) else {}
