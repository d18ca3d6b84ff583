"""Reading deletion vectors and delete files of a table: one :class:`DVReader` per source.

Ranges come from the entry index (``content_offset`` / ``content_size_in_bytes``) and are read as
Iceberg's own reader does: only those bytes.  ``read_dvs`` plans the ranges per Puffin file, merges
neighbours and fetches them concurrently on object stores, so 10,000 DVs packed in one file cost a
few requests; a loop of ``read_dv`` calls on one file reads ahead.  ``deletions`` and
``delete_file_contents`` resolve a data file's or a delete file's positions through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Union

from .._arrays import sorted_unique
from .._gc import gc_paused
from .._memory import release_freed_memory
from .._text import plural
from ..errors import InvalidFileError, NotFoundError, NotInTableError, PuffinError, SourceError
from . import vanished
from .entry_cache import built_index, entry_cache
from .index import EntryIndex, take_rows
from .index_build import deletes_index
from .paths import normalize

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource

_DV_SIZE_WITHOUT_PROBE = 16 << 20  # bigger DV ranges are checked against the real file size first
#: From this many DVs on, check() and read_dvs() in a terminal or notebook show a progress bar.
PROGRESS_FROM_DVS = 10_000
#: An index read_dvs() builds for its plan (none was built before) is kept for the next question up to this many
#: entries; a bigger one is let go before the positions are read, which then are what the memory holds.
KEEP_PLAN_INDEX_UP_TO = 100_000


def positions_schema():
    """The Arrow schema of ``read_dvs(columnar=True)``: one row per DV (``entry``: its place among the entries
    asked for), its sorted positions as a ``large_list<int64>``."""
    import pyarrow as pa

    return pa.schema([
        ("entry", pa.int64()), ("file_path", pa.string()), ("content_offset", pa.int64()),
        ("content_size_in_bytes", pa.int64()), ("referenced_data_file", pa.string()),
        ("cardinality", pa.int64()), ("positions", pa.large_list(pa.int64()))])


def _positions_batch(idx: list, path: str, ranges: list, refs: Any, dvs: list):
    """One Puffin file's vectors as a record batch of :func:`positions_schema` (positions as int64; ``refs``: the
    referenced data files of ``idx``)."""
    import numpy as np
    import pyarrow as pa

    schema = positions_schema()
    parts = [np.asarray(dv.positions(), dtype=np.int64) for dv in dvs]
    counts = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return pa.record_batch([
        pa.array(idx, pa.int64()), pa.array([path] * len(idx), pa.string()),
        pa.array([o for o, _ in ranges], pa.int64()), pa.array([n for _, n in ranges], pa.int64()),
        pa.array(refs, pa.string()), pa.array(counts),
        pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values))], schema=schema)


#: A local Puffin file's DVs are read this many bytes a request: each span is decoded and let go before the next
#: is read, so its memory is the allocator's to reuse, not fresh pages for every span of the file.
_LOCAL_REQUEST = 256 << 10
#: The positions of a file's DVs are written into arrays of (at most, unless one request needs more) this many.
_STORE_POSITIONS = 8 << 20

#: The columns of DV entries ``read_dvs`` plans from.
_PLAN_COLUMNS = ("file_path", "content_offset", "content_size_in_bytes", "referenced_data_file", "file_size_in_bytes")


def _no_range(path: Any) -> InvalidFileError:
    return InvalidFileError(f"{path}: DV entry without content_offset/content_size_in_bytes", None, "dv-missing-range")


class _PlanColumns(NamedTuple):
    """What :func:`_plan_by_file` plans from: numpy arrays a DV, ``codes[i]`` the place of its Puffin file in
    ``files``, ``claims`` its entry's ``file_size_in_bytes`` (-1 where ``has_claim`` is False); ``refs_of(rows)``
    the referenced data files of those rows, Python strings."""

    files: list
    codes: Any
    offsets: Any
    sizes: Any
    claims: Any
    has_claim: Any
    refs_of: Callable[[list], list]


def _table_columns(t) -> _PlanColumns:
    """The plan columns of the index's DV rows (an Arrow table of :data:`_PLAN_COLUMNS`)."""
    import numpy as np
    import pyarrow.compute as pc

    for name in ("content_offset", "content_size_in_bytes"):
        if t.column(name).null_count:
            first = int(np.flatnonzero(t.column(name).is_null().to_numpy(zero_copy_only=False))[0])
            raise _no_range(t.column("file_path")[first].as_py())
    enc = t.column("file_path").combine_chunks().dictionary_encode()
    codes = pc.fill_null(enc.indices, len(enc.dictionary)).to_numpy(zero_copy_only=False).astype(np.int64)
    claimed = t.column("file_size_in_bytes")
    refs = t.select(["referenced_data_file"])  # taken a file's rows at a time (take_rows: chunk by chunk)
    return _PlanColumns(
        files=enc.dictionary.to_pylist() + [None],  # a DV without a path: its own group, read as read_dv reads it
        codes=codes, offsets=t.column("content_offset").to_numpy().astype(np.int64),
        sizes=t.column("content_size_in_bytes").to_numpy().astype(np.int64),
        claims=pc.fill_null(claimed, -1).to_numpy().astype(np.int64),
        has_claim=claimed.is_valid().to_numpy(zero_copy_only=False),
        refs_of=lambda rows: take_rows(refs, rows).column(0).to_pylist())


