"""Other writers' habits as findings, never wrong numbers: DuckDB's v3 table, Delta UniForm DVs, bare DV blobs,
superseded position deletes, row lineage; DuckDB's iceberg_scan as a second engine on every Iceberg table here."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from puffin_explorer import DeletionVector, DeltaTable, PuffinFile, PuffinWriter, Table, Warehouse
from puffin_explorer.findings import is_known

import _duck_engine as duck
from uniform_table import write_iceberg_table, write_uniform_metadata

DUCK = "engines/duckdb"
DUCK_TABLE = "engines/duckdb/dv_single"
DUCK_META = DUCK_TABLE + "/metadata/v5.metadata.json"
LARGE = "engines/delta/delta-spark-table-with-dv-large"
#: README: sequence number → (rows after, DV file prefix, content_offset, content_size_in_bytes, record_count)
DUCK_STEPS = {1: (100000, None, None, None, None), 2: (90000, "7f5a95e5", 4, 8232, 10000),
              3: (77142, "6da36999", 4, 16432, 22858), 4: (77111, "2ce83c90", 4, 16432, 22889)}
#: The first release of DuckDB's iceberg extension that refuses a DV file that is not a Puffin file (the
#: message is not in 1.3.2 to 1.5.4, and 1.3.2 and 1.4.4 read such tables).
PUFFIN_CHECK = (1, 5, 5)
PUFFIN_CHECK_WHY = "1.5.5 is the first that refuses a DV file that is not a Puffin file"


def _duck_table(fixtures) -> Table:
    return Table.from_metadata(str(fixtures / DUCK_META),
                               relocate={"/data/engines/duckdb/warehouse/duck": str(fixtures / DUCK)})


def _codes(findings):
    return sorted({f.code for f in findings})


def _live(t: Table, snapshot_id=None) -> int:
    return int(t.deleted_rows_per_file(snapshot_id).live_rows.sum())


def test_duckdb_table_decodes_exactly(fixtures):
    t = _duck_table(fixtures)
    snaps = t.snapshots().set_index("sequence_number")
    for seq, (rows, prefix, off, size, count) in DUCK_STEPS.items():
        sid = int(snaps.loc[seq, "snapshot_id"])
        assert _live(t, sid) == rows
        dvs = t.dvs(sid)
        if prefix is None:
            assert dvs.empty
            continue
        assert len(dvs) == 1  # the superseded DVs are status-2 entries: skipped
        row = dvs.iloc[0]
        assert os.path.basename(row.file_path).startswith(prefix)
        assert (row.content_offset, row.content_size_in_bytes, row.record_count) == (off, size, count)
        dv = t.read_dv(row)
        assert dv.cardinality == count and dv.crc_ok
        assert dv.container_summary().get("run") is None  # DuckDB never writes run containers
    ids = np.arange(100000)
    expected = ids[((ids >= 10000) & (ids <= 19999)) | (ids % 7 == 3) | ((ids >= 66000) & (ids % 1000 == 0))
                   | (ids == 0) | (ids == 99999)]
    data_file = t.dvs().referenced_data_file[0]
    assert np.array_equal(t.deletions(data_file), expected)
    # the 10,000-row range of step 2 is an 8 KiB bitmap container
    first = t.read_dv(t.dvs(int(snaps.loc[2, "snapshot_id"])).iloc[0]).containers()
    assert first.type.tolist() == ["bitmap"] and first.bytes.tolist() == [8192]


def test_duckdb_quirks_are_findings_not_errors(fixtures):
    t = _duck_table(fixtures)
    findings = t.check()
    assert [f for f in findings if f.severity.value == "error"] == []
    assert _codes(findings) == ["iceberg.deleted-entries-carried", "iceberg.referenced-data-file-empty",
                                "iceberg.row-lineage-delete-manifest", "iceberg.summary-counts-deleted"]
    counted = [f for f in findings if f.code == "iceberg.summary-counts-deleted"]
    assert sorted(f.message.split(" says ")[1].split(":")[0] for f in counted) == [
        "total-delete-files 3", "total-position-deletes 55747"]
    assert len([f for f in findings if f.code == "iceberg.row-lineage-delete-manifest"]) == 3
    # "" is no reference: the data file row shows none
    files = t.files()
    assert files.loc[files.kind == "data", "referenced_data_file"].isna().all()
    for f in findings:
        assert is_known(f.code)


def test_duckdb_agrees_on_the_duckdb_table(fixtures, tmp_path):
    t = _duck_table(fixtures)
    meta = duck.relocated_copy(str(fixtures / DUCK_META), t.mapper.prefixes, str(tmp_path))
    con = duck.connect()
    snaps = t.snapshots().set_index("sequence_number")
    for seq, (rows, *_) in DUCK_STEPS.items():
        sid = int(snaps.loc[seq, "snapshot_id"])
        assert duck.live_rows(con, meta, sid) == rows == _live(t, sid)


def test_duckdb_agrees_on_the_fixture_warehouse(fixtures, tmp_path):
    wh = Warehouse(str(fixtures / "warehouse"))
    con = duck.connect()
    checked = 0
    for name in wh.table_names():
        t = wh.table(name)
        meta = duck.relocated_copy(t.metadata_location, t.mapper.prefixes, str(tmp_path / name))
        for sid in t.snapshots().snapshot_id:
            per = t.deleted_rows_per_file(sid)
            assert int(per.equality_delete_files.max() if len(per) else 0) == 0
            records, deleted = int(per.record_count.sum()), int(per.deleted_rows.sum())
            assert duck.live_rows(con, meta, int(sid)) == records - deleted, (name, sid)
            checked += 1
    assert checked == 11


def test_duckdb_agrees_on_the_demo_warehouse(demo_warehouse):
    """The warehouse ``make demo`` builds, built by Spark for this run (every snapshot of every table)."""
    wh = Warehouse(str(demo_warehouse))
    con = duck.connect()
    checked = 0
    for name in wh.table_names():
        t = wh.table(name)
        for sid in t.snapshots().snapshot_id:
            assert duck.live_rows(con, t.metadata_location, int(sid)) == _live(t, int(sid)), (name, sid)
            checked += 1
    assert checked > 0


# ---- Delta UniForm -----------------------------------------------------------------------------------------
def _copy(fixtures, name, dst):
    shutil.copytree(fixtures / name, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dst


def test_uniform_table_reads_checks_and_agrees_with_delta(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path / "uni")
    meta = write_uniform_metadata(str(root))
    t = Table.from_folder(str(root))
    d = DeltaTable(str(root))
    findings = t.check()
    assert _codes(findings) == ["iceberg.dv-in-delta-file"]
    assert sorted(f.message.split(": ")[0] for f in findings) == [
        "2 DV entries point into a Delta deletion-vector file (UniForm), not a Puffin file",
        "6 DV entries point into a Delta deletion-vector file (UniForm), not a Puffin file"]
    per = t.deleted_rows_per_file().set_index("location").deleted_rows
    delta_per = d.deleted_rows_per_file().set_index("location").deleted_rows
    assert per.sort_index().to_dict() == delta_per.sort_index().to_dict()
    assert int(per.sum()) == 11 and _live(t) == 1993
    for loc, dv in d.deletion_vectors().items():
        assert t.deletions(loc).tolist() == dv.positions().tolist()
    # opening the DV file as a Puffin file names what it is
    pf = t.puffin(t.dvs().file_path[0])
    assert pf.container == "delta-dv-file" and _codes(pf.findings) == ["file.delta-dv"]
    assert [r.kind for r in pf.regions().children][:2] == ["delta-version", "blob"]
    # DuckDB opens DV files as Puffin files and refuses the table: the finding's hint is right
    con = duck.connect()
    duck.skip_before(PUFFIN_CHECK, PUFFIN_CHECK_WHY)
    with pytest.raises(Exception, match="not a valid Puffin file"):
        duck.live_rows(con, meta)


def test_uniform_entry_off_its_dv_says_which_dv_holds_the_offset(fixtures, tmp_path):
    root = _copy(fixtures, LARGE, tmp_path / "uni")
    write_uniform_metadata(str(root), offset_shift={
        "part-00001-5dbf0ba2-220a-4770-8e26-18a77cf875f0-c000.snappy.parquet": 4})
    findings = Table.from_folder(str(root)).check()
    bad = [f for f in findings if f.code == "iceberg.dv-offset-mismatch"]
    assert len(bad) == 1 and bad[0].offset == 47
    assert "the Delta DV file has no DV there (offset 47 is inside DV 1 [43, 87))" in bad[0].message


# ---- bare DV blobs, superseded position deletes, row lineage ------------------------------------------------
def _data_file(path, n):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": np.arange(n, dtype=np.int64)}), path)
    return {"file_path": str(path), "record_count": n, "file_size_in_bytes": os.path.getsize(path)}


def test_bare_dv_blob_is_named_and_decoded(tmp_path):
    blob = DeletionVector.from_positions([2, 3, 70000]).to_bytes()
    path = tmp_path / "x-deletes.puffin"
    path.write_bytes(blob)
    pf = PuffinFile(str(path))
    assert pf.container == "bare-dv" and pf.blobs == []
    assert _codes(pf.findings) == ["file.bare-dv"]
    assert pf.findings[0].message.startswith("a bare deletion-vector blob, not a Puffin file: 3 deleted rows")
    assert pf.bare_dv.positions().tolist() == [2, 3, 70000]
    assert pf.regions().children[0].kind == "blob" and pf.regions().children[0].length == len(blob)
    # in a table: a warning, and the numbers still come from the blob
    data = _data_file(tmp_path / "a.parquet", 100000)
    write_iceberg_table(str(tmp_path), [{"id": 1, "name": "id", "required": False, "type": "long"}], [data],
                        [{"file_path": str(path), "file_format": "PUFFIN", "record_count": 3,
                          "file_size_in_bytes": len(blob), "referenced_data_file": data["file_path"],
                          "content_offset": 0, "content_size_in_bytes": len(blob)}])
    t = Table.from_folder(str(tmp_path))
    assert _codes(t.check()) == ["iceberg.dv-bare-blob"]
    assert _live(t) == 99997
    # DuckDB 1.5.5 no longer reads what 1.5.3 wrote: the warning is right
    con = duck.connect()
    duck.skip_before(PUFFIN_CHECK, PUFFIN_CHECK_WHY)
    with pytest.raises(Exception, match="not a valid Puffin file"):
        duck.live_rows(con, t.metadata_location)


def test_position_deletes_of_a_file_with_a_dv_are_superseded(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    a = _data_file(tmp_path / "a.parquet", 10)
    b = _data_file(tmp_path / "b.parquet", 10)
    pos = tmp_path / "pos-deletes.parquet"
    pq.write_table(pa.table({"file_path": [a["file_path"], a["file_path"], b["file_path"]],
                             "pos": pa.array([1, 2, 3], pa.int64())}), pos)
    w = PuffinWriter(properties={"created-by": "test"})
    w.add_dv([1, 2, 5], referenced_data_file=a["file_path"])  # the DV holds the old position deletes of a
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(w.to_bytes())
    blob = PuffinFile(str(puffin)).blobs[0]
    write_iceberg_table(str(tmp_path), [{"id": 1, "name": "id", "required": False, "type": "long"}], [a, b], [
        {"file_path": str(pos), "file_format": "PARQUET", "record_count": 3, "file_size_in_bytes": os.path.getsize(pos)},
        {"file_path": str(puffin), "file_format": "PUFFIN", "record_count": 3,
         "file_size_in_bytes": os.path.getsize(puffin), "referenced_data_file": a["file_path"],
         "content_offset": blob.offset, "content_size_in_bytes": blob.length}])
    t = Table.from_folder(str(tmp_path))
    per = t.deleted_rows_per_file().set_index("file_path")
    assert per.loc[a["file_path"], ["deleted_rows", "superseded_position_deletes", "dvs"]].tolist() == [3, 2, 1]
    assert per.loc[b["file_path"], ["deleted_rows", "superseded_position_deletes", "dvs"]].tolist() == [1, 0, 0]
    assert t.deletions(a["file_path"]).tolist() == [1, 2, 5]
    assert t.deletions(b["file_path"]).tolist() == [3]
    findings = t.check()
    assert _codes(findings) == ["iceberg.position-deletes-superseded"]
    assert findings[0].message.startswith("2 position deletes of 1 data file with a DV are ignored")
    assert _live(t) == 16
    con = duck.connect()
    duck.skip_before((1, 5, 5), "DuckDB's count of this table was checked against 1.5.5 (1.3.2 and 1.4.4 count 17 "
                                "live rows)")
    assert duck.live_rows(con, t.metadata_location) == 16


def test_next_row_id_below_assigned_row_ids(tmp_path):
    data = _data_file(tmp_path / "a.parquet", 50)
    write_iceberg_table(str(tmp_path), [{"id": 1, "name": "id", "required": False, "type": "long"}], [data], [],
                        next_row_id=20)
    findings = Table.from_folder(str(tmp_path)).check()
    assert _codes(findings) == ["iceberg.row-lineage-next-row-id"]
    assert "next-row-id is 20 but" in findings[0].message and "up to 49" in findings[0].message
