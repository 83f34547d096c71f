"""What a remote store holds for one segment, whatever its layout (``kdump.storage.remote_store``)."""

from __future__ import annotations

from typing import NamedTuple

from kdump.storage import fs


class RemoteObject(NamedTuple):
    path: str
    size: int


class RemoteFiles(NamedTuple):
    """The objects found for one remote segment (by its id), whatever the metadata says."""

    segment_id: str             # Kafka's Uuid as it prints it: 22 characters of URL-safe base64
    start_offset: int           # from the object names
    objects: dict[str, RemoteObject]   # suffix -> object


def entry_size(e) -> int:
    """A listing entry's size: a remote listing says it, a local one is asked."""
    return e.size if isinstance(e, fs.RemoteEntry) else e.stat().st_size
