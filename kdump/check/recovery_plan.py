"""The types of a recovery plan: what ``kdump recover`` reads from a log dir, the steps it
plans for a partition (``check.loader_rule.plan_partition``) and its options."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kdump.check.broker_rule import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_MESSAGE_SIZE
from kdump.errors import KdumpError
from kdump.format.checkpoint import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from kdump.format.logdir_files import CLEAN_SHUTDOWN_FILE
from kdump.storage import fs

# Step actions.
QUARANTINE, RENAME, TRUNCATE, REBUILD, WRITE_TXN, TRIM_EPOCHS, CREATE_SEGMENT, NOTE = (
    "quarantine", "rename", "truncate", "rebuild_index", "write_txnindex", "trim_epochs", "create_segment", "note")


class Step(NamedTuple):
    action: str
    path: str                 # the file acted on ("" for notes)
    target: str | None        # new name (rename), saved cut bytes (truncate)
    position: int | None
    offset: int | None
    reason: str
    phase: int                # apply order (see apply_plan)

    def to_dict(self, directory: str) -> dict[str, Any]:
        return {"partition": directory, "action": self.action, "file": self.path or None, "target": self.target,
                "position": self.position, "offset": self.offset, "reason": self.reason}


@dataclass
class LogDirState:
    """What a partition's recovery reads from its log dir."""

    recovery_points: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    clean_shutdown: bool = False

    @classmethod
    def read(cls, logdir: str | None, partitions: set[tuple[str, int]] | None = None,
             tables: Callable[[str], dict[tuple[str, int], int]] | None = None) -> LogDirState:
        """The log dir's checkpoints, streamed; only the entries of ``partitions`` are kept
        when it is given (a checkpoint may list millions). ``tables``: a checkpoint's path ->
        its table, as the run has read it already (check.logdir_checkpoints: the same rule)."""
        from kdump.check.side_file_views import checkpoint_entries

        state = cls()
        if not logdir:
            return state
        for name, attr in ((RECOVERY_POINT_CHECKPOINT, "recovery_points"),
                           (LOG_START_OFFSET_CHECKPOINT, "log_start_offsets")):
            p = os.path.join(logdir, name)
            if tables is not None:
                getattr(state, attr).update(tables(p))
            elif fs.isfile(p):
                found = {}
                try:
                    for e in checkpoint_entries(p, name):
                        if partitions is None or (e.topic, e.partition) in partitions:
                            found[(e.topic, e.partition)] = e.offset
                except KdumpError:
                    continue        # the broker would fall back to recovering everything
                getattr(state, attr).update(found)
        state.clean_shutdown = fs.isfile(os.path.join(logdir, CLEAN_SHUTDOWN_FILE))
        return state


@dataclass
class PartitionPlan:
    directory: str
    steps: list[Step] = field(default_factory=list)
    recovery_point: int | None = None
    new_recovery_point: int | None = None
    log_end_offset: int | None = None
    damaged: bool = False                   # damage found (cut, or noted where a broker would not look)
    incomplete: bool = False
    salvage_sources: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)   # the leader-epoch-checkpoint to write
    txnindexes: dict[str, bytes] = field(default_factory=dict)     # .txnindex files to write
    losses: list = field(default_factory=list)     # what each cut removes (kdump.check.loss.Loss)
    load_failure: str | None = None     # the exception that stops the broker loading it (clean shutdown)
    snapshots_written: list[int] = field(default_factory=list)  # offsets the load writes snapshots at

    @property
    def actions(self) -> list[Step]:
        return [s for s in self.steps if s.action != NOTE]

    def summary_dict(self) -> dict[str, Any]:
        return {"partition": self.directory, "action": "summary", "log_end_offset": self.log_end_offset,
                "recovery_point": self.recovery_point, "new_recovery_point": self.new_recovery_point,
                "steps": len(self.actions), "damaged": self.damaged, "load_failure": self.load_failure}


@dataclass
class RecoverOptions:
    full: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    # Plan the indexes' rewrites too (verify, which checks the indexes itself, asks only the rest).
    indexes: bool = True

    def verify_options(self):
        from kdump.check.partition import VerifyOptions

        return VerifyOptions(max_message_size=self.max_message_size, index_interval_bytes=self.index_interval_bytes)
