"""DumpLogSegments' text as each Kafka line prints it (``kdump dump --kafka-version LINE``).

kdump's text view is the newest line's. Every place where an older line printed otherwise is
one ``Rule`` below: the line that brought today's text, Kafka's change that made it, and what
the lines before it print. Code asks ``KafkaLine.has(RULE)``; nothing else names a version.
The rules were found by running each line's own DumpLogSegments on every shipped fixture
with every decoder option (tests/kafka/test_dls_versions.py keeps them equal).
"""

from __future__ import annotations

from typing import NamedTuple


class Rule(NamedTuple):
    name: str
    since: str          # the first line that prints today's text
    change: str         # Kafka's change that made it
    before: str         # what the lines before ``since`` print instead


# The lines kdump prints as, oldest first; the newest is the default.
LINES = ("4.3", "4.4")
NEWEST = LINES[-1]

TRANSACTION_STATUS_NAME = Rule(
    "transaction-status-name", "4.4", "KAFKA-20712 (apache/kafka#22615)",
    '--transaction-log-decoder: transactionStatus as its number (0), not the state name ("Empty"; an id '
    'TransactionState does not know prints as its number in quotes)')

RULES = (TRANSACTION_STATUS_NAME,)


def _key(line: str) -> tuple[int, ...]:
    return tuple(int(p) for p in line.split("."))


class KafkaLine:
    """One Kafka minor line's DumpLogSegments text (``has``: does it print as ``rule`` says)."""

    def __init__(self, line: str = NEWEST) -> None:
        if line not in LINES:
            raise ValueError(f"Kafka {line}: kdump prints the text of Kafka {', '.join(LINES)}")
        self.line = line
        self._rules = frozenset(r.name for r in RULES if _key(line) >= _key(r.since))

    def has(self, rule: Rule) -> bool:
        return rule.name in self._rules

    def __repr__(self) -> str:
        return f"KafkaLine({self.line!r})"


NEWEST_LINE = KafkaLine(NEWEST)
