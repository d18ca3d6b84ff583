"""A table's manifests as cached column chunks: fetched through the I/O layer, decoded and checked, one at a
time or in batches bounded by count, bytes and entries.

Intact manifests of a batch are read by DuckDB in the background (:mod:`.duckdb_manifests`): the next batch is
read while the last one's columns become chunks (:func:`_start_batch` / :func:`_finish_batch`); damaged ones by
the fastavro walker (:mod:`.chunk_decoder`).  A manifest that cannot be fetched or is damaged is a finding, never
an exception: the entries read before the damage stay in the chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from .._memory import release_freed_memory
from ..errors import NotFoundError, SourceError
from ..regions import Severity
from . import manifests as mf, vanished
from .chunk_decoder import ChunkDecoder
from .duckdb_manifests import DuckDBRead, DuckDBReader, _duckdb
from .entry_cache import EntryCache, entry_cache
from .entry_checks import check_chunk, outside_scope
from .index import EntryIndex, _schema
from .paths import basename

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


#: Manifests fetched per batch: the bytes of two batches are all that is held at once (DuckDB reads one
#: while the last one's columns become chunks; 32 overlapped more of that than 64 at 1,000,000 entries).
BATCH = 32
#: ... and at most this many manifest bytes (by the manifest list's manifest_length).
BATCH_BYTES = 16 << 20
#: ... and at most this many entries (by the manifest list's file counts): the columns of a batch and of the one
#: being decoded are what the build holds besides the index (32 manifests of 10,000 entries held 0.3 GB more
#: than the finished delete index at a million DVs; 8 of them, 0.1 GB; 4 of them peaked 0.09 GB below 8, in the
#: same 3.4 s of ``dvs()``).
BATCH_ENTRIES = 40_000
#: From this many manifest bytes to decode on, DuckDB's read_avro decodes the intact ones (importing
#: and starting it costs about 0.3 s and 35 MB, more than fastavro needs for a few small manifests).
DUCKDB_FROM_BYTES = 256 << 10


def manifest_chunk(source: "TableSource", manifest: dict[str, Any], metrics: bool = False,
                   data: Optional[bytes] = None) -> tuple[Any, list]:
    """One manifest's entries as a column chunk and the findings of reading it (cached on the source)."""
    cache: EntryCache = entry_cache(source)
    got = cache.cached(manifest, metrics)
    if got is None:
        loc = source.locate(manifest.get("manifest_path") or "")
        if data is None:
            fetched, failed = _fetch(source, [loc])
            data = fetched.get(loc)
            if data is None:
                got = (_schema(metrics).empty_table(), failed)
        if got is None:
            got = decode_manifest(data, manifest, loc, metrics, source.metadata.partition_specs, cache)
            got = (got[0], got[1] + list(outside_scope(source, got[0], manifest)))
        cache.chunks[(cache.manifest_key(manifest), metrics)] = got
    return got


def decode_manifest(data: bytes, manifest: dict[str, Any], location: str, metrics: bool = False,
                    partition_specs: Optional[dict] = None, cache: Optional["EntryCache"] = None,
                    duck: Optional[DuckDBReader] = None) -> tuple[Any, list[tuple]]:
    """One manifest's bytes as a column chunk and the raw findings of decoding and checking it.

    Plain arguments (no :class:`Table`), so a Spark executor runs the same decode and checks as the
    driver: ``manifest`` is its manifest-list record (inheritance), ``partition_specs`` the table's
    specs by id, ``cache`` the :class:`EntryCache` whose partition registry the ``partition`` codes
    index (a fresh one when None), ``duck`` a DuckDB reader (:func:`_duckdb`) for an intact
    manifest, as the driver's index reads one (the fastavro walker decodes the others).  Findings are
    ``(code, severity, file, message, offset)`` tuples.
    """
    cache = cache if cache is not None else EntryCache()
    decoder = cache.decoder(metrics)
    chunk = None
    if duck is not None:
        batch = _start_batch([(manifest, location)], {location: data}, metrics, duck)
        if batch.reads:
            members, partitioned, read = batch.reads[0]
            try:
                chunk = _collect_chunks(decoder, duck, members, partitioned, read)[0][1]
            except Exception:  # noqa: BLE001 - DuckDB or a cast refused: the fastavro walker explains
                chunk = None
    if chunk is None:
        chunk = decoder.chunk(data, manifest, location)
    return chunk, list(decoder.findings) + check_chunk(chunk, manifest, partition_specs or {}, cache)


def manifest_entries(source: "TableSource", manifest: dict[str, Any],
                     data: Optional[bytes] = None) -> list[dict[str, Any]]:
    """Entries of one manifest (all statuses) as dicts, inheritance applied."""
    chunk, _ = manifest_chunk(source, manifest, data=data)
    return EntryIndex(None, chunk, [manifest], entry_cache(source).partitions).dicts_of(chunk)