def _entry_columns(rows: list) -> _PlanColumns:
    """The plan columns of DV entries given as dicts, in plain Python and numpy: their strings are not copied
    into Arrow arrays only to come back out (twice the time of the rest of the plan)."""
    try:  # every key in every entry (the index's rows): a list a column
        return _list_columns(*([e[n] for e in rows] for n in _PLAN_COLUMNS))
    except (KeyError, TypeError):
        return _list_columns(*([e.get(n) for e in rows] for n in _PLAN_COLUMNS))


def _frame_columns(frame: Any) -> _PlanColumns:
    """The plan columns of DV entries given as a DataFrame (``entries()``, ``dvs()``): its plan columns as lists,
    column by column (rows made of every column would cost ten times the plan: 0.3 s at 10,000 entries)."""
    return _list_columns(*(frame[n].tolist() if n in frame.columns else [None] * len(frame) for n in _PLAN_COLUMNS))


def _list_columns(paths: list, offsets: list, sizes: list, refs: list, claims: list) -> _PlanColumns:
    """The plan columns of DV entries given as one list a column (:data:`_PLAN_COLUMNS`)."""
    import numpy as np

    def ints(values: list, required: bool) -> tuple:
        """``values`` as int64 and where each is present; an absent required one is the missing-range error."""
        try:  # Python or numpy integers
            return np.fromiter(values, np.int64, len(values)), np.ones(len(values), bool)
        except (TypeError, ValueError):  # absent (None, NA), or numbers of other types: each made an int
            out, present = np.full(len(values), -1, np.int64), np.ones(len(values), bool)
            for i, v in enumerate(values):
                try:
                    out[i] = int(v)
                except (TypeError, ValueError):
                    if required:
                        raise _no_range(paths[i]) from None
                    present[i] = False
            return out, present

    files = list(dict.fromkeys(paths))  # each Puffin file once, in the order they first appear
    claimed, has_claim = ints(claims, False)
    return _PlanColumns(
        files=files, codes=np.fromiter(map({f: i for i, f in enumerate(files)}.__getitem__, paths), np.int64,
                                       len(paths)),
        offsets=ints(offsets, True)[0], sizes=ints(sizes, True)[0], claims=claimed, has_claim=has_claim,
        refs_of=lambda at: list(map(refs.__getitem__, at)))


