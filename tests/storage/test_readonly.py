"""The read-only guarantee, over the whole fixture tree, and symlink refusal on writes.

Every read-only command (and option that changes what is read or printed) runs over a
private copy of ``fixtures/``; afterwards no file's bytes, size, mtime or mode may have
changed, no file or directory may have appeared or gone, and no directory's mtime may
have moved (which would betray a temporary file created and removed). A command may
report damage (some fixtures are damaged on purpose) but never crash.

The writing commands (``verify --truncate``, ``index --rebuild``, ``recover --apply``)
must refuse to write through a symbolic link that leads out of the directory they were
pointed at, and leave its target untouched.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections import defaultdict
from pathlib import Path

import pytest

from kdump.encode import build_v2_batch
from kdump.storage import logdir
from support.run import FIXTURES, run_kdump


def tree_state(root: Path) -> dict[str, tuple]:
    """Bytes, size, mtime and mode of every file, and mtime and mode of every directory."""
    state: dict[str, tuple] = {}
    for dirpath, dirs, names in os.walk(root):
        st = os.lstat(dirpath)
        state[dirpath + os.sep] = ("dir", st.st_mtime_ns, st.st_mode)
        for name in names:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            data = os.readlink(p).encode() if stat.S_ISLNK(st.st_mode) else Path(p).read_bytes()
            state[p] = (data, st.st_size, st.st_mtime_ns, st.st_mode)
    return state


def assert_unchanged(before: dict, after: dict) -> None:
    created = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    assert not created, f"created: {created[:10]}"
    assert not removed, f"removed: {removed[:10]}"
    assert not changed, f"changed: {changed[:10]}"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the whole fixture tree, and its state before any command ran."""
    root = tmp_path_factory.mktemp("readonly") / "fixtures"
    shutil.copytree(FIXTURES, root, symlinks=True)
    return root, tree_state(root)


def files_by_kind(root: Path) -> dict[str, list[str]]:
    """Every file kdump reads, grouped by kind (leftover suffixes are their own group)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            found = logdir.classify(name)
            if found is not None:
                kind, _, leftover = found
                groups[kind + (leftover or "")].append(os.path.join(dirpath, name))
    return dict(groups)


def log_dirs(root: Path) -> list[str]:
    """Directories holding partition directories: what ``recover`` takes."""
    out = set()
    for dirpath, dirs, _ in os.walk(root):
        if any(logdir.parse_partition_dir(d) is not None for d in dirs):
            out.add(dirpath)
    return sorted(out)


def run_readonly(tree, *args, check: bool = True):
    """Run a command that must not write; ``check=False`` defers the tree comparison."""
    root, before = tree
    result = run_kdump(*args)
    # 3 is "could not complete", e.g. an index whose segment is not in the fixtures.
    assert result.code in (0, 1, 2, 3), f"exit {result.code}: {result.err[-2000:]}"
    assert "internal error" not in result.err and "Traceback" not in result.err, result.err[-2000:]
    if check:
        assert_unchanged(before, tree_state(root))
    return result


WHOLE_TREE = [
    ("dump",),
    ("dump", "--records"),
    ("dump", "--data"),
    ("dump", "--json"),
    ("dump", "--records", "--json"),
    ("dump", "--data", "--json", "--encoding", "hex"),
    ("dump", "--data", "--no-auto-decode", "--value-decoder", "json"),
    ("verify",),
    ("verify", "--deep", "--json"),
    ("info",),
    ("info", "--json"),
]


@pytest.mark.parametrize("args", WHOLE_TREE, ids=" ".join)
def test_readonly_command_over_the_whole_tree(tree, args):
    root, _ = tree
    result = run_readonly(tree, *args, str(root))
    assert result.out


def test_table_output_is_readonly(tree):
    # Rich tables are slow to lay out (~1 ms a row), so this one reads the generated sets only.
    root, _ = tree
    run_readonly(tree, "dump", "--data", "--format", "table", "--encoding", "base64", str(root / "generated"))
    run_readonly(tree, "verify", "--format", "table", str(root / "generated"))


def test_dump_of_every_file_kind(tree):
    root, _ = tree
    groups = files_by_kind(root)
    # Every kind kdump knows should be in the fixtures, or this test proves less than it says.
    assert {"log", "index", "timeindex", "txnindex", "producer_snapshot", "kraft_snapshot",
            "leader_epoch_checkpoint", "offset_checkpoint", "partition_metadata", "meta_properties",
            "quorum_state", "clean_shutdown"} <= set(groups), sorted(groups)
    for kind, paths in sorted(groups.items()):
        variants = [("dump",), ("dump", "--json")]
        if kind not in ("log", "kraft_snapshot"):      # whole segments are dumped deeply above
            variants.append(("dump", "--records", "--data", "--json"))
        for args in variants:
            run_readonly(tree, *args, *paths, check=False)
    assert_unchanged(tree[1], tree_state(root))


def test_verify_of_every_file_kind(tree):
    root, _ = tree
    for kind, paths in sorted(files_by_kind(root).items()):
        run_readonly(tree, "verify", "--json", *paths, check=False)
    assert_unchanged(tree[1], tree_state(root))


@pytest.mark.parametrize("command", ["index", "timeindex"])
@pytest.mark.parametrize("options", [(), ("--verify",), ("--sanity",), ("--verify-index-only", "--json")],
                         ids=lambda o: " ".join(o) or "list")
def test_index_commands_without_rebuild(tree, command, options):
    root, _ = tree
    groups = files_by_kind(root)
    paths = [p for kind, ps in groups.items() if kind.startswith(command) for p in ps]
    assert paths
    run_readonly(tree, command, *options, *paths)


@pytest.mark.parametrize("options", [(), ("--json", "--full")], ids=lambda o: " ".join(o) or "plan")
def test_recover_without_apply(tree, options):
    root, _ = tree
    dirs = log_dirs(root)
    assert len(dirs) >= 10
    run_readonly(tree, "recover", *options, *dirs)


def test_export_writes_only_its_output(tree, tmp_path):
    root, _ = tree
    out = tmp_path / "export"
    run_readonly(tree, "export", str(root / "generated"), "--out", str(out), "--format", "ndjson", "-q")
    assert any(out.rglob("*"))


# -- writing commands and symlinks ---------------------------------------------------------------

def _damaged_segment() -> bytes:
    good = b"".join(build_v2_batch([(0, 1_700_000_000_000, b"k", b"v" * 20)], base_offset=i) for i in range(4))
    return good + b"\x00" * 7 + good[:50]          # garbage after the last good batch: truncatable


def _outside_and_link(tmp_path: Path, name: str, data: bytes) -> tuple[Path, Path, Path]:
    """A partition dir whose ``name`` is a symlink to a file outside the log dir."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    target = outside / name
    target.write_bytes(data)
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / name).symlink_to(target)
    return outside, part, target