def validate_chunk(source: "TableSource", chunk, manifest: dict[str, Any]) -> list[tuple]:
    """The findings of one manifest's entries (checked once, when decoded), with a ``source.outside-scope``
    finding for each entry whose file is outside the table's read scope."""
    return check_chunk(chunk, manifest, source.metadata.partition_specs, entry_cache(source)) + \
        list(outside_scope(source, chunk, manifest))


def _fetch(source: "TableSource", locs: list[str]) -> tuple[dict[str, bytes], list[tuple]]:
    """The bytes of a batch of manifests, and a finding for each one that cannot be read."""
    try:
        return (dict(source.io.read_many(locs)) if len(locs) > 1 else {locs[0]: source.io.read(locs[0])}), []
    except SourceError:
        pass
    out, failed = {}, []
    for loc in dict.fromkeys(locs):
        try:
            out[loc] = source.io.read(loc)
        except SourceError as exc:
            if isinstance(exc, NotFoundError) and not vanished.looks_moved(source, loc):  # named by build_index
                failed.append((vanished.CODE, Severity.ERROR, loc, f"manifest {loc} is gone", None))
                continue
            failed.append(("iceberg.manifest-unreadable", Severity.ERROR, loc, f"{basename(loc)}: {exc}", None))
    return out, failed


def decode_batches(source: "TableSource", todo: list[dict[str, Any]], metrics: bool,
                   unread: Callable[[dict, list], None], decoded: Callable[[list], None]) -> tuple[int, int]:
    """Fetch and decode manifests ``BATCH`` at a time into cached chunks, DuckDB reading the next batch while the
    last one becomes chunks (``_start_batch`` / ``_finish_batch``): ``unread(manifest, findings)`` for each one
    that cannot be fetched, ``decoded(batch)`` once a batch's chunks are cached.  Returns the manifests and bytes
    that went to fastavro because DuckDB could not run (the ones it was not asked to read, small tables' first
    bytes, are not counted: that is the chosen path, not the slow one)."""
    duck: Any = None
    read_bytes = 0  # DuckDB is chosen by the bytes read, never by a manifest_length the list claims
    slow = [0, 0]
    pending: Optional[tuple[_Batch, list]] = None  # started, not yet chunked: DuckDB reads it meanwhile
    try:
        for batch in _batches(todo):
            locs = [source.locate(m.get("manifest_path") or "") for m in batch]
            fetched, failed = _fetch(source, locs)
            ok = [(m, loc) for m, loc in zip(batch, locs) if loc in fetched]
            for m, loc in zip(batch, locs):
                if loc not in fetched:
                    unread(m, [f for f in failed if f[2] == loc])
            read_bytes += sum(len(fetched[loc]) for _, loc in ok)
            if duck is None and read_bytes >= DUCKDB_FROM_BYTES:
                duck = _duckdb() or False
            if duck is False:
                slow[0] += len(ok)
                slow[1] += sum(len(fetched[loc]) for _, loc in ok)
            started = (_start_batch(ok, fetched, metrics, duck or None), batch)
            del fetched
            if pending is not None:
                _finish_batch(source, pending[0], duck or None)
                decoded(pending[1])
            pending = started
        if pending is not None:
            last, pending = pending, None
            _finish_batch(source, last[0], duck or None)
            decoded(last[1])
    finally:
        if duck:
            duck.close()
    return slow[0], slow[1]


def _length(manifest: dict[str, Any]) -> int:
    try:
        return max(0, int(manifest.get("manifest_length") or 0)) or (1 << 20)
    except (TypeError, ValueError):
        return 1 << 20


def _entries(manifest: dict[str, Any]) -> int:
    """The entries the manifest list says a manifest holds (0 when it does not say, or says nonsense)."""
    try:
        return max(0, mf.manifest_counts(manifest) or 0)
    except (TypeError, ValueError):
        return 0


def _batches(manifests: list[dict[str, Any]]) -> Iterable[list[dict[str, Any]]]:
    """Consecutive groups of at most ``BATCH`` manifests, about ``BATCH_BYTES`` bytes and ``BATCH_ENTRIES``
    entries (as the manifest list counts them)."""
    batch: list[dict[str, Any]] = []
    size = entries = 0
    for m in manifests:
        if batch and (len(batch) >= BATCH or size + _length(m) > BATCH_BYTES or
                      entries + _entries(m) > BATCH_ENTRIES):
            yield batch
            batch, size, entries = [], 0, 0
        batch.append(m)
        size += _length(m)
        entries += _entries(m)
    if batch:
        yield batch


@dataclass
class _Batch:
    """A fetched batch of manifests on its way to cached chunks: the ones for fastavro, and DuckDB's reads
    (one per writer schema) started."""

    fetched: dict[str, bytes]
    walked: list[tuple[dict, str]]
    reads: list[tuple[list[tuple[dict, str, dict, int]], bool, Any]]
    metrics: bool


