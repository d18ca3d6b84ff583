"""The code that runs on Spark executors: decode Puffin files and DVs from metadata rows.

Each function takes an iterator of Arrow record batches (rows of a plan: DVs as
Iceberg's ``delete_files`` table or this package's planner lists them, Puffin
files, position-delete files) and yields record batches, so it plugs into
``DataFrame.mapInArrow``, and the planner runs the same functions on the driver
for small tables.  A ``location`` column, when present, says where a file is now
(a moved table); ``file_path`` is the path as the metadata writes it.  Nothing
here imports pyspark.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from .._arrays import sorted_unique
from ..arrow_ddl import arrow_schema as _arrow_schema

#: Output schemas, as Spark DDL, of the functions below.
POSITIONS_SCHEMA = "data_file string, pos bigint"
#: The same positions a list per DV (cut into lists of at most LIST_MAX): Spark explodes them far faster
#: than it converts one Arrow row per position, and each data file's name crosses once.
POSITION_LISTS_SCHEMA = "data_file string, positions array<bigint>"
LIST_MAX = 1 << 20
DV_FACTS_SCHEMA = ("data_file string, delete_file string, content_offset bigint, content_size_in_bytes bigint, "
                   "record_count bigint, cardinality bigint, min_pos bigint, max_pos bigint, runs bigint, "
                   "crc_ok boolean, findings array<string>")
INVENTORY_SCHEMA = (
    "puffin_file string, file_kind string, file_size bigint, blob_index int, blob_type string, "
    "fields array<int>, snapshot_id bigint, sequence_number bigint, offset bigint, length bigint, "
    "compression_codec string, properties map<string,string>, summary string, cardinality bigint, "
    "ndv_estimate double, findings array<string>, file_findings array<string>"
)

#: Positions of many small DVs are sent to Spark together, in batches of about this many rows.
FLUSH_ROWS = 1 << 16


def steady_imports() -> None:
    """Keep this Python worker from reading Spark's own archives again before every task.

    PySpark's worker calls ``importlib.invalidate_caches()`` before each task, and before Python 3.12 a zip
    importer then reads its whole archive directory again: ``pyspark.zip`` and the Spark jars on the worker's
    path, one importer per package imported from them, about 0.25 s a task on a 2-core machine.  Spark's own
    archives do not change while a worker lives, so their importers keep what they read; any other archive
    is left alone.  Each function here calls it first (a few dozen dictionary entries looked at)."""
    if sys.version_info >= (3, 12):
        return
    try:
        import zipimport

        pyspark = sys.modules.get("pyspark")
        where = getattr(pyspark, "__file__", None) or ""
        if not where:
            return
        marker = os.sep + os.path.join("python", "lib", "pyspark.zip") + os.sep
        home = (where.split(marker)[0] if marker in where else os.path.dirname(where)) + os.sep
        for importer in list(sys.path_importer_cache.values()):
            if isinstance(importer, zipimport.zipimporter) and str(importer.archive).startswith(home) \
                    and "invalidate_caches" not in vars(importer):
                importer.invalidate_caches = _keep_cache
    except Exception:  # noqa: BLE001 - only ever a saving: the task runs the same without it
        return


def _keep_cache() -> None:
    return None


def _position_batches(pending: list[tuple[str, np.ndarray]]):
    """Arrow batches (data_file, pos) for [(data_file, positions), ...], names stored once and taken."""
    import pyarrow as pa

    pending = [(name, pos) for name, pos in pending if len(pos)]
    if not pending:
        return
    names = pa.array([name for name, _ in pending], pa.string())
    index = np.repeat(np.arange(len(pending), dtype=np.int32), [len(pos) for _, pos in pending])
    positions = np.concatenate([pos for _, pos in pending])
    for start in range(0, len(positions), FLUSH_ROWS * 16):
        end = start + FLUSH_ROWS * 16
        yield pa.RecordBatch.from_arrays([names.take(pa.array(index[start:end])),
                                          pa.array(positions[start:end], pa.int64())], names=["data_file", "pos"])


def _dv_rows(batches: Iterable[Any]) -> Iterator[dict]:
    for batch in batches:
        yield from batch.to_pylist()


#: Read all DVs of one Puffin file in one request when they cover at least this share of their span.
COALESCE_MIN_DENSITY = 0.5
COALESCE_MAX_SPAN = 64 << 20
#: At most this many rows of one Puffin file are held before their DVs are read (the rows stream).
GROUP_MAX_ROWS = 8192
#: DVs of a group decoded and checked together (:func:`~puffin_explorer.format.dv.validate_many`); bounds
#: what they hold at once (a vector of that shape has at most 4,096 positions).
VALIDATE_TOGETHER = 1024


def _read_dvs(rows: Iterable[dict], storage_options: Optional[dict]) -> Iterator[tuple[dict, Any]]:
    """(row, DeletionVector or PuffinError) for each ``delete_files`` row, a run of one Puffin file at a time.

    The rows stream: consecutive rows of one Puffin file (at most :data:`GROUP_MAX_ROWS`) are read
    together, so rows sorted by file and offset (as :func:`~.scans` spreads them, and the planner sorts
    them) open each file once and hold no more than one group.  When a group's DVs fill most of the span
    they cover (the usual layout: blobs back to back, then the footer), that span is read in one
    request and each DV is decoded from its slice, with its absolute file offset; otherwise each DV is
    read by ``read_range`` through the one open source.
    """
    for path, group in _grouped(rows):
        if path is None:
            yield _inline(group[0])
        else:
            yield from _read_group(path, group, storage_options)


def _grouped(rows: Iterable[dict]) -> Iterator[tuple[Optional[str], list[dict]]]:
    """(path, rows) for each run of consecutive rows of one file (at most :data:`GROUP_MAX_ROWS`); a Delta DV
    stored in the log (``inline_dv``) is ``(None, [row])``."""
    group: list[dict] = []
    path = None
    for row in rows:
        if row.get("inline_dv") is not None:
            yield None, [row]
            continue
        where = row.get("location") or row["file_path"]
        if group and (where != path or len(group) >= GROUP_MAX_ROWS):
            yield path, group
            group = []
        path = where
        group.append(row)
    if group:
        yield path, group


def _inline(row: dict) -> tuple[dict, Any]:
    """A Delta DV stored in the log: its framed bytes travel in the plan."""
    from ..errors import PuffinError

    try:
        return row, _decode_dv_bytes(bytes(row["inline_dv"]), 0, row.get("referenced_data_file"), "inline DV")
    except PuffinError as exc:
        return row, exc


def _open_group(path: str, group: list[dict], storage_options: Optional[dict]):
    """For rows of one Puffin file, sorted by offset: ``(source, span, start, end)``, ``span`` the bytes
    ``[start, end)`` covering every placed DV when they fill most of it (else None); or the PuffinError
    that opening the file raised."""
    from ..errors import PuffinError
    from ..io import ByteSource
    from .tables import fsspec_location

    try:
        source = ByteSource(fsspec_location(path), storage_options)
    except PuffinError as exc:
        return exc
    placed = [r for r in group if r["content_offset"] is not None and r["content_size_in_bytes"] is not None]
    start = min((int(r["content_offset"]) for r in placed), default=0)
    end = max((int(r["content_offset"]) + int(r["content_size_in_bytes"]) for r in placed), default=0)
    used = sum(int(r["content_size_in_bytes"]) for r in placed)
    span = None
    if 0 <= start < end <= source.size and end - start <= COALESCE_MAX_SPAN \
            and used >= COALESCE_MIN_DENSITY * (end - start):
        span = source.read(start, end - start)
    return source, span, start, end


def _read_group(path: str, group: list[dict], storage_options: Optional[dict]) -> Iterator[tuple[dict, Any]]:
    """:func:`_read_dvs` for rows of one Puffin file: one open, one request for a dense span."""
    from ..errors import PuffinError

    group.sort(key=lambda r: r["content_offset"] or 0)
    opened = _open_group(path, group, storage_options)
    if isinstance(opened, PuffinError):
        for row in group:
            yield row, opened
        return
    yield from _decode_group(group, *opened)


def _decode_group(group: list[dict], source: Any, span: Any, start: int, end: int) -> Iterator[tuple[dict, Any]]:
    """(row, DeletionVector or PuffinError) for rows of one open Puffin file, each DV from ``span`` when it
    lies in it, else read alone."""
    from ..errors import PuffinError
    from ..format.dv import DeletionVector, validate_many
    from ..io import read_range

    for first in range(0, len(group), VALIDATE_TOGETHER):
        out: list[tuple[dict, Any]] = []
        for row in group[first:first + VALIDATE_TOGETHER]:
            try:
                if row["content_offset"] is None or row["content_size_in_bytes"] is None:
                    raise PuffinError("the delete_files row has no content_offset / content_size_in_bytes")
                offset, length = int(row["content_offset"]), int(row["content_size_in_bytes"])
                if offset < 0 or length < 0:
                    raise PuffinError(f"invalid DV range: offset {offset}, length {length}", offset, "dv.range")
                if span is not None and offset >= start and offset + length <= end:
                    data = span[offset - start:offset - start + length]
                else:
                    data = read_range(source, offset, length, what="the DV")
                out.append((row, _decode_dv_bytes(data, offset, row.get("referenced_data_file"))))
            except PuffinError as exc:
                out.append((row, exc))
        # the common shape (one bucket, one array container) checked and decoded in one numpy pass, as the
        # driver's check() does: those vectors need no parse of their own for their findings and positions
        validate_many([dv for _, dv in out if isinstance(dv, DeletionVector)])
        yield from out


def _checked_positions(row: dict, dv: Any) -> np.ndarray:
    """The positions of a DV read for ``row``, or the error that fails the job (its file and offset)."""
    from ..errors import PuffinError, SourceError

    if isinstance(dv, PuffinError):
        # a storage error keeps its class (NotFoundError, ...) through Spark: see errors.spark_error
        error_class = type(dv) if isinstance(dv, SourceError) else PuffinError
        raise error_class(f"cannot read the DV of {row['referenced_data_file']} in {row['file_path']} "
                          f"[{row['content_offset']}, +{row['content_size_in_bytes']}]: {dv}", code=dv.code) from dv
    errors = [f for f in dv.findings if f.severity.value == "error"]
    if errors:
        raise PuffinError(f"the DV of {row['referenced_data_file']} in {row['file_path']} is damaged: "
                          f"{errors[0]}", errors[0].offset, errors[0].code)
    return dv.positions().view(np.int64)


def _position_lists(rows: Iterable[dict], storage_options: Optional[dict]):
    """:func:`decode_positions` with ``as_lists``: Arrow batches (data_file, positions).  In each group of one
    Puffin file read as one span, the DVs of the common shape are checked and decoded together
    (:func:`~puffin_explorer.format.dv_batch.common_positions`, no object per DV); any other DV, or a group not
    read as a span, is parsed on its own, as :func:`_read_dvs` does."""
    import pyarrow as pa

    from ..errors import PuffinError
    from ..format.dv_batch import common_positions

    names: list[str] = []
    cards: list[np.ndarray] = []
    values: list[np.ndarray] = []
    held = 0

    def batch():
        offsets = np.zeros(len(names) + 1, dtype=np.int32)
        np.cumsum(np.concatenate(cards), out=offsets[1:])
        lists = pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.concatenate(values), pa.int64()))
        return pa.RecordBatch.from_arrays([pa.array(names, pa.string()), lists], names=["data_file", "positions"])

    def add_alone(row: dict, dv: Any) -> None:
        nonlocal held
        pos = _checked_positions(row, dv)
        for start in range(0, len(pos), LIST_MAX):  # an empty DV gives no row, as it gives no position
            piece = pos[start:start + LIST_MAX]
            names.append(row["referenced_data_file"])
            cards.append(np.array([len(piece)], dtype=np.int64))
            values.append(piece)
            held += len(piece)

    for path, group in _grouped(rows):
        if path is None:
            add_alone(*_inline(group[0]))
        else:
            group.sort(key=lambda r: r["content_offset"] or 0)
            opened = _open_group(path, group, storage_options)
            if isinstance(opened, PuffinError):
                for row in group:
                    add_alone(row, opened)
            else:
                source, span, start, end = opened
                for first in range(0, len(group), VALIDATE_TOGETHER):
                    part = group[first:first + VALIDATE_TOGETHER]
                    rest = part
                    if span is not None:
                        placed = [r for r in part if r["content_offset"] is not None
                                  and r["content_size_in_bytes"] is not None and start <= int(r["content_offset"])
                                  and int(r["content_offset"]) + int(r["content_size_in_bytes"]) <= end]
                        ok, counts, pos = common_positions(
                            span, [int(r["content_offset"]) - start for r in placed],
                            [int(r["content_size_in_bytes"]) for r in placed])
                        if ok.any():
                            names.extend(r["referenced_data_file"] for r, good in zip(placed, ok.tolist()) if good)
                            cards.append(counts[ok])
                            values.append(pos.view(np.int64))
                            held += len(pos)
                            fast = {id(r) for r, good in zip(placed, ok.tolist()) if good}
                            rest = [r for r in part if id(r) not in fast]
                    for row, dv in _decode_group(rest, source, span, start, end):
                        add_alone(row, dv)
                    if held >= FLUSH_ROWS:
                        yield batch()
                        names, cards, values, held = [], [], [], 0
        if held >= FLUSH_ROWS:
            yield batch()
            names, cards, values, held = [], [], [], 0
    if names:
        yield batch()


def _decode_dv_bytes(data: bytes, offset: int, referenced_data_file: Optional[str], space: str = "file"):
    """A framed DV (length, magic, bitmap, CRC): Iceberg's and Delta's portable format, or Delta's older
    native format (converted, with a finding)."""
    from ..delta.descriptor import decode_dv

    return decode_dv(data, offset, space=space, referenced_data_file=referenced_data_file)


def decode_positions(storage_options: Optional[dict] = None, as_lists: bool = False):
    """mapInArrow function: ``delete_files`` rows → (data_file, pos) for every deleted position, or with
    ``as_lists`` (data_file, positions) rows of :data:`POSITION_LISTS_SCHEMA`."""

    def run(batches):
        steady_imports()
        if as_lists:
            yield from _position_lists(_dv_rows(batches), storage_options)
            return
        pending: list[tuple[str, np.ndarray]] = []
        pending_rows = 0
        for row, dv in _read_dvs(_dv_rows(batches), storage_options):
            positions = _checked_positions(row, dv)
            pending.append((row["referenced_data_file"], positions))
            pending_rows += len(positions)
            if pending_rows >= FLUSH_ROWS:
                yield from _position_batches(pending)
                pending, pending_rows = [], 0
        yield from _position_batches(pending)

    return run


def decode_dv_facts(storage_options: Optional[dict] = None):
    """mapInArrow function: ``delete_files`` rows → one row of decoded facts per DV (no positions)."""

    def run(batches):
        steady_imports()
        import pyarrow as pa

        from ..errors import PuffinError

        out: list[dict] = []
        for row, dv in _read_dvs(_dv_rows(batches), storage_options):
            fact = {"data_file": row["referenced_data_file"], "delete_file": row["file_path"],
                    "content_offset": row["content_offset"], "content_size_in_bytes": row["content_size_in_bytes"],
                    "record_count": row["record_count"], "cardinality": None, "min_pos": None, "max_pos": None,
                    "runs": None, "crc_ok": None, "findings": []}
            if isinstance(dv, PuffinError):
                fact["findings"] = [f"error {dv.code or 'dv.read'} @ {dv.offset}: {dv}"]
                out.append(fact)
                continue
            positions = dv.positions().view(np.int64)
            fact.update(cardinality=len(positions), crc_ok=dv.crc_ok, findings=[str(f) for f in dv.findings])
            if len(positions):
                fact.update(min_pos=int(positions[0]), max_pos=int(positions[-1]),
                            runs=int(1 + np.count_nonzero(np.diff(positions) != 1)))
            else:
                fact["runs"] = 0
            out.append(fact)
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=_arrow_schema(DV_FACTS_SCHEMA))

    return run


def inventory(storage_options: Optional[dict] = None):
    """mapInArrow function: rows (puffin_file, file_kind, file_size) → one row per blob, decoded."""

    def run(batches):
        steady_imports()
        import pyarrow as pa

        schema = _arrow_schema(INVENTORY_SCHEMA)
        for row in _dv_rows(batches):
            rows = list(_inventory_rows(row["puffin_file"], row["file_kind"], storage_options,
                                        row.get("location")))
            yield pa.RecordBatch.from_pylist(rows, schema=schema)

    return run


def _inventory_rows(path: str, kind: str, storage_options: Optional[dict],
                    location: Optional[str] = None) -> Iterator[dict]:
    from ..errors import PuffinError
    from ..format.puffin import PuffinFile
    from .tables import fsspec_location

    base = {"puffin_file": path, "file_kind": kind, "file_size": None, "blob_index": None, "blob_type": None,
            "fields": None, "snapshot_id": None, "sequence_number": None, "offset": None, "length": None,
            "compression_codec": None, "properties": None, "summary": None, "cardinality": None,
            "ndv_estimate": None, "findings": [], "file_findings": []}
    try:
        pf = PuffinFile(fsspec_location(location or path), storage_options=storage_options)
        findings = list(pf.findings)
    except PuffinError as exc:
        yield dict(base, summary="unreadable", file_findings=[f"error {exc.code or 'file.unreadable'} @ {exc.offset}: {exc}"])
        return
    base["file_size"] = pf.size
    per_blob: dict[int, list[str]] = {}
    file_level: list[str] = []
    for f in findings:
        owner = _owning_blob(pf.blobs, f)
        (per_blob.setdefault(owner, []) if owner is not None else file_level).append(str(f))
    if not pf.blobs:
        yield dict(base, summary="no blobs", file_findings=file_level)
        return
    for blob in pf.blobs:
        row = dict(base, blob_index=blob.index, blob_type=blob.type,
                   fields=[int(x) for x in blob.fields if isinstance(x, int)] if blob.fields else [],
                   snapshot_id=blob.snapshot_id, sequence_number=blob.sequence_number,
                   offset=blob.offset, length=blob.length, compression_codec=blob.compression_codec,
                   properties={str(k): str(v) for k, v in (blob.properties or {}).items()},
                   findings=per_blob.get(blob.index, []), file_findings=file_level)
        if blob.readable:
            try:
                decoded = blob.decode()
                row["summary"] = decoded.summary()
                if hasattr(decoded, "cardinality"):
                    row["cardinality"] = int(decoded.cardinality)
                if getattr(decoded, "sketch", None) is not None:
                    row["ndv_estimate"] = float(decoded.estimate)
            except (PuffinError, ValueError) as exc:
                row["summary"] = f"cannot decode: {exc}"
        yield row


def position_deletes(storage_options: Optional[dict] = None):
    """mapInArrow function: position-delete files (file_path, location) → (data_file, pos) of every row."""

    def run(batches):
        steady_imports()
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ..io import FileIO
        from .tables import fsspec_location

        io = FileIO(storage_options)
        for row in _dv_rows(batches):
            location = fsspec_location(row.get("location") or row["file_path"])
            data = io.read(location)  # a missing file is a NotFoundError naming it
            rows = pq.read_table(pa.BufferReader(data), columns=["file_path", "pos"])
            yield pa.RecordBatch.from_arrays([rows.column("file_path").combine_chunks().cast(pa.string()),
                                              rows.column("pos").combine_chunks().cast(pa.int64())],
                                             names=["data_file", "pos"])

    return run


def data_file_rows(location: str, positions: np.ndarray, schema, storage_options: Optional[dict] = None):
    """mapInArrow function: the rows at ``positions`` of one Parquet data file, ``pos`` first.

    Used when the session's Hadoop file systems cannot read the file's scheme (an
    ``s3://`` table on a cluster without S3A): the file is read through this
    package's reader, only the row groups that hold a deleted row.
    """
    wanted = sorted_unique(np.asarray(positions, dtype=np.int64))

    def run(batches):
        steady_imports()
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ..io import ByteSource
        from .tables import fsspec_location

        started = False
        for _ in batches:
            if started:
                continue  # one task reads the file; the plan has a single row
            started = True
            with ByteSource(fsspec_location(location), storage_options).open() as fh:
                pf = pq.ParquetFile(fh)
                first = 0
                for i in range(pf.metadata.num_row_groups):
                    n = pf.metadata.row_group(i).num_rows
                    lo, hi = np.searchsorted(wanted, [first, first + n])
                    if hi > lo:
                        rows = pf.read_row_group(i)
                        local = wanted[lo:hi] - first
                        part = rows.take(pa.array(local))
                        part = part.add_column(0, "pos", pa.array(wanted[lo:hi], pa.int64()))
                        yield from part.cast(schema).to_batches()
                    first += n

    return run


def _owning_blob(blobs, finding) -> Optional[int]:
    space = getattr(finding, "space", "file")
    if space != "file":
        for blob in blobs:
            if space.endswith(f" {blob.index} decompressed") or f"[{blob.index}]" in space:
                return blob.index
        return None
    if finding.offset is None:
        return None
    for blob in blobs:
        if blob.offset is not None and blob.end is not None and blob.offset <= finding.offset < blob.end:
            return blob.index
    return None


