"""Docs kept honest: README examples run, man pages match the CLI, every command has help."""

from __future__ import annotations

import re
import shlex
import shutil

import pytest
from kdumptest import ROOT, run_kdump

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


def _examples():
    for block in BLOCKS[1:]:
        for line in block.strip().splitlines():
            if line.startswith("kdump "):
                yield line


WRITES = ("--truncate", "--apply", "--rebuild", "--salvage", "export")


@pytest.fixture(scope="module")
def shared_copy(tmp_path_factory):
    """One copy of the fixtures for the read-only examples."""
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "fixtures", root / "fixtures")
    return root


@pytest.mark.parametrize("line", list(_examples()))
def test_readme_example_runs(line, tmp_path, monkeypatch, shared_copy):
    """Every `kdump ...` line of the README runs against a copy of the shipped fixtures.

    A pipe is cut off (its kdump side runs); output paths under /tmp go to a temporary
    directory; examples that write get a fresh copy of their own.
    """
    command = line.split(" | ")[0]
    args = shlex.split(command)[1:]
    if "--engine" in args and "spark" in args:
        pytest.importorskip("pyspark")
    if any(w in args for w in WRITES):
        shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
        monkeypatch.chdir(tmp_path)
    else:
        monkeypatch.chdir(shared_copy)
    args = [a.replace("/tmp/", f"{tmp_path}/out-") if a.startswith("/tmp/") else a for a in args]
    r = run_kdump(*args)
    assert r.code in (0, 1), (line, r.code, r.err)
    assert "Traceback" not in r.err and "internal error" not in r.err
    assert r.out or r.code == 0 or "export" in args


def test_man_pages_are_current():
    from kdump.manpage import pages

    generated = pages()
    committed = {p.name: p.read_text() for p in (ROOT / "man").glob("*.1")}
    assert set(committed) == set(generated), "run: python -m kdump.manpage man/"
    for name, text in generated.items():
        assert committed[name] == text, f"man/{name} is out of date: run python -m kdump.manpage man/"


def test_every_command_has_help_and_a_man_page():
    import click

    from kdump.cli.app import cli

    ctx = click.Context(cli, info_name="kdump")
    for name in cli.list_commands(ctx):
        r = run_kdump(name, "--help")
        assert r.code == 0 and "Usage: kdump" in r.out, name
        assert (ROOT / "man" / f"kdump-{name}.1").exists(), name
        assert f"kdump {name}" in README, f"README does not mention `kdump {name}`"
