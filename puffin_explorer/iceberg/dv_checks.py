"""The live DVs of a snapshot: their references as joins over the index (none, orphan, duplicate); then, reading
files, each DV file opened once and each of its DVs checked against the footer blob at its offset (or the Delta DV
file or bare blob it is in) and read, the DVs :mod:`.dv_screen` clears as arrays first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from .._text import plural
from ..errors import PuffinError
from ..format import container
from ..regions import Finding, Severity
from . import vanished
from .check_base import CheckColumns, file_finding, open_puffin
from .dv_screen import DV_BLOB_TYPE, cleared_dvs
from .dvreads import dv_reader
from .metadata import _is_int  # a JSON integer within int64: a footer offset past it is no offset
from .paths import normalize

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


def check_dvs(source: "TableSource", snapshot_id: int, cols: CheckColumns, out: list[Finding],
              progress: Optional[Callable[[int, int], None]] = None, read_files: bool = True) -> None:
    """The live DVs' references (orphan, duplicate, none) as joins over the index; with ``read_files``
    each DV's Puffin footer entry and bytes, one Puffin file at a time."""
    import numpy as np

    dv_mask = cols.deletes & cols.kind_is("dv")
    if not dv_mask.any():
        return
    rows = np.flatnonzero(dv_mask)
    target = _check_references(cols, snapshot_id, rows, out)
    if read_files:
        _check_files(source, snapshot_id, cols, dv_mask, rows, target, out, progress)


def _check_references(cols: CheckColumns, snapshot_id: int, rows: Any, out: list[Finding]) -> Any:
    """DV entries without a referenced_data_file, those whose data file is not live (orphans) and data files with
    more than one DV; returns the data file of each DV row as a place among the live data rows (-1: none)."""
    import numpy as np
    import pyarrow.compute as pc

    from .columns import last_of_each, path_codes

    # paths as codes of the index's one dictionary of normalized paths: equal codes, the same file
    paths = path_codes(cols.ix)
    ref_code = paths.refs[rows].astype(np.int64)
    ref = cols.ix.take(rows, ["referenced_data_file"]).column("referenced_data_file")
    no_ref = pc.fill_null(pc.equal(ref, ""), True).to_numpy(zero_copy_only=False)
    del ref
    # the last live data entry of each path (what a dict keyed by path keeps), as a place among the data rows
    last = last_of_each(paths.files[np.flatnonzero(cols.data)], paths.size)
    target = np.where(no_ref, -1, last[ref_code])
    _report_unreferenced(cols, snapshot_id, rows, no_ref, target, out)
    _report_duplicates(cols, snapshot_id, rows, ref_code, no_ref, out)
    return target


def _values(cols: CheckColumns, rows: Any, name: str, at: Any) -> list:
    """Column ``name`` of the DV rows ``rows[at]``, as Python values."""
    import numpy as np

    return cols.ix.take(rows[np.asarray(at, dtype=np.int64)], [name]).column(name).to_pylist()


def _report_unreferenced(cols: CheckColumns, snapshot_id: int, rows: Any, no_ref: Any, target: Any,
                         out: list[Finding]) -> None:
    """A finding for each DV entry with no referenced_data_file and each whose data file is not live."""
    import numpy as np

    orphan = ~no_ref & (target < 0)
    flagged = np.flatnonzero(no_ref | orphan)
    for i, path, r, off, size in zip(flagged.tolist(), _values(cols, rows, "file_path", flagged),
                                     _values(cols, rows, "referenced_data_file", flagged),
                                     _values(cols, rows, "content_offset", flagged),
                                     _values(cols, rows, "content_size_in_bytes", flagged)):
        if no_ref[i]:
            out.append(file_finding("iceberg.dv-no-referenced-file", Severity.ERROR, path,
                                    f"DV entry in {cols.manifest_path(rows[i])} has no referenced_data_file",
                                    off, size))
        else:
            out.append(file_finding("iceberg.dv-orphan", Severity.ERROR, path,
                                    f"DV at offset {off} references {r}, which is not a live data file of snapshot "
                                    f"{snapshot_id}", off, size))


