"""Terminal injection: no raw control, bidi or zero-width character reaches a terminal.

A client names its groups, topics, transactional ids, features and header keys as it likes;
tests/support/hostile_names.py plants ESC sequences (OSC ended by BEL and by ST, CSI),
U+009B, U+0085, bidi and zero-width characters in every string field of every internal-topic
record, in keys, values and header keys, and in topic names. Every command runs on a
pseudo-terminal (stdout and stderr), and its bytes are read as the terminal gets them.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from kdump import _accel
from support.damage import subprocess_env
from support.hostile_names import FORBIDDEN, PAYLOADS, build

# What Rich writes itself: styles (SGR), and for the progress bar on stderr the cursor hidden
# and shown, a line erased, the cursor moved up. Each payload with an ESC holds a sequence
# outside these (an OSC, a CSI 2J), so a payload that got through raw is still seen.
_RICH = re.compile(r"\x1b\[(?:[0-9;]*m|\?25[lh]|2K|[0-9]*A)")
_FORBIDDEN = re.compile("[" + "".join(re.escape(c) for c in sorted(FORBIDDEN)) + "]")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("hostile"))


def on_terminal(args: list[str], cwd: Path, columns: int = 100) -> tuple[int, str]:
    """Run ``kdump ARGS`` with stdout and stderr on a pseudo-terminal ``columns`` wide:
    (exit status, what the terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {**subprocess_env(), "COLUMNS": str(columns), "LINES": "40", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "kdump", *args], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, cwd=cwd, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:                 # EIO: every end of the slave is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=120)
    return code, b"".join(chunks).decode("utf-8", "surrogateescape")


def leaks(seen: str) -> list[str]:
    """Each forbidden character the terminal got, with what surrounds it (the first few)."""
    seen = _RICH.sub("", seen)
    return [f"U+{ord(m.group()):04X} in {seen[max(0, m.start() - 60):m.end() + 20]!r}"
            for m in list(_FORBIDDEN.finditer(seen))[:6]]


# Every command and view, with the hostile log dir as its input (LOGDIR).
COMMANDS = [
    ["dump", "LOGDIR"],
    ["dump", "LOGDIR", "--records"],
    ["dump", "LOGDIR", "--data"],
    ["dump", "LOGDIR", "--data", "--no-auto-decode"],
    ["dump", "LOGDIR", "--data", "--format", "text"],
    ["dump", "LOGDIR", "--records", "--format", "text"],
    ["dump", "LOGDIR", "--data", "--format", "text", "--no-auto-decode"],
    ["dump", "LOGDIR", "--data", "--format", "text", "--skip-record-metadata"],
    ["dump", "LOGDIR", "--data", "--format", "text", "--escape", "none"],
    ["dump", "LOGDIR", "--data", "--format", "text", "--encoding", "hex"],
    ["dump", "LOGDIR", "--data", "--json"],
    ["dump", "LOGDIR", "--data", "--format", "text", "-j", "2"],
    ["dump", "LOGDIR", "--data", "-j", "2"],
    ["dump", "--files", "LOGDIR/__cluster_metadata-0/00000000000000000000.log", "--deep-iteration",
     "--print-data-log", "--cluster-metadata-decoder"],
    ["dump", "--files", "LOGDIR/__consumer_offsets-0/00000000000000000000.log", "--deep-iteration",
     "--print-data-log", "--offsets-decoder", "--escape", "none", "--format", "text"],
    ["dump", "LOGDIR/__consumer_offsets-0/00000000000000000000.index"],
    ["verify", "LOGDIR"],
    ["verify", "LOGDIR", "--deep", "--format", "text"],
    ["verify", "LOGDIR", "--deep", "--json"],
    ["index", "LOGDIR"],
    ["index", "LOGDIR", "--verify", "--format", "text"],
    ["timeindex", "LOGDIR", "--verify"],
    ["recover", "LOGDIR"],
    ["recover", "LOGDIR", "--format", "text"],
    ["info", "LOGDIR"],
    ["info", "LOGDIR", "--format", "text"],
    ["info", "LOGDIR", "--json"],
    ["info", "LOGDIR", "--timeline"],
    ["txn", "LOGDIR"],
    ["txn", "LOGDIR", "--format", "text"],
    ["txn", "LOGDIR", "--json"],
    ["groups", "LOGDIR"],
    ["groups", "LOGDIR", "--format", "text"],
    ["groups", "LOGDIR", "--json"],
    ["metadata", "LOGDIR"],
    ["metadata", "LOGDIR", "--format", "text"],
    ["metadata", "LOGDIR", "--json"],
    ["metadata", "LOGDIR", "--diff", "100", "485"],
    ["export", "LOGDIR", "--out", "OUT", "--format", "ndjson"],
    ["export", "LOGDIR", "--out", "OUT", "--format", "parquet", "--json"],
]


def _args(args: list[str], logdir: Path, out: Path) -> list[str]:
    return [a.replace("LOGDIR", str(logdir)).replace("OUT", str(out)) for a in args]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_no_raw_control_reaches_the_terminal(args, logdir, tmp_path):
    code, seen = on_terminal(_args(args, logdir, tmp_path / "out"), tmp_path)
    assert "Traceback" not in seen and "internal error" not in seen, seen[-2000:]
    assert code in (0, 1), seen[-2000:]
    assert leaks(seen) == []


# The text views to a pipe or a file: read by people too (less, an editor), so escaped the
# same; only --escape none (Kafka's bytes) and JSON (its own escapes) are left exact there.
# (On a pipe the text view is the default: each command once, and a few tables asked for.)
_TEXT = [[x for x in a if x not in ("--format", "text")] for a in COMMANDS
         if "--json" not in a and "none" not in a and a[0] != "export"]
PIPED = [a for i, a in enumerate(_TEXT) if a not in _TEXT[:i]] + [
    [*a, "--format", "table"] for a in (["dump", "LOGDIR", "--data"], ["groups", "LOGDIR"], ["txn", "LOGDIR"],
                                        ["metadata", "LOGDIR"], ["info", "LOGDIR"], ["verify", "LOGDIR"])]


@pytest.mark.parametrize("args", PIPED, ids=" ".join)
def test_no_raw_control_in_text_to_a_pipe(args, logdir, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kdump", *_args(args, logdir, tmp_path / "out")],
                          capture_output=True, env=subprocess_env(), cwd=tmp_path, timeout=120)
    out = proc.stdout.decode("utf-8", "surrogateescape")
    err = proc.stderr.decode("utf-8", "surrogateescape")
    assert proc.returncode in (0, 1), err[-2000:]
    assert leaks(out) == [] and leaks(err) == []


@pytest.mark.parametrize("args", [["groups", "LOGDIR"], ["txn", "LOGDIR"], ["metadata", "LOGDIR"],
                                  ["dump", "LOGDIR", "--data"], ["info", "LOGDIR"]], ids=" ".join)
def test_no_raw_control_reaches_a_narrow_terminal(args, logdir, tmp_path):
    """Too narrow for a table, each row is a block of lines (tables.blocks): escaped too."""
    code, seen = on_terminal(_args(args, logdir, tmp_path), tmp_path, columns=30)
    assert code in (0, 1), seen[-2000:]
    assert leaks(seen) == []


def test_names_are_shown_escaped(logdir, tmp_path):
    """What is escaped is still there to read: each payload's escaped form is shown."""
    code, seen = on_terminal(["groups", str(logdir), "--format", "text"], tmp_path)
    for p in PAYLOADS:
        shown = p.translate(__import__("kdump.words", fromlist=["x"]).CONTROL_ESCAPES)
        assert shown in seen, (p, seen[:3000])


@pytest.mark.skipif(_accel.built() is None, reason="C accelerator not built")
@pytest.mark.parametrize("speedups", ["0", "1"])
def test_header_keys_escaped_on_both_paths(logdir, tmp_path, speedups):
    """The text view's header keys, C path and Python path alike, to a pipe too."""
    env = {**subprocess_env(), "KDUMP_NO_SPEEDUPS": speedups}
    topic = next(p for p in logdir.iterdir() if p.name.startswith("osc\x1b]0;PWNED-TITLE"))
    out = subprocess.run([sys.executable, "-m", "kdump", "dump", str(topic), "--records", "--format", "text"],
                         capture_output=True, env=env, cwd=tmp_path).stdout.decode("utf-8", "surrogateescape")
    assert "headerKeys: [osc\\x1b]0;PWNED-TITLE\\x07bel,osc\\x1b]0;PWNED-TITLE\\x07bel]" in out
    assert leaks(out) == []


def _piped(args: list[str], cwd: Path) -> bytes:
    return subprocess.run([sys.executable, "-m", "kdump", *args], capture_output=True, env=subprocess_env(),
                          cwd=cwd, timeout=120).stdout


def test_escape_none_is_kafkas_bytes_on_a_pipe_only(logdir, tmp_path):
    """--escape none keeps its contract where it is used (a diff against kafka-dump-log.sh, a
    script): DumpLogSegments' bytes on a pipe. A terminal still gets them escaped, and a note."""
    topic = next(p for p in logdir.iterdir() if p.name.startswith("osc\x1b]0;PWNED-TITLE"))
    args = ["dump", str(topic), "--data", "--format", "text", "--escape", "none"]
    raw = PAYLOADS[0].encode()
    line = b"headerKeys: [" + raw + b"," + raw + b"] key: " + raw + b" payload: " + raw + b"\n"
    assert line in _piped(args, tmp_path)
    code, seen = on_terminal(args, tmp_path)
    assert code == 0 and leaks(seen) == []
    assert "kdump: note: --escape none writes Kafka's bytes to a pipe or a file" in seen
    assert "key: osc\\x1b]0;PWNED-TITLE\\x07bel payload: osc\\x1b]0;PWNED-TITLE\\x07bel" in seen


def test_json_on_a_terminal_is_the_same_json(logdir, tmp_path):
    """On a terminal JSON's raw C1, bidi and zero-width characters are written as JSON escapes:
    each line parses to the objects a pipe gets."""
    args = ["dump", str(logdir), "--data", "--json", "-q", "-j", "1"]
    piped = [json.loads(line) for line in _piped(args, tmp_path).decode().split("\n")[:-1]]
    code, seen = on_terminal(args, tmp_path)
    assert code == 0 and leaks(seen) == []
    assert [json.loads(line) for line in seen.replace("\r\n", "\n").split("\n")[:-1]] == piped
    assert any("\u202e" in json.dumps(o, ensure_ascii=False) for o in piped)       # the data is there
