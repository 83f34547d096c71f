"""``kdump recover`` under attack (issue #27): its exit status, the log start cut, salvage's memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.damage import make_partition, tree_bytes, write_at
from support.run import run_kdump

from kdump.format.metadata import CLEAN_SHUTDOWN_FILE


@pytest.mark.parametrize("clean_shutdown", [False, True])
def test_a_garbage_index_exits_1_in_recover_as_in_verify(tmp_path, clean_shutdown):
    """Item 7: ``recover`` exited 0 on a segment whose ``.index`` is garbage, ``verify`` 1. After a
    clean shutdown the broker trusts the index (readers are sent astray); without one it
    rebuilds it. Either way it is damage in the one registry, and both exit 1."""
    d = make_partition(tmp_path / "logs")
    index = d / f"{9:020d}.index"
    write_at(index, 0, b"\x7f" * 8)
    if clean_shutdown:
        (d.parent / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    before = tree_bytes(tmp_path)
    assert run_kdump("verify", d).code == 1
    r = run_kdump("recover", d)
    assert r.code == 1, r.out
    assert f"{index.name}: index_past_end" in r.out if clean_shutdown else f"rebuild_index  {index.name}" in r.out
    assert tree_bytes(tmp_path) == before
    # A sane index is no damage: both exit 0.
    write_at(index, 0, bytes(8))
    (d / index.name).write_bytes(b"")
    assert run_kdump("verify", d).code == 0 and run_kdump("recover", d).code == 0
