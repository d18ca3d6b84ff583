"""Checks over a snapshot's manifest entries as columns: the summary's totals, files named by more than one live
entry, writer habits a reader should know about, and v3 row lineage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .._text import plural
from ..regions import Finding, Severity
from .check_base import CheckColumns, file_finding
from .paths import basename

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


def _exact_sum(values) -> int:
    """The sum of an int64 numpy array as a Python int (exact past a long)."""
    if not len(values):
        return 0
    if max(int(values.max()), -int(values.min())) * len(values) < 2 ** 63:
        return int(values.sum())
    return sum(values.tolist())


def _totals(cols: CheckColumns, data, deletes) -> dict[str, int]:
    records = cols.records
    return {
        "total-data-files": int(data.sum()),
        "total-delete-files": int(deletes.sum()),
        "total-records": _exact_sum(records[data]),
        "total-position-deletes": _exact_sum(records[deletes & (cols.content == 1)]),
        "total-equality-deletes": _exact_sum(records[deletes & (cols.content == 2)]),
    }


def check_summary(snap: Any, cols: CheckColumns, out: list[Finding]) -> None:
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
            out.append(file_finding("iceberg.summary-counts-deleted", Severity.WARNING, snap.manifest_list or "",
                                    f"snapshot {snap.snapshot_id} summary says {key} {claimed}: that counts the "
                                    f"DELETED (status 2) entries its manifests carry; the live total is {value}"))
        elif claimed_n != value:
            out.append(file_finding("iceberg.summary-mismatch", Severity.WARNING, snap.manifest_list or "",
                                    f"snapshot {snap.snapshot_id} summary says {key} {claimed} but its manifests "
                                    f"hold {value}"))


def check_listed_twice(snap: Any, cols: CheckColumns, out: list[Finding]) -> None:
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
    out.append(file_finding("iceberg.file-listed-twice", Severity.ERROR, paths[0] or "",
                            f"{twice.num_rows:,} {'file is' if twice.num_rows == 1 else 'files are'} named by more "
                            f"than one live entry of snapshot {snap.snapshot_id} ({plural(extra, 'entry')} more than "
                            f"files): {', '.join(names[:3])}{' …' if len(names) > 3 else ''}; "
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


def check_quirks(source: "TableSource", snap: Any, cols: CheckColumns, out: list[Finding],
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
        out.append(file_finding("iceberg.referenced-data-file-empty", Severity.INFO,
                                cols.manifest_path(empty[0]) or "",
                                f"{plural(len(empty), 'manifest entry', sep='')} of snapshot {snap.snapshot_id} have "
                                "referenced_data_file \"\" instead of null; read as no reference"))
    by_path = {m["manifest_path"]: m for m in source.manifest_records(snap.snapshot_id)}
    earlier = np.array([by_path.get(m.get("manifest_path"), {}).get("added_snapshot_id") not in
                        (None, snap.snapshot_id) for m in ix.manifests] or [False], dtype=bool)
    carried = np.flatnonzero((cols.status == 2) & earlier[cols.manifest]) if len(ix) else np.empty(0, np.int64)
    if len(carried):
        kinds = sorted(set(pc.unique(ix.take(carried, ["kind"]).column("kind")).to_pylist()))
        out.append(file_finding("iceberg.deleted-entries-carried", Severity.INFO,
                                cols.manifest_path(carried[0]) or "",
                                f"{len(carried)} DELETED (status 2) entries of earlier snapshots are still in the "
                                f"manifests of snapshot {snap.snapshot_id} ({', '.join(kinds)}); skipped"))
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
        out.append(file_finding("iceberg.position-deletes-superseded", Severity.INFO, "",
                                f"{sum(covered.values()):,} position deletes of "
                                f"{plural(len(covered), 'data file', sep='')} with a DV "
                                f"are ignored in every count (the DV holds them): "
                                f"{', '.join(basename(k) for k in sorted(covered)[:3])}"
                                f"{' …' if len(covered) > 3 else ''}"))


def check_row_lineage(source: "TableSource", snap: Any, out: list[Finding]) -> None:
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
            out.append(file_finding("iceberg.row-lineage-delete-manifest", Severity.WARNING, m["manifest_path"],
                                    f"delete manifest {basename(m['manifest_path'])} has first_row_id {frid} in the "
                                    f"manifest list of snapshot {snap.snapshot_id}; only data manifests assign row "
                                    "ids"))
            continue
        rows = int(m.get("added_rows_count") or 0) + int(m.get("existing_rows_count") or 0)
        assigned.append((int(frid) + rows, f"manifest {basename(m['manifest_path'])}"))
    if next_row_id is None or not assigned:
        return
    top, who = max(assigned)
    if top > int(next_row_id):
        out.append(file_finding("iceberg.row-lineage-next-row-id", Severity.WARNING, source.metadata_location,
                                f"next-row-id is {next_row_id} but {who} assigns row ids up to {top - 1}"))