def _report_duplicates(cols: CheckColumns, snapshot_id: int, rows: Any, ref_code: Any, no_ref: Any,
                       out: list[Finding]) -> None:
    """A finding for each data file more than one DV references (``ref_code``: each DV row's referenced data file
    as a path code of the index)."""
    import numpy as np

    from .columns import path_codes

    paths = path_codes(cols.ix)
    same_key = np.where(no_ref, paths.size, ref_code)
    twice = np.flatnonzero((np.bincount(same_key)[same_key] > 1) & ~no_ref)
    if not len(twice):
        return
    groups: dict[str, list[tuple[str, Any]]] = {}
    for k, path, off in zip(paths.take(ref_code[twice]).to_pylist(), _values(cols, rows, "file_path", twice),
                            _values(cols, rows, "content_offset", twice)):
        groups.setdefault(k, []).append((path, off))
    for k, entries in groups.items():
        where = ", ".join(f"{path}@{off}" for path, off in entries)
        out.append(file_finding("iceberg.dv-duplicate", Severity.ERROR, entries[0][0],
                                f"{plural(len(entries), 'DV', sep='')} for data file {k} in snapshot {snapshot_id}: "
                                f"{where}", hint="a snapshot may hold at most one DV per data file"))


class _DataFiles(NamedTuple):
    """The live data files (Arrow, in index order) a DV row's target is a place among: their paths, their row
    counts, and those as limits (numpy; the int64 maximum where there is none: no position is out of its range)."""

    paths: Any
    records: Any
    limits: Any


class _FileDVs(NamedTuple):
    """The DV entries of one DV file, a Python list per column (place ``i``: its i-th entry), their rows in the
    index and their data files (a place among the live data rows, -1: none)."""

    offsets: list
    sizes: list
    refs: list
    records: list
    file_sizes: list
    rows: Any
    target: Any


#: The columns of the DV entries a file's checks read, in :class:`_FileDVs`' order.
_DV_COLUMNS = ("content_offset", "content_size_in_bytes", "referenced_data_file", "record_count",
               "file_size_in_bytes")


def _check_files(source: "TableSource", snapshot_id: int, cols: CheckColumns, dv_mask: Any, rows: Any, target: Any,
                 out: list[Finding], progress: Optional[Callable[[int, int], None]]) -> None:
    """Each DV file the live DVs name, its entries grouped and checked together (:func:`_check_file`);
    ``progress(done, total)`` before each file and after the last."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    dv = cols.select(["file_path", *_DV_COLUMNS], dv_mask)
    data = cols.select(["file_path", "record_count"], cols.data)
    entries = pa.table(dv)  # Python values are made one Puffin file at a time, never for every DV at once
    by_file = pc.dictionary_encode(dv["file_path"], null_encoding="encode")
    codes, puffins = by_file.indices.to_numpy(zero_copy_only=False), by_file.dictionary.to_pylist()
    limits = pc.fill_null(data["record_count"].cast(pa.int64()), np.iinfo(np.int64).max) \
        .to_numpy(zero_copy_only=False)
    data_files = _DataFiles(data["file_path"], data["record_count"], limits)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(puffins) + 1))
    done = 0
    for p, path in enumerate(puffins):
        at = order[bounds[p]:bounds[p + 1]]  # this file's entries, in index order
        if progress is not None:
            progress(done, len(rows))
        done += len(at)
        part = entries.take(pa.array(at))
        dvs = _FileDVs(*(part.column(n).to_pylist() for n in _DV_COLUMNS), rows[at], target[at])
        _check_file(source, snapshot_id, cols, path, dvs, data_files, out)
    if progress is not None:
        progress(done, len(rows))


def _check_file(source: "TableSource", snapshot_id: int, cols: CheckColumns, path: str, dvs: _FileDVs,
                data: _DataFiles, out: list[Finding]) -> None:
    """One DV file: opened (gone while a newer metadata version exists: a note), the file itself
    (:func:`_check_container`), its DVs the screen clears, then the others one by one (:func:`_check_each`)."""
    said = len(out)
    pf = open_puffin(source, path, out)
    if pf is None:
        if out[said:] and out[-1].code == "iceberg.file-missing" and not vanished.looks_moved(source, path):
            out[-1] = vanished.note(source, path, snapshot_id, "Puffin file",  # a DV file the snapshot needs
                                    "its DVs are not checked; their counts come from the manifests")
        return
    kind = getattr(pf, "container", container.PUFFIN)
    _check_container(pf, kind, path, dvs, out)
    members = list(range(len(dvs.offsets)))
    if kind == container.PUFFIN:  # what a columnar screen finds right needs no step of its own
        cleared = cleared_dvs(pf, members, dvs.offsets, dvs.sizes, dvs.records, dvs.refs, dvs.target, data.limits)
        members = [i for i in members if i not in cleared]
    offsets, sizes = dvs.offsets, dvs.sizes
    placed = [i for i in members if offsets[i] is not None and sizes[i] is not None]
    ready = _read_together(source, path, placed, dvs.offsets, dvs.sizes, dvs.refs, dvs.file_sizes)
    _check_each(source, pf, kind, path, members, dvs, ready, cols, data, out)


def _check_container(pf: Any, kind: str, path: str, dvs: _FileDVs, out: list[Finding]) -> None:
    """The DV file's size against its first entry's ``file_size_in_bytes``; a Delta DV file (UniForm) or a bare DV
    blob said to be one, with the Delta DV file's own findings."""
    if dvs.file_sizes[0] is not None and int(dvs.file_sizes[0]) != pf.size:
        out.append(file_finding("iceberg.file-size-mismatch", Severity.ERROR, path,
                                f"manifest file_size_in_bytes {dvs.file_sizes[0]} but the file has "
                                f"{plural(pf.size, 'byte', sep='')}"))
    if kind == container.DELTA_DV_FILE:
        dvf = pf.delta_file
        out.append(file_finding("iceberg.dv-in-delta-file", Severity.INFO, path,
                                f"{plural(len(dvs.offsets), 'DV entry', sep='')} point into a Delta deletion-vector "
                                f"file (UniForm), not a Puffin file: {dvf.summary()}"))
        for fd in dvf.file_findings:
            out.append(file_finding(fd.code, fd.severity, path, fd.message, fd.offset, fd.length, fd.hint))
    elif kind == container.BARE_DV:
        out.append(file_finding("iceberg.dv-bare-blob", Severity.WARNING, path,
                                f"the DV file is a bare deletion-vector blob ({plural(pf.size, 'byte')}), not a "
                                "Puffin file"))


