"""What a table has decoded (:class:`EntryCache`, one per source): a column chunk per manifest, the built
indexes and the partition registry; and which manifests of a manifest list a reader reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from .chunk_decoder import ChunkDecoder
from .index import EntryIndex, _schema
from .partition_registry import PartitionRegistry

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


class EntryCache(PartitionRegistry):
    """What a table has decoded: one column chunk per manifest (per manifest-list record, since
    inheritance depends on it, and per ``metrics``), the assembled indexes, and (as a
    :class:`~.partition_registry.PartitionRegistry`) one registry of distinct partition records so that
    partition codes mean the same in every index of the table."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: dict[tuple, tuple[Any, list]] = {}
        self.indexes: dict[tuple, EntryIndex] = {}
        self.decoders: dict[bool, ChunkDecoder] = {}

    def decoder(self, metrics: bool) -> ChunkDecoder:
        """The decoder of this table's manifests (with or without ``metrics``), coding partitions in this registry."""
        if metrics not in self.decoders:
            self.decoders[metrics] = ChunkDecoder(metrics, self)
        return self.decoders[metrics]

    @staticmethod
    def manifest_key(manifest: dict[str, Any]) -> tuple:
        return (manifest.get("manifest_path"), manifest.get("sequence_number"), manifest.get("first_row_id"),
                manifest.get("added_snapshot_id"), manifest.get("partition_spec_id"))

    def cached(self, manifest: dict[str, Any], metrics: bool) -> Optional[tuple[Any, list]]:
        """A decoded chunk of the manifest: with metrics if asked for, else with or without."""
        key = self.manifest_key(manifest)
        got = self.chunks.get((key, metrics))
        if got is None and not metrics:
            got = self.chunks.get((key, True))
            if got is not None:
                got = (got[0].select(_schema(False).names), got[1])
        return got

    def clear(self) -> None:
        self.chunks.clear()
        self.indexes.clear()

    def mark(self) -> tuple[set, set]:
        """What is cached now, for :meth:`forget_since`."""
        return set(self.indexes), set(self.chunks)

    def forget_since(self, mark: tuple[set, set]) -> None:
        """Let go of the indexes and decoded manifests cached after ``mark`` (the partition registry stays: its
        codes may be held elsewhere)."""
        for key in set(self.indexes) - mark[0]:
            del self.indexes[key]
        for key in set(self.chunks) - mark[1]:
            del self.chunks[key]


def entry_cache(source: "TableSource") -> EntryCache:
    """The source's decoded manifests and built indexes (one :class:`EntryCache` per source, made on first use)."""
    if source.caches.entries is None:
        source.caches.entries = EntryCache()
    return source.caches.entries


def built_index(source: "TableSource", snapshot_id: Optional[int], content: str = "deletes") -> Optional[EntryIndex]:
    """An index of the snapshot's ``content`` manifests (or of all of them) that is already built, else None."""
    if snapshot_id is None and source.metadata.current_snapshot_id is None:
        return None
    sid = source.snapshot(snapshot_id).snapshot_id
    indexes = entry_cache(source).indexes
    for key in ((sid, content, False), (sid, None, False), (sid, content, True), (sid, None, True)):
        got = indexes.get(key)
        if got is not None:
            return got
    return None


def of_content(manifests: list[dict[str, Any]], content: Optional[str]) -> list[dict[str, Any]]:
    """The records of a manifest list of one ``content`` kind (``"data"``, ``"deletes"``), or all for None."""
    if content is None:
        return list(manifests)
    return [m for m in manifests if ("deletes" if m.get("content") == 1 else "data") == content]


def listed_once(manifests: list[dict[str, Any]]) -> tuple[list[int], list[dict]]:
    """Which manifests of a manifest list a reader reads: the positions of each manifest
    (:meth:`EntryCache.manifest_key`) once, where first listed, and the records the list names again (a finding of
    the index). The driver's index, the Spark index and a commit's view all read this way."""
    keep: list[int] = []
    again: list[dict] = []
    seen: set = set()
    for i, m in enumerate(manifests):
        key = EntryCache.manifest_key(m)
        if key in seen:
            again.append(m)
            continue
        seen.add(key)
        keep.append(i)
    return keep, again
