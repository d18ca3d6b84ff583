"""Cross-checks between a snapshot's manifests, its Puffin files and the table's statistics entries.

Each problem is a :class:`TableFinding`: a :class:`Finding` that also names the
file it is about (offsets are in that file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from .._text import plural
from ..errors import PuffinError, StorageUnavailableError
from ..io.scope import OutsideScopeError
from ..regions import Finding, FindingList, Severity
from ..format import container
from . import vanished
from .deletes import snapshot_position_delete_counts
from .dvreads import dv_reader
from .findings import TableFinding
from .index import build_index
from .metadata import _is_int  # a JSON integer within int64: a footer offset past it is no offset
from .paths import basename, normalize, parent

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource

DV_BLOB_TYPE = "deletion-vector-v1"


def _f(code: str, severity: Severity, file: str, message: str, offset: Optional[int] = None,
       length: Optional[int] = None, hint: str = "") -> TableFinding:
    return TableFinding(code=code, severity=severity, offset=offset, message=message, hint=hint,
                        length=length, file=file)


def findings_frame(findings: list[Finding]):
    """Findings as a DataFrame (one row each)."""
    import pandas as pd

    cols = ["severity", "code", "file", "offset", "length", "message", "hint"]
    rows = [{**f.to_dict(), "file": getattr(f, "file", "")} for f in findings]
    return pd.DataFrame.from_records(rows, columns=cols)


def puffin_footer_size(pf: Any) -> Optional[int]:
    """Bytes from the footer's start magic to the end of the file, read from the file's tail."""
    footer = getattr(pf, "footer", None)
    if footer is not None and isinstance(getattr(footer, "size", None), int):
        return footer.size
    source = getattr(pf, "source", None)
    if source is None or getattr(source, "size", 0) < 12:
        return None
    start, tail = source.tail(12)
    payload_size = int.from_bytes(tail[0:4], "little", signed=True)
    return payload_size + 16


def _open_puffin(source: "TableSource", path: str, out: list[Finding]):
    from ..format.puffin import PuffinFile

    try:
        return PuffinFile(source.locate(path), storage_options=source.io.storage_options)
    except (PuffinError, OSError, ValueError) as exc:
        missing = not isinstance(exc, (StorageUnavailableError, OutsideScopeError)) \
            and not source.io.exists(source.locate(path))
        out.append(_f("iceberg.file-missing" if missing else "iceberg.puffin-unreadable", Severity.ERROR, path,
                      f"cannot open Puffin file {source.locate(path)}: {exc}", getattr(exc, "offset", None)))
        return None


#: Index findings that a check reading the files leaves to the checks that open them.
_SAID_BY_FILE_CHECKS = ("iceberg.entry-range-beyond-file",)


def check_snapshot(source: "TableSource", snapshot_id: Optional[int] = None, check_files_exist: bool = True,
                   progress: Optional[Callable[[int, int], None]] = None, read_files: bool = True) -> FindingList:
    """What ``Table.check()`` returns: what reading the manifests found (damage, impossible values), then the
    cross-checks of :func:`check_table`, then the files of the snapshot that vanished while it was read."""
    try:
        found = build_index(source, snapshot_id).findings
        if read_files:  # a DV range past its file: the checks that read the file say what is there instead
            found = [f for f in found if f.code not in _SAID_BY_FILE_CHECKS]
        out = FindingList(found)
    except PuffinError:
        out = FindingList()  # the manifest list itself: check_table reports it
    out.extend(check_table(source, snapshot_id, check_files_exist=check_files_exist and read_files,
                           progress=progress, read_files=read_files))
    sid = source.metadata.current_snapshot_id if snapshot_id is None else snapshot_id
    out.extend(dict.fromkeys(f for f in vanished.snapshot_findings(source, sid) if f not in out))
    return out


def check_table(source: "TableSource", snapshot_id: Optional[int] = None, check_files_exist: bool = True,
                progress: Optional[Callable[[int, int], None]] = None, read_files: bool = True) -> list[Finding]:
    """Run every cross-check on one snapshot (current by default) and the table's statistics files.

    The metadata file's own findings come first. ``progress(done, total)`` is called as DVs
    are checked. ``read_files=False`` runs only the checks that need no Puffin byte (summary
    totals, DV references). A table with no current snapshot gets the checks that need none.
    The checks are queries over the snapshot's entry index: one Python step per finding, per
    manifest or per file read, none per entry.
    """
    out: list[Finding] = list(source.metadata.findings)
    if snapshot_id is None and source.metadata.current_snapshot_id is None:
        if read_files:
            _check_statistics(source, out)
        return out
    snap = source.snapshot(snapshot_id)
    try:
        ix = build_index(source, snap.snapshot_id)
    except PuffinError as exc:
        return out + [_f("iceberg.manifest-unreadable", Severity.ERROR, snap.manifest_list or "", str(exc),
                         exc.offset)]
    if not ix.manifests and any(f.code in ("iceberg.manifest-unreadable", "table.file-vanished")
                                for f in ix.findings):
        if read_files:  # no manifest list to check against (the index's finding says why)
            _check_statistics(source, out)
        return out
    cols = _Columns(ix)
    counts: dict[str, Any] = {}

    def position_delete_counts() -> dict[str, dict[str, int]]:
        """Per data file, rows named by the live position-delete files (read once; an unreadable one is a finding)."""
        if "v" not in counts:
            try:
                counts["v"] = snapshot_position_delete_counts(source, ix)
            except (PuffinError, OSError) as exc:
                counts["v"] = {"rows": {}, "files": {}}
                code = "iceberg.position-delete-unreadable" if getattr(exc, "code", "") == \
                    "iceberg.position-delete-unreadable" else "iceberg.file-missing"
                what = "" if code != "iceberg.file-missing" else "cannot read position deletes: "
                paths = ix.table.column("file_path").filter(_arrow_mask(cols.deletes & cols.kind_is("position-deletes")))
                named = [p for p in paths.to_pylist() if source.locate(p) in str(exc)]
                out.append(_f(code, Severity.ERROR, named[0] if named else "", f"{what}{exc}"))
        return counts["v"]

    try:
        if not any(f.code == "table.file-vanished" for f in ix.findings):  # partial counts say nothing
            _check_summary(snap, cols, out)
        if read_files:  # a hash of every live path: 0.3 s at 2,000,000 entries, kept out of the card
            _check_listed_twice(snap, cols, out)
        _check_quirks(source, snap, cols, out, position_delete_counts)
        _check_row_lineage(source, snap, out)
        _check_dvs(source, snap.snapshot_id, cols, out, progress, read_files)
        if read_files and (cols.deletes & cols.kind_is("position-deletes")).any():
            position_delete_counts()
        if read_files:
            _check_statistics(source, out)
        if check_files_exist:
            _check_files_exist(source, snap.snapshot_id, cols, out)
    except PuffinError as exc:  # what the checks read themselves (a manifest list, a statistics file)
        out.append(_f("iceberg.manifest-unreadable", Severity.ERROR, getattr(exc, "location", None) or "",
                      str(exc), exc.offset))
    return out


def _arrow_mask(mask):
    """A numpy boolean mask as an Arrow array (for ``filter``)."""
    import pyarrow as pa

    return pa.array(mask, pa.bool_())


class _Columns:
    """The index columns the checks share, as numpy arrays, computed once.

    ``data`` / ``deletes`` select the live entries of data / delete manifests (what
    ``entries(content=...)`` lists); every row, DELETED ones included, is in the other arrays.
    """

    def __init__(self, ix: Any) -> None:
        self.ix = ix
        self.data = ix.mask(deletes=False)
        self.deletes = ix.mask(deletes=True)
        self.content = ix.ints("content", -1)
        self.status = ix.ints("status", 1)
        self.records = ix.ints("record_count", 0)
        self.manifest = ix.ints("manifest")
        self._kinds: dict[str, Any] = {}

    def kind_is(self, kind: str):
        if kind not in self._kinds:
            import pyarrow.compute as pc

            self._kinds[kind] = pc.fill_null(pc.equal(self.ix.table.column("kind"), kind), False) \
                .to_numpy(zero_copy_only=False)
        return self._kinds[kind]

    def manifest_path(self, row: int) -> str:
        return self.ix.manifests[int(self.manifest[row])].get("manifest_path")

    def select(self, names: list[str], mask):
        """The named columns of the rows ``mask`` selects, as one-chunk Arrow arrays."""
        t = self.ix.table.select(names).filter(_arrow_mask(mask))
        return {n: t.column(n).combine_chunks() for n in names}


def _exact_sum(values) -> int:
    """The sum of an int64 numpy array as a Python int (exact past a long)."""
    if not len(values):
        return 0
    if max(int(values.max()), -int(values.min())) * len(values) < 2 ** 63:
        return int(values.sum())
    return sum(values.tolist())


def _totals(cols: _Columns, data, deletes) -> dict[str, int]:
    records = cols.records
    return {
        "total-data-files": int(data.sum()),
        "total-delete-files": int(deletes.sum()),
        "total-records": _exact_sum(records[data]),
        "total-position-deletes": _exact_sum(records[deletes & (cols.content == 1)]),
        "total-equality-deletes": _exact_sum(records[deletes & (cols.content == 2)]),
    }


def _check_summary(snap: Any, cols: _Columns, out: list[Finding]) -> None:
    """The snapshot summary's totals against what the manifests hold (a writer that counted DELETED
    entries is named as such)."""
    computed = _totals(cols, cols.data, cols.deletes)
    with_deleted = None
    for key, value in computed.items():
        claimed = snap.summary.get(key)
        if claimed is None:
            continue
        try:
            claimed_n = int(claimed)
        except ValueError:
            claimed_n = None
        if claimed_n != value and with_deleted is None:
            with_deleted = _totals(cols, cols.content == 0, cols.content != 0)
        if claimed_n != value and claimed_n == with_deleted[key]:
            out.append(_f("iceberg.summary-counts-deleted", Severity.WARNING, snap.manifest_list or "",
                          f"snapshot {snap.snapshot_id} summary says {key} {claimed}: that counts the DELETED "
                          f"(status 2) entries its manifests carry; the live total is {value}"))
        elif claimed_n != value:
            out.append(_f("iceberg.summary-mismatch", Severity.WARNING, snap.manifest_list or "",
                          f"snapshot {snap.snapshot_id} summary says {key} {claimed} but its manifests hold {value}"))


def _check_listed_twice(snap: Any, cols: _Columns, out: list[Finding]) -> None:
    """Live entries that name a file (a DV: a file and offset) another live entry names too."""
    import pyarrow as pa
    import pyarrow.compute as pc

    named = cols.ix.table.select(["file_path", "content_offset"])
    alike = _rows_hashed_alike(named, cols.data | cols.deletes)
    if len(alike) < 2:
        return
    live = named.take(pa.array(alike))  # grouped exactly: the rows a hash cannot tell apart, most often none
    twice = _repeated_rows(live)
    if not twice.num_rows:
        return
    paths = twice.column("file_path").to_pylist()
    extra = int(pc.sum(twice.column("n")).as_py()) - twice.num_rows
    names = sorted({basename(p or "") for p in paths})
    out.append(_f("iceberg.file-listed-twice", Severity.ERROR, paths[0] or "",
                  f"{twice.num_rows:,} {'file is' if twice.num_rows == 1 else 'files are'} named by more than one live entry of snapshot {snap.snapshot_id} "
                  f"({plural(extra, 'entry')} more than files): {', '.join(names[:3])}{' …' if len(names) > 3 else ''}; "
                  "engines read a data file once per entry; a delete file's deletes are counted once here"))


def _repeated_rows(table: Any):
    """Each distinct row of ``table`` that occurs more than once, with its count ``n``, in the order of their first
    rows. DuckDB groups them: Arrow's ``group_by`` before pyarrow 17 splits equal keys of several columns one of
    which is null into many groups on AVX2 CPUs (apache/arrow#42231; a delete file listed 5,000 times was 595)."""
    import duckdb
    import numpy as np
    import pyarrow as pa

    con = duckdb.connect(config={"threads": 1})
    try:
        con.execute("SET enable_progress_bar = false")
        con.register("rows_", table.append_column("row_", pa.array(np.arange(table.num_rows, dtype=np.int64))))
        names = ", ".join(f'"{n}"' for n in table.column_names)
        got = con.sql(f"SELECT {names}, count(*) AS n FROM rows_ GROUP BY {names} HAVING count(*) > 1 "
                      "ORDER BY min(row_)")
        return got.to_arrow_table() if hasattr(got, "to_arrow_table") else got.arrow()
    finally:
        con.close()


def _rows_hashed_alike(table: Any, mask: Any):
    """The rows ``mask`` selects whose values hash as another selected row's do, in row order: every row that
    repeats another, and (rarely) one that only shares its 64-bit hash. DuckDB hashes the Arrow columns without
    a Python value per row; an Arrow group-by of two million paths held 800 MB more than the index."""
    import numpy as np
    import pyarrow as pa

    from .._engine import locked_duckdb

    con = locked_duckdb()  # one thread: rows come back in table order; Arrow in memory only, no file, no URL
    try:
        names = ", ".join(f'"{n}"' for n in table.column_names)
        con.register("named", table.append_column("selected_", pa.array(mask, pa.bool_()))
                     .append_column("row_", pa.array(np.arange(len(mask), dtype=np.int64))))
        got = con.sql(f"SELECT row_, hash({names}) AS h FROM named WHERE selected_")
        got = got.to_arrow_table() if hasattr(got, "to_arrow_table") else got.arrow()
    finally:
        con.close()
    rows, h = got.column("row_").to_numpy(), got.column("h").to_numpy()
    order = np.argsort(h, kind="stable")
    same = h[order][1:] == h[order][:-1]
    repeat = np.zeros(len(h), bool)
    repeat[order[1:][same]] = repeat[order[:-1][same]] = True
    return np.sort(rows[repeat])


def _check_quirks(source: "TableSource", snap: Any, cols: _Columns, out: list[Finding],
                  position_delete_counts: Callable[[], dict]) -> None:
    """Writer habits that change no number here but that a reader should know about."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import normalized

    ix = cols.ix
    empty = np.flatnonzero(pc.fill_null(ix.table.column("empty_referenced_data_file"), False)
                           .to_numpy(zero_copy_only=False))
    if len(empty):
        out.append(_f("iceberg.referenced-data-file-empty", Severity.INFO, cols.manifest_path(empty[0]) or "",
                      f"{plural(len(empty), 'manifest entry', sep='')} of snapshot {snap.snapshot_id} have referenced_data_file \"\" "
                      "instead of null; read as no reference"))
    by_path = {m["manifest_path"]: m for m in source.manifest_records(snap.snapshot_id)}
    earlier = np.array([by_path.get(m.get("manifest_path"), {}).get("added_snapshot_id") not in
                        (None, snap.snapshot_id) for m in ix.manifests] or [False], dtype=bool)
    carried = np.flatnonzero((cols.status == 2) & earlier[cols.manifest]) if len(ix) else np.empty(0, np.int64)
    if len(carried):
        kinds = sorted(set(pc.unique(ix.take(carried, ["kind"]).column("kind")).to_pylist()))
        out.append(_f("iceberg.deleted-entries-carried", Severity.INFO, cols.manifest_path(carried[0]) or "",
                      f"{len(carried)} DELETED (status 2) entries of earlier snapshots are still in the manifests of "
                      f"snapshot {snap.snapshot_id} ({', '.join(kinds)}); skipped"))
    has_position = (cols.deletes & cols.kind_is("position-deletes")).any()
    if not has_position:
        return
    refs = cols.select(["referenced_data_file"], cols.deletes & cols.kind_is("dv"))["referenced_data_file"]
    refs = refs.filter(pc.fill_null(pc.not_equal(refs, ""), False))
    if not len(refs):
        return
    rows = position_delete_counts()["rows"]
    keys = pa.array(list(rows), pa.string())
    hit = pc.is_in(keys, value_set=pc.unique(normalized(refs))).to_numpy(zero_copy_only=False)
    covered = {k: rows[k] for k, h in zip(keys.to_pylist(), hit.tolist()) if h}
    if covered:
        out.append(_f("iceberg.position-deletes-superseded", Severity.INFO, "",
                      f"{sum(covered.values()):,} position deletes of {plural(len(covered), 'data file', sep='')} with a DV "
                      f"are ignored in every count (the DV holds them): "
                      f"{', '.join(basename(k) for k in sorted(covered)[:3])}"
                      f"{' …' if len(covered) > 3 else ''}"))


def _check_row_lineage(source: "TableSource", snap: Any, out: list[Finding]) -> None:
    """v3 row lineage: next-row-id covers every row id assigned; delete manifests assign none."""
    md = source.metadata
    if int(md.format_version or 0) < 3:
        return
    next_row_id = md.next_row_id
    assigned: list[tuple[int, str]] = []
    for s in md.snapshots:
        if s.first_row_id is not None and s.added_rows is not None:
            assigned.append((int(s.first_row_id) + int(s.added_rows), f"snapshot {s.snapshot_id}"))
    for m in source.manifest_records(snap.snapshot_id):
        frid = m.get("first_row_id")
        if frid is None:
            continue
        if m.get("content") == 1:
            out.append(_f("iceberg.row-lineage-delete-manifest", Severity.WARNING, m["manifest_path"],
                          f"delete manifest {basename(m['manifest_path'])} has first_row_id {frid} in the manifest "
                          f"list of snapshot {snap.snapshot_id}; only data manifests assign row ids"))
            continue
        rows = int(m.get("added_rows_count") or 0) + int(m.get("existing_rows_count") or 0)
        assigned.append((int(frid) + rows, f"manifest {basename(m['manifest_path'])}"))
    if next_row_id is None or not assigned:
        return
    top, who = max(assigned)
    if top > int(next_row_id):
        out.append(_f("iceberg.row-lineage-next-row-id", Severity.WARNING, source.metadata_location,
                      f"next-row-id is {next_row_id} but {who} assigns row ids up to {top - 1}"))


def _check_dvs(source: "TableSource", snapshot_id: int, cols: _Columns, out: list[Finding],
               progress: Optional[Callable[[int, int], None]] = None, read_files: bool = True) -> None:
    """The live DVs' references (orphan, duplicate, none) as joins over the index; with ``read_files``
    each DV's Puffin footer entry and bytes, one Puffin file at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import last_of_each, path_codes

    dv_mask = cols.deletes & cols.kind_is("dv")
    if not dv_mask.any():
        return
    rows = np.flatnonzero(dv_mask)
    # paths as codes of the index's one dictionary of normalized paths: equal codes, the same file
    paths = path_codes(cols.ix)
    ref_code = paths.refs[rows].astype(np.int64)
    ref = cols.ix.take(rows, ["referenced_data_file"]).column("referenced_data_file")
    no_ref = pc.fill_null(pc.equal(ref, ""), True).to_numpy(zero_copy_only=False)
    del ref
    # the last live data entry of each path (what a dict keyed by path keeps), as a place among the data rows
    last = last_of_each(paths.files[np.flatnonzero(cols.data)], paths.size)
    target = np.where(no_ref, -1, last[ref_code])
    orphan = ~no_ref & (target < 0)

    def values(name: str, at) -> list:
        return cols.ix.take(rows[np.asarray(at, dtype=np.int64)], [name]).column(name).to_pylist()

    flagged = np.flatnonzero(no_ref | orphan)
    for i, path, r, off, size in zip(flagged.tolist(), values("file_path", flagged),
                                     values("referenced_data_file", flagged), values("content_offset", flagged),
                                     values("content_size_in_bytes", flagged)):
        if no_ref[i]:
            out.append(_f("iceberg.dv-no-referenced-file", Severity.ERROR, path,
                          f"DV entry in {cols.manifest_path(rows[i])} has no referenced_data_file", off, size))
        else:
            out.append(_f("iceberg.dv-orphan", Severity.ERROR, path,
                          f"DV at offset {off} references {r}, which is not a live data file of snapshot "
                          f"{snapshot_id}", off, size))
    same_key = np.where(no_ref, paths.size, ref_code)
    twice = np.flatnonzero((np.bincount(same_key)[same_key] > 1) & ~no_ref)
    if len(twice):
        groups: dict[str, list[tuple[str, Any]]] = {}
        for k, path, off in zip(paths.take(ref_code[twice]).to_pylist(),
                                values("file_path", twice), values("content_offset", twice)):
            groups.setdefault(k, []).append((path, off))
        for k, entries in groups.items():
            where = ", ".join(f"{path}@{off}" for path, off in entries)
            out.append(_f("iceberg.dv-duplicate", Severity.ERROR, entries[0][0],
                          f"{plural(len(entries), 'DV', sep='')} for data file {k} in snapshot {snapshot_id}: {where}",
                          hint="a snapshot may hold at most one DV per data file"))
    if not read_files:
        return
    del same_key, last
    dv = cols.select(["file_path", "referenced_data_file", "content_offset", "content_size_in_bytes",
                      "record_count", "file_size_in_bytes"], dv_mask)
    data = cols.select(["file_path", "record_count"], cols.data)
    entries = pa.table(dv)  # Python values are made one Puffin file at a time, never for every DV at once
    by_file = pc.dictionary_encode(dv["file_path"], null_encoding="encode")
    codes, puffins = by_file.indices.to_numpy(zero_copy_only=False), by_file.dictionary.to_pylist()
    data_paths, data_records = data["file_path"], data["record_count"]
    # each data file's row count, the int64 maximum where it has none (no position is out of its range)
    limits = pc.fill_null(data_records.cast(pa.int64()), np.iinfo(np.int64).max).to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(puffins) + 1))
    done = 0
    for p, path in enumerate(puffins):
        at = order[bounds[p]:bounds[p + 1]]  # this file's entries; below, i is a place among them
        part = entries.take(pa.array(at))
        offsets, sizes, refs, record_counts, file_sizes = (part.column(n).to_pylist() for n in (
            "content_offset", "content_size_in_bytes", "referenced_data_file", "record_count", "file_size_in_bytes"))
        file_rows, file_target = rows[at], target[at]
        members = list(range(len(at)))
        if progress is not None:
            progress(done, len(rows))
        done += len(members)
        said = len(out)
        pf = _open_puffin(source, path, out)
        if pf is None:
            if out[said:] and out[-1].code == "iceberg.file-missing" and not vanished.looks_moved(source, path):
                out[-1] = vanished.note(source, path, snapshot_id, "Puffin file",  # a DV file the snapshot needs
                                        "its DVs are not checked; their counts come from the manifests")
            continue
        first = members[0]
        if file_sizes[first] is not None and int(file_sizes[first]) != pf.size:
            out.append(_f("iceberg.file-size-mismatch", Severity.ERROR, path,
                          f"manifest file_size_in_bytes {file_sizes[first]} but the file has {plural(pf.size, 'byte', sep='')}"))
        blobs_by_offset = {b.offset: b for b in pf.blobs if _is_int(b.offset)}  # damaged footers: see findings
        kind = getattr(pf, "container", container.PUFFIN)
        if kind == container.DELTA_DV_FILE:
            dvf = pf.delta_file
            out.append(_f("iceberg.dv-in-delta-file", Severity.INFO, path,
                          f"{plural(len(members), 'DV entry', sep='')} point into a Delta deletion-vector file (UniForm), not a Puffin "
                          f"file: {dvf.summary()}"))
            for fd in dvf.file_findings:
                out.append(_f(fd.code, fd.severity, path, fd.message, fd.offset, fd.length, fd.hint))
        elif kind == container.BARE_DV:
            out.append(_f("iceberg.dv-bare-blob", Severity.WARNING, path,
                          f"the DV file is a bare deletion-vector blob ({plural(pf.size, 'byte')}), not a Puffin file"))
        if kind == container.PUFFIN:  # what a columnar screen finds right needs no step of its own
            cleared = _cleared_dvs(pf, members, offsets, sizes, record_counts, refs, file_target, limits)
            members = [i for i in members if i not in cleared]
        ready = _read_together(source, path, [i for i in members if offsets[i] is not None and sizes[i] is not None],
                               offsets, sizes, refs, file_sizes)
        for i in members:
            off, size, r, records = offsets[i], sizes[i], refs[i], record_counts[i]
            manifest_path = cols.manifest_path(file_rows[i])
            if off is None or size is None:
                out.append(_f("iceberg.dv-missing-range", Severity.ERROR, path,
                              f"DV entry for {r} in {manifest_path} has no content_offset/content_size_in_bytes"))
                continue
            e = {"file_path": path, "content_offset": off, "content_size_in_bytes": size,
                 "referenced_data_file": r, "record_count": records, "file_size_in_bytes": file_sizes[i],
                 "manifest_path": manifest_path}
            blob = blobs_by_offset.get(int(off))
            if kind != container.PUFFIN:
                _check_other_container(pf, kind, e, int(off), int(size), path, out)
            elif blob is None:
                known = ", ".join(f"{b.offset}+{b.length}" for b in pf.blobs)
                out.append(_f("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                              f"manifest {manifest_path} says the DV for {r} is at offset {off} length {size}; the "
                              f"Puffin footer has no blob at offset {off} (blobs at {known or 'none'})",
                              int(off), int(size)))
            else:
                _check_blob(blob, e, path, out)
            try:
                dv_read = ready[i] if i in ready else dv_reader(source).read_dv(e)
            except (PuffinError, OSError, ValueError) as exc:
                out.append(_f("iceberg.dv-unreadable", Severity.ERROR, path,
                              f"DV at offset {off} length {size} (for {r}) cannot be read: {exc}",
                              getattr(exc, "offset", None) or int(off), int(size)))
                continue
            for f in getattr(dv_read, "findings", []):
                if f.severity == Severity.ERROR:
                    out.append(_f(f.code, Severity.ERROR, path,
                                  f"DV at offset {off} length {size} (for {r}): {f.message}", f.offset, f.length,
                                  f.hint))
            if records is not None and int(dv_read.cardinality) != int(records):
                out.append(_f("iceberg.dv-cardinality-mismatch", Severity.ERROR, path,
                              f"manifest record_count {records} but the DV at offset {off} holds "
                              f"{plural(dv_read.cardinality, 'position', sep='')}", int(off), int(size)))
            t = int(file_target[i])
            if t >= 0 and int(dv_read.cardinality) > 0 and data_records[t].is_valid:
                highest = int(dv_read.positions()[-1])
                limit = data_records[t].as_py()
                if highest >= limit:
                    out.append(_f("iceberg.dv-position-out-of-range", Severity.ERROR, path,
                                  f"DV at offset {off} deletes position {highest} but {data_paths[t].as_py()} has "
                                  f"only {plural(limit, 'row', sep='')}", int(off), int(size)))
    if progress is not None:
        progress(done, len(rows))