def _assert_refused(result, outside_before: dict, outside: Path, link: Path) -> None:
    assert result.code != 0, result
    assert "internal error" not in result.err and "Traceback" not in result.err, result.err
    assert_unchanged(outside_before, tree_state(outside))
    assert link.is_symlink(), "the link was replaced by a file"


def test_verify_truncate_refuses_a_symlinked_segment(tmp_path):
    outside, part, target = _outside_and_link(tmp_path, "00000000000000000000.log", _damaged_segment())
    before = tree_state(outside)
    result = run_kdump("verify", "--truncate", str(part))
    _assert_refused(result, before, outside, part / "00000000000000000000.log")


def test_index_rebuild_refuses_a_symlinked_index(tmp_path):
    outside, part, target = _outside_and_link(tmp_path, "00000000000000000000.index", b"\x00" * 16)
    (part / "00000000000000000000.log").write_bytes(_damaged_segment()[:-57])
    before = tree_state(outside)
    result = run_kdump("index", "--rebuild", str(part / "00000000000000000000.index"))
    _assert_refused(result, before, outside, part / "00000000000000000000.index")


def test_index_rebuild_refuses_a_symlinked_log(tmp_path):
    outside, part, target = _outside_and_link(tmp_path, "00000000000000000000.log", _damaged_segment()[:-57])
    before = tree_state(outside)
    result = run_kdump("index", "--rebuild", str(part / "00000000000000000000.log"))
    assert not any(p.name.endswith((".index", ".timeindex")) for p in outside.iterdir())
    assert_unchanged(before, tree_state(outside))
    assert "internal error" not in result.err, result.err


def test_recover_apply_refuses_a_symlinked_segment(tmp_path):
    outside, part, target = _outside_and_link(tmp_path, "00000000000000000000.log", _damaged_segment())
    before = tree_state(outside)
    result = run_kdump("recover", "--apply", "--yes", "--full", str(part.parent))
    _assert_refused(result, before, outside, part / "00000000000000000000.log")


def test_recover_apply_does_not_follow_a_symlinked_partition_dir(tmp_path):
    outside = tmp_path / "elsewhere" / "t-0"
    outside.mkdir(parents=True)
    (outside / "00000000000000000000.log").write_bytes(_damaged_segment())
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "t-0").symlink_to(outside, target_is_directory=True)
    before = tree_state(outside)
    result = run_kdump("recover", "--apply", "--yes", "--full", str(logs))
    assert "internal error" not in result.err and "Traceback" not in result.err, result.err
    assert_unchanged(before, tree_state(outside))
    assert (logs / "t-0").is_symlink()
