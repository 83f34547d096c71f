"""kdump.format.javautf8 against Java's own ``new String(bytes, UTF_8)``.

Every 1- and 2-byte sequence, every 3- and 4-byte sequence over the bytes where UTF-8
decoders disagree, and random longer ones: java_utf8 must give what Java gives
(kafka-dump-log.sh's StringDecoder).
"""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from kdump.format.javautf8 import java_utf8

CHECKER = Path(__file__).resolve().parents[1] / "kafka" / "JavaUtf8.java"
EDGES = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
         0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF]


def _corpus() -> list[bytes]:
    seqs = [bytes([x]) for x in range(256)] + [bytes([x, y]) for x in range(256) for y in range(256)]
    for n in (3, 4):
        seqs += [bytes(t) for t in itertools.product(EDGES, repeat=n)]
    rnd = random.Random(13)
    seqs += [bytes(rnd.choice(EDGES) for _ in range(rnd.randint(5, 9))) for _ in range(20000)]
    return seqs


def test_java_utf8_is_javas_decoding():
    if not shutil.which("java"):
        import kafka_jars

        kafka_jars._missing("no java on PATH")
    seqs = _corpus()
    proc = subprocess.run(["java", str(CHECKER)], input="".join(s.hex() + "\n" for s in seqs),
                          capture_output=True, text=True, check=True)
    expected = proc.stdout.split("\n")
    wrong = []
    for s, want in zip(seqs, expected):
        got = java_utf8(s).encode("utf-16-be", "surrogatepass").hex()
        if got != want:
            wrong.append(f"java_utf8({s.hex()}) = {got}, Java: {want}")
    assert not wrong, "\n".join(wrong[:20])


@pytest.mark.parametrize("data, text", [(b"\xed\xb9\x5e", "\ufffd^"), (b"\xed\xa0\x80", "\ufffd"),
                                        (b"a\xed\xa0", "a\ufffd"), (b"\xf0\x9f\x98", "\ufffd"),
                                        (b"caf\xc3\xa9", "café")])
def test_where_java_and_python_differ(data, text):
    assert java_utf8(data) == text
