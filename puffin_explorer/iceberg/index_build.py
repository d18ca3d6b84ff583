"""The build of a snapshot's :class:`~.index.EntryIndex` (:func:`build_index`), and the column metrics of its
manifests read again a batch at a time (:func:`stream_metrics`).

:func:`build_index` reads the snapshot's manifest list, decodes the manifests not cached yet in batches
(:mod:`.manifest_chunks`), puts each manifest's chunk in once (:func:`.entry_cache.listed_once`) and makes the
findings of the list, the manifests and their entries the index's.  A manifest that cannot be fetched or is
damaged is a finding, never an exception: the entries read before the damage stay in the index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from .._memory import release_freed_memory
from ..errors import NotFoundError, PuffinError
from ..regions import Severity
from . import vanished
from .duckdb_manifests import SLOW_DECODE, slow_reason
from .entry_cache import EntryCache, entry_cache, built_index, listed_once, of_content
from .entry_checks import _finding, capped_findings
from .index import EntryIndex, _schema
from .manifest_chunks import BATCH, decode_batches
from .paths import basename

if TYPE_CHECKING:  # pragma: no cover
    from .metadata import Snapshot
    from .source import TableSource


#: From this many manifests on, a build in an interactive terminal or notebook shows a progress bar.
PROGRESS_FROM = 200


#: Finding codes of a manifest whose entries were not all read (a vanished one only when it was not read before).
MISSING_ENTRIES = frozenset({"iceberg.manifest-damaged", "iceberg.manifest-unreadable", vanished.CODE})


#: What :func:`build_index` and :func:`stream_metrics` hand a metric sink: ``(ordinal, chunk)`` per decoded manifest,
#: the ordinal its place in the index's ``manifests`` (its ``manifest`` column), the chunk its entries with metrics.
MetricSink = Callable[[list], None]


def build_index(source: "TableSource", snapshot_id: Optional[int] = None, content: Optional[str] = None,
                metrics: bool = False, progress: Optional[bool] = None, strict: bool = False,
                keep: bool = True, metric_sink: Optional[MetricSink] = None) -> EntryIndex:
    """Read a snapshot's manifests (current by default) into an :class:`EntryIndex`, or only its
    ``content`` ``"data"`` or ``"deletes"`` manifests; cached on the source per (snapshot, content, metrics).

    Manifests not decoded yet are fetched ``BATCH`` at a time through ``table.io.read_many`` and each
    is decoded into a column chunk as soon as its batch is in.  ``progress`` True / False shows or
    hides a bar; None shows it from ``PROGRESS_FROM`` manifests on in a terminal or notebook kernel.
    Ctrl-C stops the build, closes the bar and re-raises (the manifests decoded so far stay cached).
    ``strict`` raises the first error finding as a :class:`PuffinError`. ``keep=False`` builds an index
    that is not kept on the source (the decoded manifests still are): one answer about a past snapshot.
    ``metric_sink`` (with ``metrics=False``): the manifests decoded now are decoded with their metrics, handed to it
    a batch at a time and cached without them, so the metrics are summed without ever being kept; a manifest
    decoded before is not handed over (:func:`stream_metrics` reads it again).
    """
    from .._memory import choose_arrow_pool

    choose_arrow_pool()  # before the first index's columns are allocated
    cache: EntryCache = entry_cache(source)
    if snapshot_id is None and source.metadata.current_snapshot_id is None:  # a new table: no files yet
        return EntryIndex(None, _schema(metrics).empty_table(), [], cache.partitions, metrics=metrics)
    snap = source.snapshot(snapshot_id)
    key = (snap.snapshot_id, content, metrics)
    index = cache.indexes.get(key) or (None if metrics else cache.indexes.get((snap.snapshot_id, content, True)))
    if index is None:
        try:
            listed = source.manifest_records(snap.snapshot_id)
        except PuffinError as exc:  # no manifest list, or not one: an empty index that says why
            index = _list_unread(source, snap, metrics, exc)  # not cached: a later call reads the list again
        else:
            index = _index_of_list(source, snap, listed, content, metrics, progress, metric_sink)
            if keep:
                cache.indexes[key] = index
    _raise_if_strict(index, strict)
    return index


def deletes_index(source: "TableSource", snapshot_id: Optional[int] = None) -> EntryIndex:
    """The index that answers questions about delete files: the full one if built, else the delete manifests'."""
    return built_index(source, snapshot_id, "deletes") or build_index(source, snapshot_id, content="deletes")


