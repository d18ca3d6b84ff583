"""The executor-side functions of the Spark layer, fed Arrow batches directly (no JVM).

Rows mimic Iceberg's ``delete_files`` table; the Puffin files are the reference
warehouse's own (paths mapped from /data/warehouse to the fixtures folder).
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pytest

from _spark import FIXTURE_ROOT, FIXTURE_WAREHOUSE, relocated_csv
from puffin_explorer.spark import executors


def _rows(name: str) -> list[dict]:
    return relocated_csv(name, FIXTURE_WAREHOUSE)


def _batches(rows: list[dict]):
    yield pa.RecordBatch.from_pylist(rows)


@pytest.fixture(autouse=True)
def _needs_fixtures():
    if not FIXTURE_WAREHOUSE.is_dir():
        pytest.skip("reference fixtures not found")


def test_positions_match_record_counts_and_read_each_file_once():
    rows = _rows("orders_delete_files.csv")
    out = pa.Table.from_batches(list(executors.decode_positions()(_batches(rows))))
    counts = {}
    for name, n in zip(*np.unique(out.column("data_file").to_numpy(zero_copy_only=False), return_counts=True)):
        counts[name] = n
    assert counts == {r["referenced_data_file"]: r["record_count"] for r in rows}
    assert out.schema.names == ["data_file", "pos"] and out.column("pos").type == pa.int64()


def test_coalesced_and_separate_reads_agree(monkeypatch):
    rows = _rows("orders_delete_files.csv") + _rows("events_delete_files.csv")
    together = pa.Table.from_batches(list(executors.decode_positions()(_batches(rows))))
    monkeypatch.setattr(executors, "COALESCE_MIN_DENSITY", 2.0)  # never coalesce: one read_dv per DV
    apart = pa.Table.from_batches(list(executors.decode_positions()(_batches(rows))))
    assert together.equals(apart) and together.num_rows == sum(r["record_count"] for r in rows)


def test_facts_report_cardinality_runs_and_a_bad_range():
    rows = _rows("events_delete_files.csv")
    bad = dict(rows[0], content_offset=rows[0]["content_offset"] + 10 ** 9)
    facts = pa.Table.from_batches(list(executors.decode_dv_facts()(_batches(rows + [bad])))).to_pylist()
    good = [f for f in facts if f["content_offset"] == 4]
    assert [(f["cardinality"], f["record_count"], f["crc_ok"], f["findings"]) for f in good] == [
        (55878, 55878, True, [])]
    assert good[0]["min_pos"] >= 0 and good[0]["max_pos"] < 300_000 and good[0]["runs"] >= 1
    broken = [f for f in facts if f["content_offset"] != 4]
    assert broken[0]["cardinality"] is None and "ends before the DV" in broken[0]["findings"][0]


def test_positions_fail_with_the_file_and_range_of_a_bad_dv():
    from puffin_explorer.errors import PuffinError

    row = _rows("events_delete_files.csv")[0]
    row["content_size_in_bytes"] += 10 ** 9
    with pytest.raises(PuffinError, match=r"cannot read the DV of .*00000-26-.*\[4, \+1000016161\]"):
        list(executors.decode_positions()(_batches([row])))


def test_inventory_of_a_stats_file_and_a_delete_file():
    stats = glob.glob(str(FIXTURE_WAREHOUSE / "shop" / "events" / "metadata" / "*.stats"))[0]
    dvs = _rows("events_delete_files.csv")[0]["file_path"]
    rows = [{"puffin_file": stats, "file_kind": "statistics", "file_size": os.path.getsize(stats)},
            {"puffin_file": dvs, "file_kind": "deletes", "file_size": None},
            {"puffin_file": str(FIXTURE_WAREHOUSE / "nope.puffin"), "file_kind": "deletes", "file_size": None}]
    out = pa.Table.from_batches(list(executors.inventory()(_batches(rows)))).to_pylist()
    theta = [r for r in out if r["file_kind"] == "statistics"]
    assert [r["blob_type"] for r in theta] == ["apache-datasketches-theta-v1"] * 2
    assert sorted(int(dict(r["properties"])["ndv"]) for r in theta) == [3, 247053]  # map -> (key, value) pairs
    dv = [r for r in out if r["puffin_file"] == dvs]
    assert [(r["blob_type"], r["cardinality"], r["offset"], r["length"]) for r in dv] == [
        ("deletion-vector-v1", 55878, 4, 16161)]
    missing = [r for r in out if r["puffin_file"].endswith("nope.puffin")]
    assert missing[0]["summary"] == "unreadable" and "no such file" in missing[0]["file_findings"][0]
    assert FIXTURE_ROOT not in dvs


def test_the_doctors_position_delete_reader_reports_each_unreadable_file_as_a_row(tmp_path):
    """The executors' side of deleted rows (spark/health.position_delete_counts): rows named per data file
    (normalized), and a file that is not Parquet or is gone as one row saying why, as the driver's reader says it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from puffin_explorer.iceberg.paths import PathMapper
    from puffin_explorer.spark.health_rows import position_delete_counts

    good, bad, gone = tmp_path / "good.parquet", tmp_path / "bad.parquet", tmp_path / "gone.parquet"
    pq.write_table(pa.table({"file_path": ["file:/t/a.parquet"] * 3 + ["/t/b.parquet"], "pos": [1, 2, 3, 4]}), good)
    bad.write_bytes(b"not parquet")
    out = [r for b in position_delete_counts(PathMapper(), None)(iter([pa.RecordBatch.from_pydict(
        {"file_path": [str(good), str(bad), None, str(gone)]})])) for r in b.to_pylist()]
    assert [(r["key"], r["rows"], r["error"] is None, r["missing"]) for r in out] == [
        ("/t/a.parquet", 3, True, None), ("/t/b.parquet", 1, True, None), (None, None, False, False),
        (None, None, False, True)]
    assert out[2]["error"].startswith(f"{bad}: not a readable Parquet position-delete file (11 bytes): ")


