"""Comparing ``kdump dump --format text`` with DumpLogSegments, file by file.

Nothing is skipped but what README.md's "Departures from kafka-dump-log.sh" table lists;
each row of that table names one rule here (``RULES``), and the test checks that the two
agree, so a departure cannot be added on one side only.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import dls

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

# kdump's text view escapes control characters inside keys, values and header keys
# (kdump.decoders.views). The C0 controls, DEL and the C1 controls as \xNN (with \n, \r, \t);
# as \uNNNN the line and paragraph separators, the bidi controls (U+061C, U+200E/U+200F,
# U+202A..U+202E, U+2066..U+2069) and the zero-width characters (U+200B..U+200D, U+2060, U+FEFF).
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_ESCAPES.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})
_ESCAPES.update({c: f"\\u{c:04x}" for c in (0x2028, 0x2029, 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                                           *range(0x2066, 0x206A), 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)})
_KDUMP_ERROR = re.compile(r"^kdump: error: (.*?):(\d+:)? ")


def escaped(line: str) -> str:
    return line.translate(_ESCAPES)


def readme_rules() -> set[str]:
    """The rule names in the README's departures table (its last column, in backquotes)."""
    text = README.read_text()
    start = text.index("### Departures from kafka-dump-log.sh")
    table = text[start:text.index("\n\n", text.index("|", start))]
    rules = set()
    for row in table.splitlines()[2:]:
        if row.startswith("|"):
            rules.update(re.findall(r"`rule:([a-z-]+)`", row))
    return rules


def escape_rule(dls_lines: list[str], kdump_lines: list[str]) -> list[str]:
    """Rule ``escape``: DumpLogSegments' lines with each value's control characters escaped.

    Kafka prints a value's newline as a line break; the lines it splits are joined back
    wherever that makes kdump's line.
    """
    out: list[str] = []
    i = 0
    for want in kdump_lines:
        if i >= len(dls_lines):
            break
        j, line = i, dls_lines[i]
        while escaped(line) != want and j + 1 < len(dls_lines) and want.startswith(escaped(line)):
            j += 1
            line += "\n" + dls_lines[j]
        if escaped(line) == want:
            out.append(want)
            i = j + 1
        else:
            out.append(escaped(dls_lines[i]))
            i += 1
    out.extend(escaped(x) for x in dls_lines[i:])
    return out


RULES = {"escape", "exception", "summary-order", "errors"}


@dataclass
class KdumpDumped:
    stdout: list[str]
    summary: list[str]
    errors: list[str]


def run_kdump(files: list[str], options: tuple[str, ...], escape: bool = True,
              kafka_version: str | None = None) -> dict[str, KdumpDumped]:
    """``kdump dump --format text --files ...`` in as few runs as the argument limit allows
    (``escape`` False: with ``--escape none``, DumpLogSegments' bytes; ``kafka_version``: as
    that Kafka line's)."""
    result: dict[str, KdumpDumped] = {}
    extra = (() if escape else ("--escape", "none")) + (("--kafka-version", kafka_version) if kafka_version else ())
    for batch in dls.batches(files):
        proc = subprocess.run([sys.executable, "-m", "kdump", "dump", "--format", "text", *options, *extra,
                               "--files", ",".join(batch)], capture_output=True, cwd=REPO)
        assert proc.returncode in (0, 1, 3), proc.stderr.decode()[-3000:]
        per_file = dls.split_stdout(batch, proc.stdout.decode("utf-8", "surrogateescape"))
        lines = [x for x in proc.stderr.decode("utf-8", "replace").split("\n") if x]
        errors = [x for x in lines if _KDUMP_ERROR.match(x)]
        by_path, loose = dls.split_stderr([x for x in lines if not _KDUMP_ERROR.match(x)])
        assert not loose, f"kdump printed lines that are no DumpLogSegments report: {loose[:5]}"
        for i, f in enumerate(batch):
            result[f] = KdumpDumped(per_file[i] if i < len(per_file) else [], by_path.get(f, []),
                                    [e for e in errors if _KDUMP_ERROR.match(e).group(1) == f])
        # Blocks that name no file (an older line's .timeindex report), in the order of the files
        result.setdefault(ANONYMOUS, KdumpDumped([], [], [])).summary.extend(by_path.get("", []))
    return result


# run_kdump's key for the summary blocks that name no file, and how their first line begins.
ANONYMOUS = ""
_ANONYMOUS_HEADER = "The following indexed offsets are not found in the log."


def anonymous(lines: list[str]) -> tuple[list[str], list[str]]:
    """DumpLogSegments' report lines split into those of blocks naming their file and those not."""
    named: list[str] = []
    anon: list[str] = []
    inside = False
    for line in lines:
        inside = line == _ANONYMOUS_HEADER or (inside and line.startswith("Indexed offset: "))
        (anon if inside else named).append(line)
    return named, anon


def compare(ours: KdumpDumped, theirs: dls.Dumped, copy_root: str, root: str, escape: bool = True) -> str | None:
    """None when kdump's output for one file is DumpLogSegments', under the listed rules
    (``escape`` False: kdump ran with ``--escape none``, and the escape rule does not apply)."""
    def local(lines: list[str]) -> list[str]:
        return [x.replace(copy_root, root) for x in lines]

    expected = escape_rule(local(theirs.stdout), ours.stdout) if escape else local(theirs.stdout)
    if theirs.crash is not None:
        # Rule ``exception``: Kafka died in this file; what it printed before must agree,
        # its last (perhaps half-written) line as a prefix, and kdump must have gone on.
        head, last = expected[:-1], expected[-1:] or [""]
        got = ours.stdout
        if got[:len(head)] != head or not (len(got) > len(head) and got[len(head)].startswith(last[0])):
            return _diff("before Kafka's exception", head + last, got[:len(head) + 1])
        return None
    if expected != ours.stdout:
        return _diff("stdout", expected, ours.stdout)
    named = anonymous(local(theirs.stderr))[0]     # the others: compared in file order (ANONYMOUS)
    if named != ours.summary:
        return _diff("stderr report", named, ours.summary)
    if theirs.messages and not ours.errors:
        # Rule ``errors``: kdump words its own errors, but must report one where Kafka did.
        return f"Kafka reported {theirs.messages!r}; kdump reported nothing"
    return None


def _diff(what: str, a: list[str], b: list[str]) -> str:
    import difflib

    body = "\n".join(list(difflib.unified_diff(a, b, "kafka-dump-log.sh", "kdump", lineterm="", n=1))[:40])
    return f"{what} differs:\n{body}"