def _list_unread(source: "TableSource", snap: "Snapshot", metrics: bool, exc: PuffinError) -> EntryIndex:
    """The empty index of a snapshot whose manifest list cannot be read, with the finding that says why."""
    where = source.locate(snap.manifest_list) if snap.manifest_list else source.metadata_location
    index = EntryIndex(snap.snapshot_id, _schema(metrics).empty_table(), [], entry_cache(source).partitions,
                       metrics=metrics)
    index.findings = [vanished.manifest_list_finding(source, snap.snapshot_id, snap.manifest_list)
                      if isinstance(exc, NotFoundError) and snap.manifest_list
                      and not vanished.looks_moved(source, snap.manifest_list) else
                      _finding("iceberg.manifest-unreadable", Severity.ERROR, where,
                               f"the manifest list of snapshot {snap.snapshot_id} cannot be read, so none of "
                               f"its files are listed: {exc}", getattr(exc, "offset", None))]
    index.list_unread = True
    return index


def _index_of_list(source: "TableSource", snap: "Snapshot", listed: list[dict[str, Any]], content: Optional[str],
                   metrics: bool, progress: Optional[bool], metric_sink: Optional[MetricSink]) -> EntryIndex:
    """The index of a snapshot's manifest list ``listed`` (its ``content`` manifests): the manifests not cached yet
    decoded, each manifest's chunk put in once, and the findings of the list, its manifests and their entries."""
    cache: EntryCache = entry_cache(source)
    raw = [(f.code, f.severity, getattr(f, "file", ""), f.message, f.offset)
           for f in source.manifest_list_findings(snap.snapshot_id)]
    manifests = of_content(listed, content)
    once, listed_twice = listed_once(manifests)  # a manifest the list names more than once: decoded once, and said
    todo = [manifests[i] for i in once if cache.cached(manifests[i], metrics) is None]
    sink = metric_sink if not metrics else None
    ordinals = {cache.manifest_key(manifests[i]): i for i in once} if sink is not None else {}
    raw += _slow_finding(source, _decode_missing(source, todo, metrics, progress, sink, ordinals))
    index = _assembled(source, snap.snapshot_id, manifests, once, metrics, raw)
    if listed_twice:
        raw.append(_listed_twice(source, snap, listed_twice))
    index.findings = vanished.as_noted(source, snap.snapshot_id, capped_findings(raw))
    if todo:
        release_freed_memory()  # what decoding built and dropped (DuckDB's columns, casts) goes back
    return index


def _decode_missing(source: "TableSource", todo: list[dict[str, Any]], metrics: bool, progress: Optional[bool],
                    sink: Optional[MetricSink], ordinals: dict) -> tuple[int, int]:
    """Decode the manifests not cached yet into cached chunks, a bar showing how far; with a ``sink``, with their
    metrics, each batch's handed to it and then cached without them.  Returns the manifests and bytes decoded
    slowly (:func:`.manifest_chunks.decode_batches`)."""
    cache: EntryCache = entry_cache(source)
    bar = _progress_bar(len(todo), f"{source.name}: manifests") if todo and _show_progress(
        progress, len(todo)) else None

    def unread(m: dict, failed: list) -> None:
        cache.chunks[(cache.manifest_key(m), metrics)] = _without_metrics(cache, m, metrics, failed)

    def decoded(batch: list) -> None:
        if sink is not None:
            _hand_over(cache, batch, ordinals, sink, keep_plain=True)
        if bar is not None:
            bar.update(len(batch))

    try:
        return decode_batches(source, todo, metrics or sink is not None, unread, decoded)
    finally:
        if bar is not None:
            bar.close()