def _small_dv_files(tmp_path) -> list[dict]:
    """Two Puffin files of five small DVs each (the common shape: one bucket, one array container); the
    third DV of the second file has a wrong CRC.  Rows as the planner sends them, sorted by file and offset."""
    from puffin_explorer.format.dv_serialize import serialize_positions
    from puffin_explorer.format.puffin import PuffinFile
    from puffin_explorer.format.writer import PuffinWriter

    rows = []
    for f in range(2):
        w = PuffinWriter(properties={"created-by": "test"})
        for i in range(5):
            data = serialize_positions([i, i + 3, 100 + f])
            if (f, i) == (1, 2):
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            w.add_raw_blob(data, "deletion-vector-v1", [2147483546],
                           properties={"referenced-data-file": f"data-{f}-{i}.parquet", "cardinality": "3"})
        path = tmp_path / f"dvs-{f}.puffin"
        path.write_bytes(w.to_bytes())
        for i, blob in enumerate(PuffinFile(str(path)).blobs):
            rows.append({"file_path": str(path), "location": None, "referenced_data_file": f"data-{f}-{i}.parquet",
                         "content_offset": blob.offset, "content_size_in_bytes": blob.length, "record_count": 3})
    return rows


def test_dv_rows_stream_a_file_at_a_time_each_file_opened_once_and_checked_together(tmp_path, monkeypatch):
    from puffin_explorer import io as io_layer
    from puffin_explorer.format.dv import DeletionVector

    rows = _small_dv_files(tmp_path)
    opened = []
    real = io_layer.ByteSource

    def counting(location, *args, **kwargs):
        opened.append(location)
        return real(location, *args, **kwargs)

    monkeypatch.setattr(io_layer, "ByteSource", counting)
    consumed = []

    def feed():
        for row in rows:
            consumed.append(row)
            yield row

    got = executors._read_dvs(feed(), None)
    first = next(got)
    assert len(consumed) == 6  # the first file's five rows, and the row of the next file that ends the group
    out = [first] + list(got)
    assert [r["referenced_data_file"] for r, _ in out] == [r["referenced_data_file"] for r in rows]
    assert [os.path.basename(p) for p in opened] == ["dvs-0.puffin", "dvs-1.puffin"]
    for row, dv in out:
        fresh = DeletionVector(dv._data, row["content_offset"])  # parsed on its own, the slow way
        assert dv.positions().tolist() == fresh.positions().tolist()
        assert [str(f) for f in dv.findings] == [str(f) for f in fresh.findings]
        damaged = row["referenced_data_file"] == "data-1-2.parquet"
        assert dv._fast_valid is not damaged  # the good ones were checked in the numpy pass, not parsed
        assert [f.code for f in dv.findings] == (["dv.crc"] if damaged else [])
    assert out[7][1].findings[0].offset == rows[7]["content_offset"] + rows[7]["content_size_in_bytes"] - 4

    monkeypatch.setattr(executors, "GROUP_MAX_ROWS", 2)  # a group never holds more than this many rows
    opened.clear()
    list(executors._read_dvs(iter(rows), None))
    assert len(opened) == 6  # groups of 2, 2, 1 in each file


