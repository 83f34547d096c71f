"""Committed and pending offsets of ``__consumer_offsets``, replayed as Kafka 4.3.1's group
coordinator does at load (``OffsetMetadataManager.replay`` and ``replayEndTransactionMarker``).

The rules, in our words:

- A commit record is pending when its batch has a producer id (any id but -1: the loader
  hands every data batch's producer id to the replay, transactional or not), committed
  otherwise. A pending commit is kept per producer id and per group/topic/partition, the
  latest record winning; a committed one replaces the partition's committed offset.
- Each offset remembers the log offset of its record.
- A tombstone (null value), whatever its batch, deletes the committed offset of its
  group/topic/partition at once and also the pending commits of every producer with an open
  transaction on that partition.
- A COMMIT marker moves its producer's pending commits into the committed store, each only
  if the partition has no committed offset or the committed one was written at a lower log
  offset (a plain commit written after the transactional one, before the marker, wins). An
  ABORT marker drops them. A marker of a producer with nothing pending does nothing.
- Deleting a group (a group metadata tombstone) removes the group, not its offsets: the
  coordinator deletes those with their own tombstones first (``deleteAllOffsets``, which also
  writes a tombstone for a partition that only has pending commits).
"""

from __future__ import annotations

from typing import Any

from kdump.format.batch import NO_PRODUCER_ID

Key = tuple[str, str, int]          # group, topic, partition


class OffsetStore:
    def __init__(self) -> None:
        self.committed: dict[Key, dict[str, Any]] = {}
        self.pending: dict[int, dict[Key, dict[str, Any]]] = {}     # by producer id
        self.open: dict[Key, set[int]] = {}                           # producers with pending commits

    def replay(self, record_offset: int, producer_id: int, producer_epoch: int, key: Key,
               value: dict[str, Any] | None) -> None:
        if value is None:
            self.committed.pop(key, None)
            for pid in self.open.pop(key, ()):
                self.pending.get(pid, {}).pop(key, None)
            return
        group, topic, partition = key
        entry = {"topic": topic, "partition": partition, "offset": value["offset"],
                 "leader_epoch": value.get("leaderEpoch", -1), "metadata": value.get("metadata"),
                 "commit_timestamp": value.get("commitTimestamp"),
                 "expire_timestamp": value.get("expireTimestamp", -1),
                 "record_offset": record_offset}
        if producer_id == NO_PRODUCER_ID:
            self.committed[key] = entry
        else:
            entry.update(producer_id=producer_id, producer_epoch=producer_epoch)
            self.pending.setdefault(producer_id, {})[key] = entry
            self.open.setdefault(key, set()).add(producer_id)

    def end_transaction(self, producer_id: int, commit: bool) -> None:
        pending = self.pending.pop(producer_id, None)
        if pending is None:
            return
        for key in pending:
            pids = self.open.get(key)
            if pids is not None:
                pids.discard(producer_id)
                if not pids:
                    del self.open[key]
        if not commit:
            return
        for key, entry in pending.items():
            current = self.committed.get(key)
            if current is None or entry["record_offset"] > current["record_offset"]:
                self.committed[key] = {k: v for k, v in entry.items() if k not in ("producer_id", "producer_epoch")}

    def by_group(self) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """group -> (committed, pending) offsets, each sorted by topic-partition (pending then
        by producer id)."""
        out: dict[str, tuple[list, list]] = {}
        for (g, _, _), e in sorted(self.committed.items()):
            out.setdefault(g, ([], []))[0].append(e)
        for entries in self.pending.values():
            for (g, _, _), e in entries.items():
                out.setdefault(g, ([], []))[1].append(e)
        for _, pending in out.values():
            pending.sort(key=lambda e: (e["topic"], e["partition"], e["producer_id"]))
        return out
