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
    """The executors' side of deleted rows (spark/health._position_delete_counts): rows named per data file
    (normalized), and a file that is not Parquet or is gone as one row saying why, as the driver's reader says it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from puffin_explorer.iceberg.paths import PathMapper
    from puffin_explorer.spark.health import _position_delete_counts

    good, bad, gone = tmp_path / "good.parquet", tmp_path / "bad.parquet", tmp_path / "gone.parquet"
    pq.write_table(pa.table({"file_path": ["file:/t/a.parquet"] * 3 + ["/t/b.parquet"], "pos": [1, 2, 3, 4]}), good)
    bad.write_bytes(b"not parquet")
    out = [r for b in _position_delete_counts(PathMapper(), None)(iter([pa.record_batch(
        {"file_path": [str(good), str(bad), None, str(gone)]})])) for r in b.to_pylist()]
    assert [(r["key"], r["rows"], r["error"] is None, r["missing"]) for r in out] == [
        ("/t/a.parquet", 3, True, None), ("/t/b.parquet", 1, True, None), (None, None, False, False),
        (None, None, False, True)]
    assert out[2]["error"].startswith(f"{bad}: not a readable Parquet position-delete file (11 bytes): ")