def _check_each(source: "TableSource", pf: Any, kind: str, path: str, members: list[int], dvs: _FileDVs,
                ready: dict[int, Any], cols: CheckColumns, data: _DataFiles, out: list[Finding]) -> None:
    """The DVs ``members`` of one file one by one: a range, the footer blob (or Delta DV) at its offset, its bytes
    read (``ready``: those read together already) and what they hold against the entry and its data file."""
    blobs_by_offset = {b.offset: b for b in pf.blobs if _is_int(b.offset)}  # damaged footers: see findings
    offsets, sizes, refs, record_counts, file_sizes, rows, target = dvs
    for i in members:
        off, size, r, records = offsets[i], sizes[i], refs[i], record_counts[i]
        manifest_path = cols.manifest_path(rows[i])
        if off is None or size is None:
            out.append(file_finding("iceberg.dv-missing-range", Severity.ERROR, path,
                                    f"DV entry for {r} in {manifest_path} has no "
                                    "content_offset/content_size_in_bytes"))
            continue
        e = {"file_path": path, "content_offset": off, "content_size_in_bytes": size,
             "referenced_data_file": r, "record_count": records, "file_size_in_bytes": file_sizes[i],
             "manifest_path": manifest_path}
        blob = blobs_by_offset.get(int(off))
        if kind != container.PUFFIN:
            _check_other_container(pf, kind, e, int(off), int(size), path, out)
        elif blob is None:
            known = ", ".join(f"{b.offset}+{b.length}" for b in pf.blobs)
            out.append(file_finding("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                                    f"manifest {manifest_path} says the DV for {r} is at offset {off} length {size}; "
                                    f"the Puffin footer has no blob at offset {off} (blobs at {known or 'none'})",
                                    int(off), int(size)))
        else:
            _check_blob(blob, e, path, out)
        try:
            dv_read = ready[i] if i in ready else dv_reader(source).read_dv(e)
        except (PuffinError, OSError, ValueError) as exc:
            out.append(file_finding("iceberg.dv-unreadable", Severity.ERROR, path,
                                    f"DV at offset {off} length {size} (for {r}) cannot be read: {exc}",
                                    getattr(exc, "offset", None) or int(off), int(size)))
            continue
        for f in getattr(dv_read, "findings", []):
            if f.severity == Severity.ERROR:
                out.append(file_finding(f.code, Severity.ERROR, path,
                                        f"DV at offset {off} length {size} (for {r}): {f.message}", f.offset,
                                        f.length, f.hint))
        if records is not None and int(dv_read.cardinality) != int(records):
            out.append(file_finding("iceberg.dv-cardinality-mismatch", Severity.ERROR, path,
                                    f"manifest record_count {records} but the DV at offset {off} holds "
                                    f"{plural(dv_read.cardinality, 'position', sep='')}", int(off), int(size)))
        t = int(target[i])
        if t >= 0 and int(dv_read.cardinality) > 0 and data.records[t].is_valid:
            highest = int(dv_read.positions()[-1])
            limit = data.records[t].as_py()
            if highest >= limit:
                out.append(file_finding("iceberg.dv-position-out-of-range", Severity.ERROR, path,
                                        f"DV at offset {off} deletes position {highest} but {data.paths[t].as_py()} "
                                        f"has only {plural(limit, 'row', sep='')}", int(off), int(size)))