def test_unsorted_dv_rows_give_the_same_positions_with_more_opens(tmp_path):
    rows = [r for r in _small_dv_files(tmp_path) if r["referenced_data_file"] != "data-1-2.parquet"]
    decode = executors.decode_positions()
    ordered = pa.Table.from_batches(list(decode(_batches(rows)))).sort_by([("data_file", "ascending"),
                                                                           ("pos", "ascending")])
    shuffled = rows[::2] + rows[1::2]
    again = pa.Table.from_batches(list(decode(_batches(shuffled)))).sort_by([("data_file", "ascending"),
                                                                             ("pos", "ascending")])
    assert again.equals(ordered)
    assert ordered.num_rows == 27 and ordered.column("pos").to_pylist()[:3] == [0, 3, 100]


def test_health_rows_spell_paths_as_the_drivers_normalize():
    """The Spark doctor's health rows normalize paths in Arrow (``columns.normalized``, as the driver's relations
    do); every spelling comes out as the driver's ``normalize`` spells it."""
    from puffin_explorer.iceberg.columns import normalized as _normalized
    from puffin_explorer.iceberg.paths import normalize

    paths = ["file:///w/a.parquet", "file:/w/a.parquet", "/w/a.parquet", "s3a://b/k", "s3n://b/k", "s3://b/k/",
             "gs://b/dir//", "/", "///", "", None, "file://", "s3a://", "file:s3a://x"]
    assert _normalized(pa.array(paths, pa.string())).to_pylist() == [None if p is None else normalize(p)
                                                                     for p in paths]
    assert _normalized(pa.array(paths[:5], pa.string())).to_pylist() == [
        "/w/a.parquet", "/w/a.parquet", "/w/a.parquet", "s3://b/k", "s3://b/k"]


def test_health_rows_hold_a_file_key_only_where_it_is_not_the_path_as_written():
    """A data file's health row leaves ``key`` null where it is ``file_path`` (each row would carry its path twice);
    ``files_by_key`` reads it back as the key; a path the driver would normalize keeps its key, and a DV's key is the
    data file it references."""
    import pyarrow.compute as pc

    from puffin_explorer.iceberg import Table
    from puffin_explorer.iceberg.paths import normalize
    from puffin_explorer.spark.executors import _arrow_schema
    from puffin_explorer.spark.health_rows import HEALTH_ROWS_SCHEMA, _health_batch

    t = Table.from_folder(str(FIXTURE_WAREHOUSE / "shop/orders"), relocate={FIXTURE_ROOT: str(FIXTURE_WAREHOUSE)})
    entries = t.index(metrics=True).table
    live = entries.filter(pc.not_equal(entries.column("status"), 2))
    schema = _arrow_schema(HEALTH_ROWS_SCHEMA)

    def rows_of(table):
        b = table.combine_chunks().to_batches()[0]
        return pa.Table.from_batches(list(_health_batch(b, list(range(b.num_rows)), schema, lambda raw: {}, set(),
                                                        None)), schema=schema).to_pylist()

    rows = rows_of(live)
    data = [r for r in rows if r["kind"] == "data"]
    dvs = [r for r in rows if r["kind"] == "dv"]
    assert len(data) == 8 and len(dvs) == 4  # t.file_counts() of shop.orders
    # a DV's row holds what the measures read of a DV, and nothing the measures derive is held
    assert {c for c in schema.names if any(r[c] is not None for r in dvs)} == {
        "rid", "kind", "file_path", "key", "record_count", "file_size_in_bytes"}
    assert {r["pkey"] for r in data} == {"0|0", "0|1", "0|2", "0|3"}  # spec 0, the index's four partition codes
    assert "seq" not in schema.names and "partition_empty" not in schema.names
    # a column without a value carries no values into the JVM (if_else keeps its inputs' values behind its nulls:
    # scope_ref, null for every row here, had every DV's referenced path behind it); a null column's value buffer
    # is at most the zeros pa.nulls shares with its offsets
    b = live.combine_chunks().to_batches()[0]
    for batch in _health_batch(b, list(range(b.num_rows)), schema, lambda raw: {}, set(), None):
        for name, column in zip(batch.schema.names, batch.columns):
            if column.null_count == len(column) and column.type in (pa.string(), pa.binary()):
                assert column.buffers()[2] is None or column.buffers()[2].size <= 4 * (len(column) + 1), name
    assert all(r["key"] is None and r["file_path"].startswith(FIXTURE_ROOT) for r in data)
    assert sorted(r["key"] for r in dvs) == sorted(normalize(r) for r in live.filter(
        pc.equal(live.column("kind"), "dv")).column("referenced_data_file").to_pylist())
    # the same entries written with a scheme the driver drops: each data row keeps the path it joins on
    spelled = live.set_column(live.schema.get_field_index("file_path"), "file_path",
                              pc.binary_join_element_wise("file:", live.column("file_path"), ""))
    again = [r for r in rows_of(spelled) if r["kind"] == "data"]
    assert [r["key"] for r in again] == [r["file_path"] for r in data]
    assert [r["file_path"] for r in again] == ["file:" + r["file_path"] for r in data]