def _without_metrics(cache: "EntryCache", manifest: dict[str, Any], metrics: bool, failed: list[tuple]) -> tuple:
    """What stands for a manifest that could not be read: its entries without metrics when they were decoded
    before it vanished (so an index with metrics counts what one without did), else none."""
    import pyarrow as pa

    got = cache.chunks.get((cache.manifest_key(manifest), False)) if metrics else None
    if got is None or not got[0].num_rows or not any(f[0] == vanished.CODE for f in failed):
        return (_schema(metrics).empty_table(), failed)
    chunk, schema = got[0], _schema(True)
    cols = [chunk.column(f.name) if f.name in chunk.column_names else pa.nulls(chunk.num_rows, f.type)
            for f in schema]
    return (pa.Table.from_arrays(cols, schema=schema), failed)


def _hand_over(cache: "EntryCache", batch: list[dict[str, Any]], ordinals: dict, sink: MetricSink,
               keep_plain: bool) -> None:
    """The chunks a batch was decoded into with metrics, handed to ``sink`` as ``(ordinal, chunk)`` and dropped;
    cached without their metrics when ``keep_plain`` (the index's own chunks)."""
    handed = []
    plain = len(_schema(False))
    for m in batch:
        key = cache.manifest_key(m)
        got = cache.chunks.pop((key, True), None)
        if got is None:  # not read: what stands for it is cached without metrics already
            continue
        chunk, found = got
        if keep_plain:
            cache.chunks[(key, False)] = (chunk.select(list(range(plain))), found)
        handed.append((ordinals[key], chunk))
    if handed:
        sink(handed)


def _show_progress(progress: Optional[bool], manifests: int) -> bool:
    """A bar when asked for, or from PROGRESS_FROM manifests on in a terminal or a notebook kernel."""
    from ..progress import wanted

    return wanted(progress, manifests, PROGRESS_FROM)


def _progress_bar(total: int, label: str):
    from ..progress import bar

    return bar(total, label, "manifest")


def _assembled(source: "TableSource", snapshot_id: int, manifests: list[dict[str, Any]], once: list[int],
               metrics: bool, raw: list[tuple]) -> EntryIndex:
    """The index of the cached chunks of the manifests at ``once``, each one's entries once with its place in
    ``manifests`` as their ``manifest``; what reading each found is added to ``raw``."""
    import pyarrow as pa

    cache: EntryCache = entry_cache(source)
    tables, unread_at = [], []
    for i in once:  # a manifest listed again: its entries once (a count in a manifest list never multiplies rows)
        m = manifests[i]
        chunk, found = cache.cached(m, metrics)
        # entries missing: damaged or unreadable, or gone before they were read (gone after: they are all here)
        if any(f[0] in MISSING_ENTRIES and not (f[0] == vanished.CODE and chunk.num_rows) for f in found):
            unread_at.append(i)
        raw.extend(vanished.manifest_raw(source, snapshot_id, m, f, bool(chunk.num_rows))
                   if f[0] == vanished.CODE else f for f in found)
        if chunk.num_rows:
            tables.append(chunk.set_column(chunk.schema.get_field_index("manifest"), "manifest",
                                           pa.array([i] * chunk.num_rows, pa.int32())))
    tbl = pa.concat_tables(tables) if tables else _schema(metrics).empty_table()
    return EntryIndex(snapshot_id, tbl, manifests, cache.partitions, metrics=metrics, unread=tuple(unread_at))


def _listed_twice(source: "TableSource", snap: "Snapshot", again: list[dict[str, Any]]) -> tuple:
    """The raw finding of a manifest list that names manifests again (their entries are in the index once)."""
    where = source.locate(snap.manifest_list) if snap.manifest_list else source.metadata_location
    names = sorted({basename(str(m.get("manifest_path") or "")) for m in again})
    return ("iceberg.manifest-listed-twice", Severity.ERROR, where,
            f"snapshot {snap.snapshot_id}'s manifest list names {len(again):,} manifests again "
            f"({', '.join(names[:3])}{', …' if len(names) > 3 else ''}); readers read their files "
            "once per listing; this index holds their entries once", None)


