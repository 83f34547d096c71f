"""Docs kept honest: README examples run, man pages match the CLI, every command has help."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from support.run import ROOT, run_kdump

README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.S)


def test_readme_starts_with_the_two_fresh_machine_commands():
    first = BLOCKS[0].strip().splitlines()
    assert len(first) == 2
    install_run, install_test = first
    assert "pip install -e ." in install_run and "kdump dump fixtures/" in install_run
    assert "pip install -e '.[test" in install_test and "pytest" in install_test
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = install_test.split("&&")[-1].strip().replace(".venv/bin/", "")
    assert test_command in ci, "CI must run the README's test command"


def _example_blocks():
    """The README's sh blocks after the install lines that run kdump, one list of lines each."""
    for block in BLOCKS[1:]:
        lines = [line for line in block.strip().splitlines() if line and not line.startswith(("#", "eval", "_KDUMP"))]
        if any(line.startswith("kdump ") for line in lines):
            yield lines


def _git_status() -> str:
    r = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored=no"], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    return r.stdout


@pytest.mark.parametrize("lines", list(_example_blocks()), ids=lambda lines: lines[-1][:60])
def test_readme_examples_run_and_leave_the_checkout_as_it_was(lines, tmp_path, monkeypatch, request):
    """Each README block runs as written, in order, from the checkout itself: `kdump ...`
    lines in-process (a pipe is cut off: its kdump side runs), shell lines (`cp`, `mkdir`)
    with bash. Paths under /tmp go to a temporary directory. The block runs twice, with the
    same exit statuses: an example must be re-runnable. Afterwards `git status` of the
    checkout is what it was: examples that write must work on a copy."""
    monkeypatch.chdir(ROOT)
    before = _git_status()
    runs = [[], []]
    for attempt in runs:       # twice: what the first run left under /tmp must not break the second
        for line in lines:
            line = line.replace("/tmp/", f"{tmp_path}/")
            if not line.startswith("kdump "):
                subprocess.run(["bash", "-euc", line], cwd=ROOT, check=True)
                continue
            args = shlex.split(line.split(" | ")[0])[1:]
            if "--engine" in args and "spark" in args:
                from support.spark_session import _requirements

                if _requirements() is not None:
                    continue
                request.getfixturevalue("spark")    # the run's one session: kdump reuses it, no JVM of its own
            r = run_kdump(*args)
            assert r.code in (0, 1), (line, r.code, r.err)
            assert "Traceback" not in r.err and "internal error" not in r.err
            assert r.out or r.code == 0 or "export" in args or "--apply" in args, line
            attempt.append((line, r.code))
    assert runs[0] == runs[1], "a README example exits otherwise when run again"
    assert _git_status() == before, "a README example changed the checkout"


def test_man_pages_are_current():
    from kdump.cli.manpage import pages

    generated = pages()
    committed = {p.name: p.read_text() for p in (ROOT / "man").glob("*.1")}
    assert set(committed) == set(generated), "run: python -m kdump.cli.manpage man/"
    for name, text in generated.items():
        assert committed[name] == text, f"man/{name} is out of date: run python -m kdump.cli.manpage man/"


def test_every_command_has_help_and_a_man_page():
    import click

    from kdump.cli.app import cli

    ctx = click.Context(cli, info_name="kdump")
    for name in cli.list_commands(ctx):
        r = run_kdump(name, "--help")
        assert r.code == 0 and "Usage: kdump" in r.out, name
        assert (ROOT / "man" / f"kdump-{name}.1").exists(), name
        assert f"kdump {name}" in README, f"README does not mention `kdump {name}`"
