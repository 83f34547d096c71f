"""An operator's second day: the frictions a new user met, each pinned by a test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kdump import errors
from support.run import FIXTURES, ROOT

REGISTRY = FIXTURES / "schemas" / "registry"


def _without(module: str, tmp_path) -> dict[str, str]:
    """An environment in which ``import module`` fails, as on a host without the extra."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / f"{module}.py").write_text(f'raise ImportError("No module named {module!r}")\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_a_missing_schemas_extra_is_exit_3_with_the_real_package_name(tmp_path):
    """Without fastavro the run stops at the first Avro record with one line and exit 3 (it
    printed `<decode failed: ...>` on every record and exited 0), and the hint installs
    kafka-kdump, never the unrelated `kdump` of PyPI."""
    p = subprocess.run([sys.executable, "-m", "kdump", "dump", str(REGISTRY / "orders-avro-0"),
                        "--value-decoder", "avro", "--end-offset", "1"],
                       capture_output=True, text=True, env=_without("fastavro", tmp_path), cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    assert "decode failed" not in p.stdout
    errs = [line for line in p.stderr.splitlines() if not line.startswith("kdump: note:")]
    assert errs[0] == "kdump: error: AVRO schemas need kdump's 'schemas' extra (No module named 'fastavro')"
    assert errs[1].startswith("kdump: hint: ") and errs[1].endswith("[schemas]'")
    assert "'kdump[" not in p.stderr and "Traceback" not in p.stderr


def test_install_hint_names_the_distribution_outside_a_clone(monkeypatch):
    real_isfile = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: False if p.endswith("pyproject.toml") else real_isfile(p))
    assert errors.install_hint("parquet") == "pip install 'kafka-kdump[parquet]'"


def test_install_hint_in_a_clone_is_its_editable_install(monkeypatch):
    monkeypatch.chdir(ROOT)
    hint = errors.install_hint("remote")
    assert hint.endswith(" install -e '.[remote]'"), hint


def test_no_hint_names_the_unrelated_pypi_project():
    """`kdump` on PyPI is another project: no message, README line or man page tells anyone to
    install it."""
    offenders = []
    for base in ("kdump", "man", "docs"):
        for root, _dirs, files in os.walk(ROOT / base):
            for name in files:
                if name.endswith((".py", ".md", ".1", ".c")):
                    path = os.path.join(root, name)
                    text = open(path, encoding="utf-8", errors="replace").read()
                    if "install 'kdump[" in text or "install kdump[" in text:
                        offenders.append(os.path.relpath(path, ROOT))
    readme = (ROOT / "README.md").read_text()
    if "install 'kdump[" in readme:
        offenders.append("README.md")
    assert not offenders


def _all_option_names() -> set[str]:
    import click

    from kdump.cli.app import cli

    ctx = click.Context(cli, info_name="kdump")
    names = {o for p in cli.params for o in getattr(p, "opts", ())}
    for sub in cli.list_commands(ctx):
        for p in cli.get_command(ctx, sub).params:
            names.update(getattr(p, "opts", ()))
            names.update(getattr(p, "secondary_opts", ()))
    return names


def test_man_pages_list_every_command_whole_and_name_only_real_options():
    import re

    from kdump.cli.manpage import pages

    generated = pages()
    commands = sorted(n[len("kdump-"):-2] for n in generated if n != "kdump.1")
    main = generated["kdump.1"]
    see_also = main.split(".SH SEE ALSO\n", 1)[1]
    assert all(f"kdump-{c}(1)" in see_also for c in commands)
    listed = main.split(".SH COMMANDS", 1)[1].split(".SH OPTIONS", 1)[0]
    assert "..." not in listed                  # no command's sentence cut off
    # Kafka's own tools' options that a page cites by name (kafka-transactions.sh find-hanging).
    kafka_tools = {"--max-transaction-timeout"}
    options = _all_option_names() | {"--help"} | kafka_tools
    for name, text in generated.items():
        named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text.replace("\\-", "-")))
        assert named <= options, (name, sorted(named - options))