#: The largest framed DV of the common shape (one bucket, one array container of at most 4,096 positions).
_COMMON_DV_MAX_BYTES = 36 + 2 * 4096 + 4
#: The screen reads at most this many DVs in one request (gap and size as the I/O layer's ``coalesce``).
_SCREEN_REQUEST_DVS = 16_384


def _cleared_dvs(pf: Any, members: list[int], offsets: list, sizes: list, records: list, refs: list,
                 target: Any, limits: Any) -> set[int]:
    """The members (rows of one Puffin file's DV entries) in which a columnar screen finds nothing to say: the
    footer has one blob at the entry's offset, a DV of the entry's length whose properties agree with the entry;
    the DV's bytes are of the common shape and entirely right (:func:`~puffin_explorer.format.dv.common_positions`,
    read a request at a time, no object per DV), its position count the entry's record_count and its last
    position below its data file's row count. The rest go through the per-DV checks, which say what is wrong;
    nothing is cleared that those would report."""
    import numpy as np

    from ..format.dv_batch import common_last_positions
    from ..io.ranges import request_groups

    placed = np.array([i for i in members if offsets[i] is not None and sizes[i] is not None], np.int64)
    blobs = [b for b in pf.blobs if _is_int(b.offset)]
    if not len(placed) or not blobs or len({b.offset for b in blobs}) != len(blobs):  # no blob, or which is unclear
        return set()
    rows = placed.tolist()
    at = np.array([b.offset for b in blobs], np.int64)
    order = np.argsort(at, kind="stable")
    off = np.array([offsets[i] for i in rows], np.int64)
    size = np.array([sizes[i] for i in rows], np.int64)
    j = np.minimum(np.searchsorted(at[order], off), len(at) - 1)
    blob = order[j]  # the footer blob at each entry's offset, where at[blob] == off
    # the entry against its blob, as _check_blob compares them (a property that is not a string compared as str())
    length = np.array([b.length if _is_int(b.length) else -1 for b in blobs], np.int64)
    is_dv = np.array([b.type == DV_BLOB_TYPE for b in blobs], bool)
    props = [b.properties or {} for b in blobs]
    card = np.array([None if p.get("cardinality") is None else str(p.get("cardinality")) for p in props], object)
    ref = np.array([p.get("referenced-data-file") or None for p in props], object)
    claimed = np.array([str(records[i]) for i in rows], object)
    written = np.array([refs[i] or None for i in rows], object)
    card_at, ref_at = card[blob], ref[blob]
    ok = ((at[blob] == off) & (length[blob] == size) & is_dv[blob]
          & (np.equal(card_at, None) | np.equal(card_at, claimed))
          & (np.equal(ref_at, None) | np.equal(written, None) | np.equal(ref_at, written)))
    ok &= (off >= 0) & (off <= pf.size) & (size > 0) & (size <= _COMMON_DV_MAX_BYTES)
    ok &= off + np.where(ok, size, 0) <= pf.size  # no sum near the int64 limit: off is within the file now
    cand = np.flatnonzero(ok)
    cand = cand[np.argsort(off[cand], kind="stable")]
    counted = np.array([records[i] is not None for i in rows], bool)
    count = np.array([records[i] if records[i] is not None else -1 for i in rows], np.int64)
    limit = np.full(len(rows), np.iinfo(np.int64).max, np.int64)
    t = target[placed]
    limit[t >= 0] = limits[t[t >= 0]]
    cleared = np.zeros(len(rows), bool)
    # a request a group: a new one where a gap opens, past a request's bytes or past _SCREEN_REQUEST_DVS DVs
    for sel in (cand[g] for g in request_groups(off[cand], size[cand], _SCREEN_REQUEST_DVS)):
        start = int(off[sel[0]])
        length_ = int((off[sel] + size[sel]).max()) - start
        try:
            span = pf.source.read(start, length_)
        except (PuffinError, OSError, ValueError):  # the per-DV reads say what failed
            continue
        if len(span) != length_:
            continue
        good, cards, last = common_last_positions(span, off[sel] - start, size[sel])
        cleared[sel[good & (~counted[sel] | (cards == count[sel])) & (last < limit[sel])]] = True
    return set(placed[cleared].tolist())