def _file_dvs(src: Any, loc: str, offsets: Any, sizes: Any, refs: list) -> list:
    """The DVs at ``offsets`` / ``sizes`` (numpy) of one Puffin file, in that order: read a request per group of
    neighbours (:func:`~puffin_explorer.io.ranges.request_groups`), those of the common shape decoded together
    straight from the request's bytes (:func:`~puffin_explorer.format.dv_batch.common_positions`) into vectors that
    hold their positions and not their bytes (read again from ``src`` when a view asks); any other vector keeps
    its bytes and decodes or reports itself when asked."""
    from collections import deque
    from itertools import repeat

    import numpy as np

    from ..format.dv import DeletionVector, decode_many
    from ..format.dv_batch import common_positions
    from ..io.ranges import DEFAULT_MAX_REQUEST, request_groups

    out: list = [None] * len(offsets)
    others: list = []
    order = np.argsort(offsets, kind="stable")
    groups = [order[g] for g in request_groups(offsets[order], sizes[order],
                                              max_request=DEFAULT_MAX_REQUEST if src.remote else _LOCAL_REQUEST)]
    starts = [int(offsets[g[0]]) for g in groups]
    requests = [(a, int((offsets[g] + sizes[g]).max()) - a) for a, g in zip(starts, groups)]
    # remote: every request at once, concurrently; local: one span alive at a time, its memory reused for the next
    spans = src.fetch_spans(requests) if src.remote else (src.fetch_spans([r])[0] for r in requests)
    # the most positions each vector of the common shape can hold (its values fill it: common_positions)
    most = np.minimum(np.maximum(sizes - 33, 0) // 2, 4096)
    left = int(most.sum())
    store, used = np.empty(0, np.uint64), 0
    reread = src.read  # one bound method for the file's vectors, not one each
    for rows, start, span in zip(groups, starts, spans):
        rel, n = offsets[rows] - start, sizes[rows]
        short = np.flatnonzero(rel + n > len(span))
        if len(short):
            o, k = int(offsets[rows[short[0]]]), int(n[short[0]])
            raise SourceError(f"{loc} ends before the DV at [{o:,}, {o + k:,})", o, location=loc)
        need = int(most[rows].sum())
        if len(store) - used < need:  # the file's positions in few arrays: large ones get huge pages, and only the
            # pages written are ever touched, so a bound read out of manifests costs no memory it does not use
            store, used = np.empty(max(need, min(left, _STORE_POSITIONS)), np.uint64), 0
        left -= need
        ok, cards, positions = common_positions(span, rel, n, crc=False, out=store[used:])
        used += len(positions)
        positions.flags.writeable = False
        ends = np.cumsum(cards)
        # each vector's positions a view of the request's: the slices made by map in C, not one statement each
        parts = map(positions.__getitem__, map(slice, (ends - cards).tolist(), ends.tolist()))
        decoded = DeletionVector._decoded
        here, at = rows.tolist(), (rel + start).tolist()
        if ok.all():  # the vectors made and put in place by map (no statement a vector)
            made = map(decoded, parts, at, n.tolist(), repeat(reread), map(refs.__getitem__, here))
            deque(map(out.__setitem__, here, made), maxlen=0)
            continue
        for i, r, k, good, p in zip(here, at, n.tolist(), ok.tolist(), parts):
            if good:
                out[i] = decoded(p, r, k, reread, refs[i])
            else:
                out[i] = other = DeletionVector(span[r - start:r - start + k], r, None, "file", refs[i])
                others.append(other)
    decode_many(others)  # those of the common shape with one field off (their bytes say what): one pass too
    return out


def _plan_by_file(c: _PlanColumns) -> list:
    """The reads of DV entries, per Puffin file in the order the files first appear:
    ``(path, row indexes, offsets, sizes, largest end, largest claimed file size or None, any odd range)``, numpy
    arrays (no Python value per DV: the reader makes one file's ranges at a time as it reads it)."""
    import numpy as np

    files, codes, offsets, sizes, claims, has_claim = c.files, c.codes, c.offsets, c.sizes, c.claims, c.has_claim
    if not len(codes):
        return []
    order = np.argsort(codes, kind="stable")  # each file's rows together, in row order
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    groups = np.split(order, bounds)
    groups.sort(key=lambda g: int(g[0]))  # files in the order they first appear
    plans = []
    for idx in groups:
        o, size = offsets[idx], sizes[idx]
        claim = claims[idx][has_claim[idx]]
        plans.append((files[int(codes[idx[0]])], idx, o, size, int((o + size).max()),
                      int(claim.max()) if len(claim) else None,
                      bool(((o < 0) | (size < 0) | (size > _DV_SIZE_WITHOUT_PROBE)).any())))
    return plans


def dv_reader(source: "TableSource") -> "DVReader":
    """The one :class:`DVReader` of a source (its read-ahead state and range readers live as long as it)."""
    if source.caches.dv_reader is None:
        source.caches.dv_reader = DVReader(source)
    return source.caches.dv_reader


class DVReader:
    """The DVs of one table source: single reads with read-ahead, planned batch reads, lookups by data file."""

    #: After this many ``read_dv`` calls on one Puffin file, the next DVs of that file (in file
    #: order, within ``readahead`` bytes) are decoded together and handed out as asked.
    READ_DV_BATCH_AFTER = 8
    #: Reading DVs one by one from the same Puffin file, the second and later reads fetch this much ahead.
    DV_READAHEAD = 1 << 20

    def __init__(self, source: "TableSource") -> None:
        self.source = source
        self.batch_after = self.READ_DV_BATCH_AFTER
        self.readahead = self.DV_READAHEAD
        self.ready: dict[tuple[str, int, int], Any] = {}  # DVs read_dv decoded ahead, until asked for
        self.calls: dict[str, int] = {}  # read_dv calls per Puffin file
        self.reading = 0  # read_dvs calls running (read_dv reads no batch ahead while one is)
        self.sources: dict[str, Any] = {}  # one counted range reader per Puffin file
        self._by_data_file: Any = None  # (index, {data file: row}, rows, refs, {location: row} or None)
        self._in_file_order: Any = None  # (index, rows, offsets, {location: (start, end)})

    def entry(self, target: Union[str, dict, Any], snapshot_id: Optional[int]) -> dict[str, Any]:
        """The DV entry ``target`` names: the entry itself, a DataFrame row, or a data file's path."""
        if isinstance(target, dict):
            return target
        if hasattr(target, "to_dict"):  # a DataFrame row
            return dict(target.to_dict())
        ix = deletes_index(self.source, snapshot_id)
        pos = self._position(ix, target)
        if pos is None:
            raise NotInTableError(f"{self.source.name}: no deletion vector for {target}")
        return ix.row(int(pos))

    def _position(self, ix: EntryIndex, target: Any) -> Optional[int]:
        """Index position of the first live DV of a data file, by its normalized path or where it is now."""
        import numpy as np

        from .columns import located, normalized

        got = self._by_data_file
        if got is None or got[0] is not ix:
            rows = np.flatnonzero(ix.mask(["dv"]))
            refs = ix.table.column("referenced_data_file").take(rows)
            valid = refs.is_valid().to_numpy(zero_copy_only=False)
            rows, refs = rows[valid], refs.filter(refs.is_valid())
            lookup: dict[str, int] = {}
            for k, r in zip(normalized(refs).to_pylist(), rows.tolist()):
                lookup.setdefault(k, r)
            got = self._by_data_file = (ix, lookup, rows, refs, None)
        wanted = normalize(str(target))
        pos = got[1].get(wanted)
        if pos is None:  # a data file named where it is now (relocated): look up by location, once built
            if got[4] is None:
                by_location: dict[str, int] = {}
                for k, r in zip(located(self.source, got[3]).tolist(), got[2].tolist()):
                    by_location.setdefault(k, r)
                got = self._by_data_file = got[:4] + (by_location,)
            pos = got[4].get(wanted)
        return pos

    def read_dv(self, target: Union[str, dict, Any], snapshot_id: Optional[int] = None):
        """:meth:`~.table.Table.read_dv`."""
        e = target if isinstance(target, dict) else self.entry(target, snapshot_id)
        offset, length = e.get("content_offset"), e.get("content_size_in_bytes")
        if offset is None or length is None:
            raise InvalidFileError(f"{e.get('file_path')}: DV entry without content_offset/content_size_in_bytes",
                                   None, "dv-missing-range")
        path, offset, length = e["file_path"], int(offset), int(length)
        ready = self.ready
        if ready:
            dv = ready.pop((path, offset, length), None)
            if dv is not None and dv._referenced == e.get("referenced_data_file"):
                return dv
        loc = self.source.located(path)
        calls = self.calls[loc] = self.calls.get(loc, 0) + 1
        # no read-ahead from inside read_dvs: its odd ranges come here one at a time, and a batch of them
        # would come back to read_dvs, and so on without end
        if calls >= self.batch_after and 0 <= offset and 0 <= length <= _DV_SIZE_WITHOUT_PROBE \
                and not self.reading:
            batch = self._dvs_after(loc, offset, snapshot_id)
            if batch and int(batch[0]["content_offset"]) == offset and \
                    int(batch[0]["content_size_in_bytes"]) == length and \
                    batch[0].get("referenced_data_file") == e.get("referenced_data_file"):
                try:
                    dvs = self.read_dvs(batch, progress=False)
                except (PuffinError, OSError):
                    dvs = None  # a damaged neighbour: this DV is read alone below, each other one when asked
                if dvs is not None:
                    for k in [k for k in ready if k[0] == path]:  # what the last batch of this file left unasked
                        del ready[k]
                    for b, d in zip(batch[1:], dvs[1:]):
                        ready[(b["file_path"], int(b["content_offset"]), int(b["content_size_in_bytes"]))] = d
                    return dvs[0]
        from ..format.puffin import read_dv

        claimed = e.get("file_size_in_bytes")
        if length > _DV_SIZE_WITHOUT_PROBE or (claimed is not None and offset + length > int(claimed)):
            real = self.source.io.size(loc)  # never allocate for a size read out of a manifest before checking it
            if real is None:
                raise vanished.dv_error(self.source, NotFoundError(f"no such file: {loc}", location=loc), snapshot_id)
            if offset < 0 or offset + length > real:
                raise InvalidFileError(f"{e['file_path']}: DV range [{offset:,}, {offset + length:,}) from the "
                                       f"manifest is beyond the end of the file ({plural(real, 'byte')})", offset,
                                       "dv-range-beyond-file")
        try:
            return read_dv(self._range_source(loc, offset + length, claimed), offset=offset, length=length,
                           referenced_data_file=e.get("referenced_data_file"))
        except NotFoundError as exc:
            raise vanished.dv_error(self.source, exc, snapshot_id)

    def _dvs_after(self, loc: str, offset: int, snapshot_id: Optional[int]) -> list[dict[str, Any]]:
        """The snapshot's DV entries of the Puffin file ``loc`` from ``offset`` on, in file order,
        within ``DV_READAHEAD`` bytes (at least the one at ``offset``).  Only from an index already
        built: reading ahead never reads manifests the caller has not read."""
        import numpy as np

        from .columns import located

        ix = built_index(self.source, snapshot_id)
        if ix is None:
            return []
        got = self._in_file_order
        if got is None or got[0] is not ix:
            t = ix.table
            rows = np.flatnonzero(ix.mask(["dv"]) & t.column("content_offset").is_valid().to_numpy(
                zero_copy_only=False) & t.column("content_size_in_bytes").is_valid().to_numpy(zero_copy_only=False))
            locs = located(self.source, ix.take(rows, ["file_path"]).column("file_path"))
            offsets = ix.ints("content_offset")[rows]
            order = np.lexsort((offsets, locs.astype(str)))
            rows, locs, offsets = rows[order], locs[order], offsets[order]
            spans: dict[str, tuple[int, int]] = {}
            for i, l in enumerate(locs.tolist()):
                a = spans.get(l)
                spans[l] = (i, i + 1) if a is None else (a[0], i + 1)
            got = self._in_file_order = (ix, rows, offsets, spans)
        _, rows, offsets, spans = got
        a, b = spans.get(loc, (0, 0))
        i = a + int(np.searchsorted(offsets[a:b], offset, side="left"))
        j = a + int(np.searchsorted(offsets[a:b], offset + self.readahead, side="left"))
        j = min(j, i + 4096)
        return ix.dicts_of(take_rows(ix.table, rows[i:j])) if j > i else []

    def read_dvs(self, entries: Optional[Any] = None, snapshot_id: Optional[int] = None,
                 progress: Optional[bool] = None, columnar: bool = False):
        """:meth:`~.table.Table.read_dvs`; the columnar table is grouped by Puffin file, its ``entry`` the row's
        place among the entries asked for (:func:`positions_schema`)."""
        from ..progress import ProgressBar

        # a vector object a DV and nothing cyclic: no collection of the whole heap while they are made (_gc)
        with ProgressBar(f"{self.source.name}: DVs read", "DV", PROGRESS_FROM_DVS, progress) as bar, gc_paused():
            self.reading += 1
            try:
                return self._read_dvs(entries, snapshot_id, bar, columnar)
            except NotFoundError as exc:  # a Puffin file gone since the snapshot was written
                raise vanished.dv_error(self.source, exc, snapshot_id)
            finally:
                self.reading -= 1

    def _read_dvs(self, entries: Optional[Any], snapshot_id: Optional[int], bar: Callable[[int, int], None],
                  columnar: bool = False):
        import numpy as np
        import pyarrow as pa

        from ..format.dv import decode_many

        if entries is None:  # the index's columns as arrays: no Python value per DV
            cache = entry_cache(self.source)
            before = cache.mark() if built_index(self.source, snapshot_id) is None else None
            ix = deletes_index(self.source, snapshot_id)
            at = np.flatnonzero(ix.mask(["dv"]))
            columns = _table_columns(ix.take(at, list(_PLAN_COLUMNS)))
            if before is not None and len(ix) > KEEP_PLAN_INDEX_UP_TO:
                # built for this plan alone, and big: let it go before the positions come (a million DVs' entries
                # are 0.4 GB beside their positions; the next question about the table builds it again)
                cache.forget_since(before)
                ix = None

            def entry(i: int) -> dict[str, Any]:  # an odd range's entry, read one by one (the index again if let go)
                return (ix if ix is not None else deletes_index(self.source, snapshot_id)).row(int(at[i]))
        else:
            if hasattr(entries, "iloc") and hasattr(entries, "columns"):  # a DataFrame such as dvs() or entries()
                frame = entries
                columns = _frame_columns(frame)

                def entry(i: int) -> dict[str, Any]:  # an odd range's entry: its row, whole
                    return dict(frame.iloc[i].to_dict())
            else:
                rows = list(entries)
                if set(map(type, rows)) - {dict}:  # not all entries already (paths, DataFrame rows)
                    rows = [self.entry(e, snapshot_id) for e in rows]
                columns = _entry_columns(rows)

                def entry(i: int) -> dict[str, Any]:
                    return rows[i]
        total = len(columns.codes)
        plans = _plan_by_file(columns)
        refs_of = columns.refs_of
        del columns
        if total > KEEP_PLAN_INDEX_UP_TO:  # the index build's and the planning's scratch, before the positions come
            release_freed_memory()  # (not for a small read: pages given back are faulted in again at once)
        out: list = [] if columnar else [None] * total
        done = 0
        while plans:
            path, idx, o, size, end, claimed, odd = plans.pop(0)  # each file's plan is dropped once read
            idx = idx.tolist()
            bar(done, total)
            done += len(idx)
            loc = self.source.located(path)
            if not odd and claimed is not None and end > claimed:
                real = self.source.io.size(loc)
                odd = real is None or end > real
            file_refs = refs_of(idx)  # this file's referenced data files
            if odd:  # odd ranges: one at a time, with read_dv's checks
                read = [self.read_dv(entry(i)) for i in idx]
                decode_many(read)  # small vectors' positions in one numpy pass rather than one call each
            else:
                read = _file_dvs(self._range_source(loc, end), loc, o, size, file_refs)
            if columnar:  # this file's vectors become one batch of positions; the objects go
                out.append(_positions_batch(idx, path, list(zip(o.tolist(), size.tolist())), file_refs, read))
                continue
            for i, dv in zip(idx, read):
                out[i] = dv
        bar(done, total)
        if columnar:
            return pa.Table.from_batches(out, positions_schema())
        return out

    def _range_source(self, loc: str, min_size: int, claimed_size: Optional[Any] = None):
        """One counted range reader per file for the table's lifetime (no size probe: ranges come
        from manifests and a short read is an error).  The first read is exact; later ones read
        ahead, so a loop over the DVs of one file costs a request per MiB, not per DV."""
        sources = self.sources
        src = sources.get(loc)
        if src is None or src.size < min_size:
            size = max(min_size, src.size if src else 0, int(claimed_size or 0))
            src = sources[loc] = self.source.io.source(loc, size=size)
            src.readahead = self.readahead
        return src


def delete_file_contents(source: "TableSource", path: str, snapshot_id: Optional[int] = None):
    """What a delete file says: ``(file_path, pos)`` rows for DVs and position deletes, the rows for equality deletes."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import located, normalized

    ix = deletes_index(source, snapshot_id)
    live = ix.rows(ix.mask(deletes=True))
    wanted = normalize(path)
    paths = live.column("file_path")
    hit = pc.equal(normalized(paths), wanted).to_numpy(zero_copy_only=False)
    if not hit.any():
        hit = located(source, paths) == wanted
    entries = ix.dicts_of(live.filter(pa.array(hit)))
    if not entries:
        raise NotInTableError(f"{source.name}: {path} is not a live delete file of the snapshot")
    kind = entries[0]["kind"]
    if kind == "dv":
        frames = []
        for e in sorted(entries, key=lambda x: x.get("content_offset") or 0):
            pos = np.asarray(dv_reader(source).read_dv(e).positions(), dtype=np.int64)
            frames.append(pd.DataFrame({"file_path": e["referenced_data_file"], "pos": pos}))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["file_path", "pos"])
    return source.read_parquet(entries[0]["file_path"]).to_pandas()

def deletions(source: "TableSource", data_file: str, snapshot_id: Optional[int] = None):
    """Sorted deleted row positions of one data file: its DV, else its Parquet position deletes.

    A data file with a DV ignores position deletes (the v3 spec: a DV holds every
    older position delete of its file).  Equality deletes are not resolved to positions.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import located, normalized

    wanted = normalize(data_file)
    ix = deletes_index(source, snapshot_id)
    live = ix.rows(ix.mask(["dv", "position-deletes"], deletes=True))
    refs = live.column("referenced_data_file")
    ours = pc.fill_null(pc.equal(normalized(refs), wanted), False).to_numpy(zero_copy_only=False)
    if not ours.any() and live.num_rows:
        ours = located(source, refs) == wanted
    is_dv = pc.equal(live.column("kind"), "dv").to_numpy(zero_copy_only=False)
    def once(rows):  # an entry listed more than once is read once
        seen: set = set()
        return [e for e in ix.dicts_of(rows) if (e["file_path"], e.get("content_offset")) not in seen
                and not seen.add((e["file_path"], e.get("content_offset")))]

    parts = [np.asarray(dv_reader(source).read_dv(e).positions(), dtype=np.int64)
             for e in once(live.filter(pa.array(ours & is_dv)))]
    if not parts:  # position deletes count only for a data file without a DV
        named = ours | refs.is_null().to_numpy(zero_copy_only=False)
        for e in once(live.filter(pa.array(named & ~is_dv))):
            t = source.read_parquet(e["file_path"], columns=["file_path", "pos"])
            mask = pc.equal(normalized(t.column("file_path")), wanted).to_numpy(zero_copy_only=False)
            if not mask.any():
                mask = located(source, t.column("file_path")) == wanted
            parts.append(t.column("pos").to_numpy().astype(np.int64)[mask])
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return sorted_unique(np.concatenate(parts))