def test_bootstrap_checkpoint_is_no_partition(tmp_path):
    """A log dir's bootstrap.checkpoint (KRaft's bootstrap records) was summarised by `info` as a
    partition named after the log dir, and exported under __HIVE_DEFAULT_PARTITION__."""
    import json

    from support.run import run_kdump

    logdir = FIXTURES / "broker" / "all-shapes"
    r = run_kdump("info", logdir, "--json")
    assert r.code == 0, r.err
    rows = [json.loads(line) for line in r.out.splitlines()]
    assert all(row["topic"] is not None for row in rows)
    assert f"kdump: note: {logdir}/bootstrap.checkpoint: the KRaft bootstrap snapshot, not a partition" in r.err
    out = tmp_path / "export"
    r = run_kdump("export", logdir, "--out", out, "--format", "ndjson", "--quiet")
    assert r.code == 0, r.err
    written = [os.path.relpath(os.path.join(d, n), out) for d, _s, names in os.walk(out) for n in names]
    assert written and not [w for w in written if "__HIVE_DEFAULT_PARTITION__" in w]
    r = run_kdump("dump", logdir / "bootstrap.checkpoint")      # named alone, it is read
    assert r.code == 0 and "baseOffset: 0" in r.out


def test_groups_judge_expiry_at_the_newest_record_not_the_clock():
    """On a copy a week old every offset was "expired": expiry is judged at the newest
    __consumer_offsets record unless --now says otherwise."""
    import json

    from support.run import run_kdump

    logdir = FIXTURES / "broker" / "all-shapes"
    r = run_kdump("groups", logdir, "--json")
    assert r.code == 0, r.err
    objs = [json.loads(line) for line in r.out.splitlines()]
    header = next(o for o in objs if o["object"] == "offsets_topic")
    assert header["now_from"] == "the newest __consumer_offsets record"
    offsets = [o for g in objs if g["object"] == "group" for o in g["offsets"]]
    assert offsets and not any(o["expired"] for o in offsets)
    late = run_kdump("groups", logdir, "--json", "--now", "2030-01-01T00:00:00Z")
    objs = [json.loads(line) for line in late.out.splitlines()]
    assert all(o["expired"] for g in objs if g["object"] == "group" for o in g["offsets"])
    assert run_kdump("groups", logdir, "--now", "clock").code == 0


def test_a_fatal_error_is_not_followed_by_verified_0_files(tmp_path):
    from support.run import run_kdump

    r = run_kdump("verify", tmp_path / "nothing-here")
    assert r.code == 3
    assert r.err == f"kdump: error: {tmp_path / 'nothing-here'}: cannot read: no such file or directory\n"


def test_metadata_on_a_zookeeper_era_log_dir_says_where_the_metadata_is():
    from support.run import REAL, run_kdump

    logdir = REAL / "seanorth__kafka-server" / "kafka-logs"
    r = run_kdump("metadata", logdir)
    assert r.code == 2
    assert r.err == (f"kdump: error: {logdir}: no __cluster_metadata-0 partition here: {logdir}/meta.properties is "
                     "a ZooKeeper-mode broker's (version 0, broker.id 0); its cluster metadata lives in ZooKeeper, "
                     "not in the log dir\n")


def test_metadata_diff_takes_a_reordered_endpoint_list_for_no_change():
    from kdump.state.cluster_image import Image
    from kdump.state.image_objects import diff

    a, b = Image(), Image()
    a.state["brokers"] = {"1": {"endpoints": ["PLAINTEXT://h:9092", "CONTROLLER://h:9093"], "rack": None}}
    b.state["brokers"] = {"1": {"endpoints": ["CONTROLLER://h:9093", "PLAINTEXT://h:9092"], "rack": None}}
    assert diff(a, b) == []
    b.state["brokers"]["1"]["endpoints"] = ["CONTROLLER://h:9093", "PLAINTEXT://h:9094"]
    assert [c["path"] for c in diff(a, b)] == ["brokers/1/endpoints"]


