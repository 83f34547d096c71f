"""``levels._walk_pages``: a listing that comes a page at a time in S3's order (a dir's name
with its "/") hands partition dirs on as soon as no name still to come sorts before them, and
in the end in exactly the order a whole listing gives (topic, partition number, state)."""

from __future__ import annotations

import random

import pytest

from kdump.storage import fs, levels, logdir


class _Entry:
    def __init__(self, name: str, is_dir: bool) -> None:
        self.name, self._dir, self.path = name, is_dir, "s3://b/logs/" + name

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return self._dir

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return not self._dir

    def is_symlink(self) -> bool:
        return False


def _names(rng: random.Random) -> list[str]:
    topics = ["a", "a-1", "a-b", "a.b", "a_b", "A", "__consumer_offsets", "t", "t-1-2", "z9", "s-"]
    out = {f"{rng.choice(topics)}-{rng.randrange(0, 120)}" for _ in range(300)}
    out |= {f"t-{rng.randrange(0, 5)}.{'0' * 31}{rng.randrange(10)}-delete" for _ in range(5)}
    return sorted(out)


@pytest.mark.parametrize("seed", range(20))
def test_partitions_come_in_the_order_of_a_whole_listing(seed, monkeypatch):
    rng = random.Random(seed)
    dirs = _names(rng)
    files = ["meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint.swap"]
    entries = sorted([_Entry(n, True) for n in dirs] + [_Entry(n, False) for n in files],
                     key=lambda e: e.name + "/" if e._dir else e.name)
    size = rng.randrange(1, 40)
    pages = [entries[i:i + size] for i in range(0, len(entries), size)]
    taken = []

    def paged():
        for page in pages:
            taken.append(len(page))
            yield page

    monkeypatch.setattr(fs, "named", lambda d, name: [e for e in entries if e.name.startswith(name)])
    handed: list = []
    own: list = []

    for level in levels._walk_pages("s3://b/logs", paged()):
        own.extend(f.name for f in level.files)
        handed.append((sum(taken), [p.name for p in level.partitions]))
    order = [name for _, batch in handed for name in batch]
    expected = [p.name for p in sorted(levels.Pending(*logdir.parse_partition_dir(n)[:2],
                                                      logdir.parse_partition_dir(n)[2] or "", "", n) for n in dirs)]
    assert order == expected
    assert own == sorted(files)
    assert len(handed) > 2              # handed on in pieces, before the listing ended
    assert handed[1][0] < len(entries)