def _read_together(source: "TableSource", path: str, members: list[int], offsets: list, sizes: list, refs: list,
                   file_sizes: list) -> dict[int, Any]:
    """The DVs of one Puffin file read in one planned pass (``read_dvs``), by row; empty when any of
    them cannot be read, so that each is then read alone and its own error reported."""
    if len(members) < 2:
        return {}
    # An entry listed many times (a damaged manifest repeating one record) is read once: 5,000 copies of one
    # DV decoded apart held 5,000 position arrays.
    keys = [(offsets[i], sizes[i], refs[i], file_sizes[i]) for i in members]
    first = {}
    for k, i in zip(keys, members):
        first.setdefault(k, i)
    entries = [{"file_path": path, "content_offset": offsets[i], "content_size_in_bytes": sizes[i],
                "referenced_data_file": refs[i], "file_size_in_bytes": file_sizes[i]} for i in first.values()]
    from ..format.dv import validate_many

    try:
        dvs = dv_reader(source).read_dvs(entries, progress=False)
    except (PuffinError, OSError, ValueError):
        return {}
    validate_many(dvs)  # the common shape checked in one pass: its findings need no per-vector parse
    read = dict(zip(first, dvs))
    return {i: read[k] for k, i in zip(keys, members)}


def _check_blob(blob: Any, e: dict, path: str, out: list[Finding]) -> None:
    """A DV entry against the Puffin footer's blob at its offset: length, type and the blob's properties."""
    off, size = int(e["content_offset"]), int(e["content_size_in_bytes"])
    if blob.length != size:
        out.append(file_finding("iceberg.dv-length-mismatch", Severity.ERROR, path,
                                f"manifest content_size_in_bytes {size} but footer blob {blob.index} at offset "
                                f"{off} has length {blob.length}", off, size))
    if blob.type != DV_BLOB_TYPE:
        out.append(file_finding("iceberg.dv-blob-type", Severity.ERROR, path,
                                f"blob {blob.index} at offset {off} is {blob.type!r}, not {DV_BLOB_TYPE}", off,
                                blob.length if _is_int(blob.length) else None))
    props = dict(blob.properties or {})
    card_prop = props.get("cardinality")
    if card_prop is not None and str(card_prop) != str(e["record_count"]):
        out.append(file_finding("iceberg.dv-cardinality-property-mismatch", Severity.ERROR, path,
                                f"manifest record_count {e['record_count']} but blob {blob.index} property "
                                f"cardinality {card_prop}", off, size))
    ref_prop = props.get("referenced-data-file")
    if ref_prop and e.get("referenced_data_file") and normalize(ref_prop) != normalize(e["referenced_data_file"]):
        out.append(file_finding("iceberg.dv-reference-mismatch", Severity.ERROR, path,
                                f"manifest referenced_data_file {e['referenced_data_file']} but blob "
                                f"{blob.index} property referenced-data-file {ref_prop}", off, size))


def _check_other_container(pf: Any, kind: str, e: dict, off: int, size: int, path: str,
                           out: list[Finding]) -> None:
    """A DV entry whose file is a Delta DV file or a bare DV blob: is there a DV at its offset, of its size?"""
    ref = e.get("referenced_data_file")
    if kind == container.DELTA_DV_FILE:
        dvf = pf.delta_file
        d = dvf.dv_at(off)
        if d is None:
            inside = dvf.container_of(off)
            where = (f"offset {off} is inside DV {inside.index} [{inside.offset}, {inside.end})" if inside
                     else f"DVs start at {', '.join(str(x.offset) for x in dvf.dvs) or 'none'}")
            out.append(file_finding("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                                    f"manifest {e['manifest_path']} says the DV for {ref} is at offset {off} length "
                                    f"{size}; the Delta DV file has no DV there ({where})", off, size))
        elif d.length != size:
            out.append(file_finding("iceberg.dv-length-mismatch", Severity.ERROR, path,
                                    f"manifest content_size_in_bytes {size} but DV {d.index} of the Delta DV file at "
                                    f"offset {off} is {plural(d.length, 'byte', sep='')} (sizeInBytes "
                                    f"{d.size_in_bytes} + 8)", off, size))
        return
    if off != 0 or size != pf.size:
        out.append(file_finding("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                                f"manifest {e['manifest_path']} says the DV for {ref} is at offset {off} length "
                                f"{size}; the file is one bare DV blob [0, {pf.size})", off, size))