class _Terminal:
    """stderr as a terminal of some width."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_stderr_lines_fold_between_words_on_a_terminal(monkeypatch):
    """The verify summary at 100 columns was cut mid-number by the terminal ("1\\n029044 bytes")."""
    import sys

    from kdump.render import diagnostics

    line = ("kdump: verified 17 files (4 segments, 4195750 bytes): 14 ok, 3 damaged, 0 torn tail, 0 unreadable; "
            "1029044 bytes in 1 segment would be cut by a broker's recovery")
    for width in (40, 80, 100):
        monkeypatch.setenv("COLUMNS", str(width))
        term = _Terminal()
        monkeypatch.setattr(sys, "stderr", term)
        diagnostics.say(line)
        lines = term.text.splitlines()
        assert all(len(x) <= width for x in lines)
        assert " ".join(x.strip() for x in lines) == line          # nothing cut inside a word
    monkeypatch.setattr(sys, "stderr", piped := _Terminal())
    piped.isatty = lambda: False                                   # type: ignore[method-assign]
    diagnostics.say(line)
    assert piped.text == line + "\n"


def test_a_table_on_a_terminal_decodes_as_the_pipe_does(monkeypatch):
    """`dump PARTITION --data --offsets-decoder` showed raw bytes on a terminal where the piped
    text decoded them, and a __cluster_metadata table only record types."""
    import io

    from support.run import run_kdump

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "200")
    offsets = FIXTURES / "broker" / "all-shapes" / "__consumer_offsets-0"
    r = run_kdump("dump", offsets, "--data", "--offsets-decoder", "--end-offset", "0", out=Tty())
    assert r.code == 0, r.err
    assert '"commitTimestamp":1795485361740' in r.out.replace("\n", "").replace(" ", "")
    metadata = FIXTURES / "broker" / "all-shapes" / "__cluster_metadata-0"
    r = run_kdump("dump", metadata, "--data", "--end-offset", "5", out=Tty())
    assert r.code == 0, r.err
    assert '"type":' in r.out and '"data":' in r.out


def test_the_readme_incident_capture_is_what_verify_prints_at_100_columns(tmp_path, monkeypatch):
    """The README's 100-column capture of the incident had drifted from the real output, and the
    table hid intact_beyond (the salvage hint) among the counted info findings."""
    import io
    import re
    import shutil
    import sys

    from support.run import REAL, run_kdump

    readme = (ROOT / "README.md").read_text()
    start = readme.index("1. **`verify`** reads every file")
    block = readme[readme.index("```text\n", start) + len("```text\n"):readme.index("   ```\n", start)]
    want = [line[3:] for line in block.splitlines()]
    import tempfile

    # A path as long as the README's /tmp/kdump-incident, so that lines fold where its do.
    incident = Path(tempfile.mkdtemp(prefix="kdump-", dir="/tmp"))
    assert len(str(incident)) == len("/tmp/kdump-incident")
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    request_cleanup = shutil.rmtree
    part = incident / "orders-0"
    shutil.copytree(REAL / "pinterest__tiered-storage/ts-common/src/test/resources/log-files/timeindex_test", part)
    seg = part / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[20000] = 0xFF
    seg.write_bytes(bytes(data))

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    try:
        r = run_kdump("verify", incident, out=Tty(), err=err)
    finally:
        request_cleanup(incident, ignore_errors=True)
    assert r.code == 1
    got = (r.out + r.err).replace(str(incident), "/tmp/kdump-incident")
    got = re.sub(r"\x1b\[[0-9;]*m", "", got)
    assert [line.rstrip() for line in got.splitlines()] == [line.rstrip() for line in want]


@pytest.mark.parametrize("tail, kind", [(5, "torn_tail"), (7, "torn_tail"), (12, "zero_tail"), (40, "zero_tail")])
def test_a_cut_header_is_not_taken_for_a_zero_tail(tmp_path, tail, kind):
    """Zero bytes at the end, fewer than a base offset's 8, are the high bytes of the next
    batch's base offset (a header cut off), not a preallocated tail."""
    import json

    from support.run import run_kdump

    part = tmp_path / "t-0"
    part.mkdir()
    src = (FIXTURES / "generated" / "headers-0" / "00000000000000000000.log").read_bytes()
    (part / "00000000000000000000.log").write_bytes(src + bytes(tail))
    r = run_kdump("verify", part / "00000000000000000000.log", "--json")
    (row,) = [json.loads(line) for line in r.out.splitlines()]
    tails = [f for f in row["findings"] if f["kind"] in ("torn_tail", "zero_tail")]
    assert [(f["kind"], f["position"]) for f in tails] == [(kind, len(src))]


def test_a_table_on_a_pipe_fits_the_terminal_of_stderr(tmp_path):
    """`kdump dump --format table | head` on an 80-column terminal was drawn 160 wide."""
    import pty

    main, other = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(other, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 72, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run([sys.executable, "-m", "kdump", "dump", str(FIXTURES / "broker/all-shapes/txn-0"),
                        "--format", "table", "--color", "never"], stdout=subprocess.PIPE, stderr=other, env=env,
                       cwd=tmp_path, text=True)
    os.close(other)
    os.close(main)
    assert p.returncode == 0
    rows = [line for line in p.stdout.splitlines() if ".log" not in line]     # a file's title is never cut
    assert rows and max(len(line) for line in rows) <= 72