def _brief(v: Any) -> str:
    """``repr`` of a metadata value for a message, with long lists and strings cut (a blob may name a
    million field ids)."""
    import reprlib

    r = reprlib.Repr()
    r.maxlist, r.maxstring, r.maxother, r.maxdict = 20, 200, 200, 20
    return r.repr(v)


def _int_list(v: Any) -> Any:
    """A list of field ids, or the value as it is when it is not one (compared and shown, never cast)."""
    return list(v) if isinstance(v, list) and all(_is_int(x) for x in v) else v


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
        out.append(_f("iceberg.dv-length-mismatch", Severity.ERROR, path,
                      f"manifest content_size_in_bytes {size} but footer blob {blob.index} at offset "
                      f"{off} has length {blob.length}", off, size))
    if blob.type != DV_BLOB_TYPE:
        out.append(_f("iceberg.dv-blob-type", Severity.ERROR, path,
                      f"blob {blob.index} at offset {off} is {blob.type!r}, not {DV_BLOB_TYPE}", off,
                      blob.length if _is_int(blob.length) else None))
    props = dict(blob.properties or {})
    card_prop = props.get("cardinality")
    if card_prop is not None and str(card_prop) != str(e["record_count"]):
        out.append(_f("iceberg.dv-cardinality-property-mismatch", Severity.ERROR, path,
                      f"manifest record_count {e['record_count']} but blob {blob.index} property "
                      f"cardinality {card_prop}", off, size))
    ref_prop = props.get("referenced-data-file")
    if ref_prop and e.get("referenced_data_file") and normalize(ref_prop) != normalize(e["referenced_data_file"]):
        out.append(_f("iceberg.dv-reference-mismatch", Severity.ERROR, path,
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
            out.append(_f("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                          f"manifest {e['manifest_path']} says the DV for {ref} is at offset {off} length {size}; "
                          f"the Delta DV file has no DV there ({where})", off, size))
        elif d.length != size:
            out.append(_f("iceberg.dv-length-mismatch", Severity.ERROR, path,
                          f"manifest content_size_in_bytes {size} but DV {d.index} of the Delta DV file at offset "
                          f"{off} is {plural(d.length, 'byte', sep='')} (sizeInBytes {d.size_in_bytes} + 8)", off, size))
        return
    if off != 0 or size != pf.size:
        out.append(_f("iceberg.dv-offset-mismatch", Severity.ERROR, path,
                      f"manifest {e['manifest_path']} says the DV for {ref} is at offset {off} length {size}; the "
                      f"file is one bare DV blob [0, {pf.size})", off, size))


#: Unknown field ids of one statistics blob reported one by one; the rest are counted in one finding.
FIELD_FINDINGS_PER_BLOB = 20


def _check_statistics(source: "TableSource", out: list[Finding]) -> None:
    import json

    snapshot_ids = {s.snapshot_id for s in source.metadata.snapshots}
    field_ids = source.metadata.all_field_ids()
    # A damaged list may repeat one entry thousands of times: each distinct entry is checked once and each
    # file opened (and its own findings reported) once.
    entries_seen: set = set()
    opened: dict[str, Any] = {}
    for s in source.metadata.statistics:
        entry = (s.kind, s.snapshot_id, s.path, s.file_size_in_bytes, s.file_footer_size_in_bytes,
                 json.dumps(s.blob_metadata, sort_keys=True, default=repr))
        if entry in entries_seen:
            continue
        entries_seen.add(entry)
        if s.snapshot_id not in snapshot_ids:
            out.append(_f("iceberg.stats-snapshot-missing", Severity.ERROR, s.path,
                          f"{s.kind} statistics file is for snapshot {s.snapshot_id}, which the table does not have"))
        if s.kind != "table":
            try:
                size = source.io.size(source.locate(s.path))
            except OutsideScopeError:
                continue  # not read: its source.outside-scope finding is among the table's, and says so
            if size is None:
                out.append(_f("iceberg.file-missing", Severity.ERROR, s.path,
                              f"partition statistics file {source.locate(s.path)} does not exist"))
            elif s.file_size_in_bytes is not None and size != int(s.file_size_in_bytes):
                out.append(_f("iceberg.stats-file-size-mismatch", Severity.ERROR, s.path,
                              f"metadata file-size-in-bytes {s.file_size_in_bytes} but the file has {plural(size, 'byte', sep='')}"))
            continue
        for b in s.blob_metadata:
            unknown = [fid for fid in b.get("fields", []) if int(fid) not in field_ids]
            for fid in unknown[:FIELD_FINDINGS_PER_BLOB]:
                out.append(_f("iceberg.stats-field-unknown", Severity.ERROR, s.path,
                              f"{b.get('type')} blob is for field id {fid}, which no schema of the table has"))
            if len(unknown) > FIELD_FINDINGS_PER_BLOB:  # a count read from the file never sizes the findings
                out.append(_f("iceberg.stats-field-unknown", Severity.ERROR, s.path,
                              f"{b.get('type')} blob names {plural(len(unknown) - FIELD_FINDINGS_PER_BLOB, 'more field id')} "
                              "no schema of the table has"))
        first_open = s.path not in opened
        if first_open:
            opened[s.path] = _open_puffin(source, s.path, out)
        pf = opened[s.path]
        if pf is None:
            continue
        if s.file_size_in_bytes is not None and int(s.file_size_in_bytes) != pf.size:
            out.append(_f("iceberg.stats-file-size-mismatch", Severity.ERROR, s.path,
                          f"metadata file-size-in-bytes {s.file_size_in_bytes} but the file has {plural(pf.size, 'byte', sep='')}"))
        footer = puffin_footer_size(pf)
        if s.file_footer_size_in_bytes is not None and footer is not None and footer != int(s.file_footer_size_in_bytes):
            out.append(_f("iceberg.stats-footer-size-mismatch", Severity.ERROR, s.path,
                          f"metadata file-footer-size-in-bytes {s.file_footer_size_in_bytes} but the footer is "
                          f"{plural(footer, 'byte', sep='')}", pf.size - footer, footer))
        if len(pf.blobs) != len(s.blob_metadata):
            out.append(_f("iceberg.stats-blob-mismatch", Severity.ERROR, s.path,
                          f"metadata lists {plural(len(s.blob_metadata), 'blob', sep='')} but the footer has {len(pf.blobs)}"))
        for i, (meta, blob) in enumerate(zip(s.blob_metadata, pf.blobs)):
            expected = {"type": meta.get("type"), "fields": _int_list(meta.get("fields", [])),
                        "snapshot-id": meta.get("snapshot-id"), "sequence-number": meta.get("sequence-number"),
                        "properties": dict(meta.get("properties") or {})}
            actual = {"type": blob.type, "fields": _int_list(blob.fields),
                      "snapshot-id": blob.snapshot_id, "sequence-number": blob.sequence_number,
                      "properties": dict(blob.properties or {})}
            for key in expected:
                if expected[key] != actual[key]:
                    out.append(_f("iceberg.stats-blob-mismatch", Severity.ERROR, s.path,
                                  f"blob {i}: metadata {key} {_brief(expected[key])} but footer {key} "
                                  f"{_brief(actual[key])}",
                                  blob.offset if _is_int(blob.offset) else None,
                                  blob.length if _is_int(blob.length) else None))
        for f in pf.findings if first_open else ():
            if f.severity != Severity.INFO:
                out.append(_f(f.code, f.severity, s.path, f.message, f.offset, f.length, f.hint))


def _last_per_file(cols: _Columns, masks, names: list[str]) -> list:
    """The ``names`` columns of the rows each mask selects (a table per mask), only the last of the rows naming one
    file (equal normalized paths, so one location) in the order of the masks' rows one after the other: what a
    dict keyed by location keeps of them.  A million DVs in 300 Puffin files are 300 rows here, not a million."""
    import numpy as np

    from .columns import last_of_each, path_codes

    paths = path_codes(cols.ix)
    rows = [np.flatnonzero(m) for m in masks]
    seq = paths.files[np.concatenate(rows)] if rows else np.zeros(0, dtype=np.int32)
    place = np.arange(len(seq))
    last = (last_of_each(seq, paths.size)[seq] == place) & (seq >= 0)  # a row without a path: no file
    out, at = [], 0
    for r in rows:
        out.append(cols.ix.take(r[last[at:at + len(r)]], names))
        at += len(r)
    return out


def _check_files_exist(source: "TableSource", snapshot_id: int, cols: _Columns, out: list[Finding]) -> None:
    """Every file the snapshot names (manifest list, manifests, live data and delete files, its
    statistics files) against one listing per folder: missing, or of another size than written."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import located_array, normalized

    snap = source.snapshot(snapshot_id)
    head: list[tuple[str, Optional[int], str]] = []  # (path as written, size, what), in the order a dict keeps
    if snap.manifest_list:
        head.append((snap.manifest_list, None, "manifest list"))
    for m in source.manifest_records(snapshot_id):
        head.append((m["manifest_path"], m.get("manifest_length"), "manifest"))
    tail = [(s.path, s.file_size_in_bytes, f"{s.kind} statistics file") for s in source.metadata.statistics
            if s.snapshot_id == snapshot_id]
    files = _last_per_file(cols, (cols.data, cols.deletes), ["file_path", "file_size_in_bytes", "kind"])
    written = pa.concat_arrays([pa.array([h[0] for h in head], pa.string())]
                               + [c for f in files for c in f.column("file_path").chunks]
                               + [pa.array([t[0] for t in tail], pa.string())])
    size = pa.concat_arrays([pa.array([h[1] for h in head], pa.int64())]
                            + [c.cast(pa.int64()) for f in files for c in f.column("file_size_in_bytes").chunks]
                            + [pa.array([t[1] for t in tail], pa.int64())])
    what = pa.concat_arrays([pa.array([h[2] for h in head], pa.string())]
                            + [pc.binary_join_element_wise(pc.fill_null(c, "None"), " file", "")
                               for f in files for c in f.column("kind").chunks]
                            + [pa.array([t[2] for t in tail], pa.string())])
    del files
    loc = located_array(source, written)
    if loc.null_count:  # an entry without a path (its manifest's finding says so): nothing to look for
        named = pc.is_valid(loc)
        loc, written, size, what = loc.filter(named), written.filter(named), size.filter(named), what.filter(named)
    # one row per location, the last written (as a dict keyed by location keeps), in location order
    # (UTF-8 byte order is code point order, Python's string order)
    n = len(loc)
    last = n - 1 - pc.index_in(pc.unique(loc), value_set=loc.take(pa.array(np.arange(n - 1, -1, -1)))) \
        .to_numpy(zero_copy_only=False).astype(np.int64)
    keep = pa.array(last, pa.int64()).take(pc.sort_indices(loc.take(pa.array(last, pa.int64()))))
    loc, written, size, what = loc.take(keep), written.take(keep), size.take(keep), what.take(keep)
    # locations are normalized (no trailing slash) unless a mapped prefix ends with one: trimmed only then
    trimmed = pc.replace_substring_regex(loc, r"/+$", "") if pc.any(pc.ends_with(loc, "/")).as_py() else loc
    folders = pc.replace_substring_regex(trimmed, r"/[^/]*$", "")  # parent() depends on this part alone
    one_each = trimmed.take(pc.index_in(pc.unique(folders), value_set=folders))
    del trimmed, folders
    unlisted: dict[str, Exception] = {}
    names, sizes = source.io.listed_sizes((parent(x) for x in one_each.to_pylist()), failed=unlisted)
    for folder, exc in sorted(unlisted.items()):
        out.append(_f("iceberg.folder-unlisted", Severity.WARNING, folder,
                      f"{exc}; the files in it are not checked"))
    actual = sizes.take(pc.index_in(normalized(loc), value_set=names))
    del names, sizes
    missing = actual.is_null().to_numpy(zero_copy_only=False)
    claimed = pc.fill_null(size, -1).to_numpy()
    have = pc.fill_null(actual, -1).to_numpy()
    odd = missing | (size.is_valid().to_numpy(zero_copy_only=False) & ~missing & (claimed != have))
    said = {getattr(f, "file", None) for f in out if f.code in ("iceberg.file-missing", "table.file-vanished")}
    said |= {getattr(f, "file", None) for f in vanished.snapshot_findings(source, snapshot_id)}
    for i in np.flatnonzero(odd).tolist():
        w, where, kind = written[i].as_py(), loc[i].as_py(), what[i].as_py()
        if missing[i]:
            if w not in said and parent(where) not in unlisted:
                if vanished.newer_metadata(source) is not None and not vanished.looks_moved(source, w):
                    # the table's own file, gone while a newer metadata version exists: maintenance removed it
                    out.append(vanished.note(source, w, snapshot_id, kind, ""))
                else:
                    out.append(_f("iceberg.file-missing", Severity.ERROR, w, f"{kind} {where} does not exist"))
        elif kind == "manifest":
            out.append(_f("iceberg.file-size-mismatch", Severity.ERROR, w,
                          f"manifest list says manifest_length {claimed[i]} but {where} has {plural(have[i], 'byte', sep='')}"))
        elif kind.endswith("file") and "statistics" not in kind and kind != "dv file":
            out.append(_f("iceberg.file-size-mismatch", Severity.ERROR, w,
                          f"manifest says file_size_in_bytes {claimed[i]} but {where} has {plural(have[i], 'byte', sep='')}"))