def _start_batch(items: list[tuple[dict, str]], fetched: dict[str, bytes], metrics: bool,
                 duck: Optional[DuckDBReader]) -> _Batch:
    """Start decoding a fetched batch: intact manifests are read by DuckDB in the background (one query
    per writer schema and share); the others wait for :func:`_finish_batch` and the fastavro walker."""
    import json

    from .avro import scan

    groups: dict[str, list[tuple[dict, str, dict, int]]] = {}
    walked = []
    for m, loc in items:
        if duck is not None:
            meta, claimed, damage = scan(fetched[loc])
            if damage is None and meta.get("avro.schema") and meta.get("avro.codec", "null") in ("null", "deflate"):
                groups.setdefault(meta["avro.schema"], []).append((m, loc, meta, claimed))
                continue
        walked.append((m, loc))
    reads = []
    for text, members in groups.items():
        try:
            writer = json.loads(text)
            df_type = next((f.get("type") for f in writer.get("fields", []) if f.get("name") == "data_file"), None)
            ptype = next((f.get("type") for f in (df_type or {}).get("fields", []) if f.get("name") == "partition"),
                         None) if isinstance(df_type, dict) else None
            partitioned = not (isinstance(ptype, dict) and ptype.get("type") == "record" and not ptype.get("fields"))
            read = duck.start([fetched[loc] for _, loc, _, _ in members], writer, metrics)
        except Exception:  # noqa: BLE001 - a schema DuckDB cannot be asked for: the fastavro walker explains
            walked += [(m, loc) for m, loc, _, _ in members]
            continue
        reads.append((members, partitioned, read))
    return _Batch(fetched, walked, reads, metrics)


def _finish_batch(source: "TableSource", batch: _Batch, duck: Optional[DuckDBReader]) -> None:
    """Turn a started batch into cached chunks, in the order :func:`_start_batch` met its manifests' kinds:
    the walked ones first, then each DuckDB read as it completes (any it refuses go to the walker)."""
    cache: EntryCache = entry_cache(source)
    metrics, fetched = batch.metrics, batch.fetched
    for m, loc in batch.walked:
        manifest_chunk(source, m, metrics, fetched[loc])
    decoder = cache.decoder(metrics)
    for members, partitioned, read in batch.reads:
        try:
            chunks = _collect_chunks(decoder, duck, members, partitioned, read)
        except Exception:  # noqa: BLE001 - DuckDB or a cast refused: the fastavro walker explains
            for m, loc, _, _ in members:
                manifest_chunk(source, m, metrics, fetched[loc])
            continue
        for m, chunk in chunks:
            cache.chunks[(cache.manifest_key(m), metrics)] = (chunk, validate_chunk(source, chunk, m))
    release_freed_memory()


def _collect_chunks(decoder: ChunkDecoder, duck: DuckDBReader, members: list[tuple[dict, str, dict, int]],
                    partitioned: bool, read: DuckDBRead) -> list[tuple[dict, Any]]:
    """(manifest, chunk) for each manifest of a started DuckDB read; raises when DuckDB refused or its
    rows do not match what the manifests' blocks claim (the fastavro walker then decodes them)."""
    import numpy as np

    paths, raw = duck.collect(read)
    starts: dict[str, int] = {}
    counts: dict[str, int] = {}
    enc = raw.column("filename").combine_chunks().dictionary_encode() if raw.num_rows else None
    if enc is not None:
        idx = enc.indices.to_numpy(zero_copy_only=False)
        dictionary = enc.dictionary.to_pylist()
        change = np.flatnonzero(np.diff(idx)) + 1
        bounds = np.concatenate([[0], change, [len(idx)]])
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            name = dictionary[idx[a]]
            if name in starts:
                raise ValueError("rows of one manifest are not contiguous")
            starts[name], counts[name] = a, b - a
    for (m, loc, meta, claimed), path in zip(members, paths):
        if counts.get(path, 0) != claimed:
            raise ValueError(f"{loc}: DuckDB read {counts.get(path, 0)} records, the blocks claim {claimed}")
    codes = decoder.registry.codes_of(raw.column("partition")) if partitioned else None
    raw = _owned(raw)
    chunks = []
    for (m, loc, meta, claimed), path in zip(members, paths):
        at, n = starts.get(path, 0), counts.get(path, 0)
        chunks.append((m, decoder.chunk_from_arrow(raw.slice(at, n), m, meta,
                                                   codes.slice(at, n) if codes is not None else None)))
    return chunks


def _owned(raw):
    """DuckDB's result with the columns a chunk keeps copied into Arrow's own memory pool.

    An imported Arrow batch lives as long as any of its buffers: a chunk holding DuckDB's ``file_path`` column
    as read kept that read's whole batch alive (its scratch file names, partition records and the slack of its
    growing buffers; 0.45 GB at a million entries). The copy costs one pass over the kept columns."""
    import pyarrow as pa

    return pa.table({name: raw.column(name).combine_chunks() for name in raw.column_names
                     if name not in ("filename", "partition")})