def _slow_finding(source: "TableSource", slow: tuple[int, int]) -> list[tuple]:
    """The one info finding of a build that decoded at least ``SLOW_FINDING_FROM_BYTES`` of manifests slowly."""
    from .manifest_decoder import SLOW_FINDING_FROM_BYTES

    count, size = slow
    reason = slow_reason()
    if not count or size < SLOW_FINDING_FROM_BYTES or reason is None:
        return []
    return [(SLOW_DECODE, Severity.INFO, source.metadata_location,
             f"{count:,} manifests ({size / (1 << 20):,.1f} MiB) were decoded by fastavro, about four times slower "
             f"than DuckDB's read_avro: {reason}", None)]


def _raise_if_strict(index: EntryIndex, strict: bool) -> None:
    if strict:
        for f in index.findings:
            if f.severity == Severity.ERROR:
                raise PuffinError(f"{f.code}: {f.message}", f.offset, f.code)


def stream_metrics(source: "TableSource", index: EntryIndex, sink: MetricSink, skip: Iterable[int] = (),
                   progress: Optional[bool] = None) -> list[tuple]:
    """Hand ``sink`` the metric columns of every manifest of ``index`` (an index without metrics) but those in
    ``skip``: each decoded again with its metrics a batch at a time (or taken from a chunk with metrics cached
    already) and never kept, so that summing a table's column metrics holds one batch of them at a time.
    Returns raw findings for each manifest whose metrics could not be read (one gone is noted on the source as
    :mod:`.vanished` notes it), or whose entries read again are not the index's (the table changed under the
    reader: other files, or another number of them): its files count as files without metrics."""
    import numpy as np

    cache: EntryCache = entry_cache(source)
    ordinal_of_row = index.ints("manifest", -1)
    counts = np.bincount(ordinal_of_row[ordinal_of_row >= 0], minlength=len(index.manifests))
    first = np.zeros(len(index.manifests), dtype=np.int64)  # a manifest's entries are one run of the index
    seen, at = np.unique(ordinal_of_row, return_index=True)
    first[seen[seen >= 0]] = at[seen >= 0]
    skip = set(skip)
    wanted = [i for i in range(len(index.manifests)) if counts[i] and i not in skip]
    ordinals = {cache.manifest_key(index.manifests[i]): i for i in wanted}
    findings: list[tuple] = []

    def checked(handed: list) -> None:
        fits = []
        for i, chunk in handed:
            before = index.table.column("file_path").slice(int(first[i]), int(counts[i]))
            if chunk.num_rows == counts[i] and chunk.column("file_path").equals(before):
                fits.append((i, chunk))
                continue
            loc = source.locate(index.manifests[i].get("manifest_path") or "")
            differs = f"{chunk.num_rows:,} entries, not the {int(counts[i]):,} read before" \
                if chunk.num_rows != counts[i] else "other files than it held when read before"
            findings.append(("iceberg.manifest-unreadable", Severity.ERROR, loc,
                             f"{basename(loc)}: read again for its column metrics it holds {differs}; its files' "
                             "metrics are left out", None))
        if fits:
            sink(fits)

    held = [(i, cache.chunks[(cache.manifest_key(index.manifests[i]), True)][0]) for i in wanted
            if (cache.manifest_key(index.manifests[i]), True) in cache.chunks]
    for start in range(0, len(held), BATCH):
        checked(held[start:start + BATCH])
    have = {i for i, _ in held}
    todo = [index.manifests[i] for i in wanted if i not in have]
    bar = _progress_bar(len(todo), f"{source.name}: column metrics") if todo and _show_progress(
        progress, len(todo)) else None

    def unread(m: dict, failed: list) -> None:  # gone since the index read it: noted as such, counts whole
        findings.extend(vanished.manifest_raw(source, index.snapshot_id, m, f, True) if f[0] == vanished.CODE
                        else f for f in failed)

    def decoded(batch: list) -> None:
        _hand_over(cache, batch, ordinals, checked, keep_plain=False)
        if bar is not None:
            bar.update(len(batch))

    try:
        decode_batches(source, todo, True, unread, decoded)  # slowly or not: the index's build said so
    finally:
        for m in todo:  # interrupted: no metric chunk stays cached (a finished run handed every one over)
            cache.chunks.pop((cache.manifest_key(m), True), None)
        if bar is not None:
            bar.close()
        release_freed_memory()
    return findings
