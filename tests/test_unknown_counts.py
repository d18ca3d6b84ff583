"""An unknown count is not zero: a count that depends on files that could not be read is None in Python, null in
the JSON contract and "unknown (see findings)" in cards and text; a partial count is shown only labelled, with what
it covers.  On copies of the fixture tables, the files deleted as a maintenance job deletes them after the table
was opened (Iceberg: manifests and Puffin files of the current snapshot; Delta: a commit the version needs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from puffin_explorer import Warehouse
from puffin_explorer.coverage import UNKNOWN
from puffin_explorer.delta import DeltaTable
from puffin_explorer.iceberg.table import Table

from _warehouse_fixtures import ORDERS_SNAPSHOT, copy_fixture_table, copy_warehouse
from conftest import ROOT

NOW = "2030-01-01"
#: shop.orders at v7 (its README): 8 data files, 121,964 rows, 4 DVs in one Puffin file deleting 27,924 of them.
ORDERS_RECORDS, ORDERS_DELETED = 121_964, 27_924
META = "orders/metadata"
#: The current snapshot's manifests, in its manifest list's order: data (4 files, 1,964 rows, no DVs), data (the
#: 4 files of 120,000 rows the DVs delete from), deletes (the 4 live DVs), deletes (no live entry).
NEW_DATA, OLD_DATA = "da354e0d-4a95-484a-b518-c198966d2374-m1.avro", "2e503939-dedb-4b87-a3ed-4de41fab2d1e-m0.avro"
DVS, OLD_DELETES = "da354e0d-4a95-484a-b518-c198966d2374-m2.avro", "da354e0d-4a95-484a-b518-c198966d2374-m0.avro"
PUFFIN = "orders/data/00000-21-5bda5967-7808-4966-bb27-4f1a594d8228-00001-deletes.puffin"
COUNT_UNKNOWN = "health.count-unknown"
#: Every metric of the doctor that sums the current snapshot's files.
FILE_METRICS = ("data_files", "data_bytes", "records", "small_files", "small_bytes", "partitions", "clustering_depth",
                "poorly_clustered_partitions", "columns_without_bounds", "delete_files", "delete_bytes", "dvs",
                "position_delete_files", "equality_delete_files", "max_delete_files_per_data_file",
                "data_files_with_deletes", "dangling_deletes", "deleted_rows", "live_rows", "deleted_share")


@pytest.fixture
def shop(tmp_path) -> Path:
    return copy_warehouse(tmp_path) / "shop"


def _words(text: str) -> str:
    """``text`` with every run of spaces and line breaks one space (a text table's columns, whatever their width)."""
    return " ".join(text.split())


def _opened_then_gone(shop: Path, *names: str) -> Table:
    """shop.orders opened, then ``names`` (under the table folder) deleted, as a maintenance job deletes them."""
    t = Table.from_folder(str(shop / "orders"))
    for name in names:
        (shop / name).unlink()
    return t


def test_iceberg_manifests_and_puffin_file_gone_after_opening(shop):
    t = _opened_then_gone(shop, *(f"{META}/{m}" for m in (NEW_DATA, OLD_DATA, DVS, OLD_DELETES)), PUFFIN)
    h = t.health(now=NOW, list_files=False)
    assert {k: h.metrics[k] for k in FILE_METRICS} == dict.fromkeys(FILE_METRICS)  # never a 0 for them
    assert h.codes().count("table.file-vanished") == 4 and "health.snapshot-unreadable" in h.codes()
    f = h.finding(COUNT_UNKNOWN)
    assert f.severity.value == "warning" and h.status == "error"
    assert f.evidence == {"unknown": list(FILE_METRICS), "at_least": {}, "covers": "0 of 4 manifests read",
                          "because": ["table.file-vanished"], "snapshot_id": ORDERS_SNAPSHOT}
    assert f.message == ("records, live rows, deleted rows, data files, delete files, DVs and 14 more metrics of "
                         f"snapshot {ORDERS_SNAPSHOT} are unknown, not zero: files they depend on could not be read "
                         "(table.file-vanished)")
    assert h.finding("health.deleted-share") is None and h.finding("health.small-files") is None
    doc = json.loads(json.dumps(h.to_dict()))
    assert (doc["metrics"]["deleted_rows"], doc["metrics"]["live_rows"], doc["metrics"]["records"]) == (None,) * 3
    checks = h.checks().set_index("check")
    assert checks.loc["deleted rows", "metric"] == UNKNOWN and checks.loc["deleted rows", "status"] == "warning"
    assert checks.loc["small files", "codes"] == [COUNT_UNKNOWN]

    debt = t.delete_debt()
    assert (debt.records, debt.deleted_rows, debt.deleted_share, debt.data_files, debt.candidate_count) == (None,) * 5
    assert debt.partial and [x.code for x in debt.findings] == ["table.file-vanished"] * 4
    assert debt.to_text().startswith(f"PARTIAL delete debt of orders: deleted rows {UNKNOWN}; records {UNKNOWN}; "
                                     f"compaction candidates {UNKNOWN} (above 10%)")
    assert f"<b>{UNKNOWN}</b>" in debt.to_html()
    per_file = t.deleted_rows_per_file()
    assert len(per_file) == 0 and per_file.attrs["partial"] and per_file.attrs["covers"] == "0 of 4 manifests read"
    current = t.timeline().set_index("snapshot_id").loc[ORDERS_SNAPSHOT]
    assert current[["records", "deleted_rows", "live_rows"]].isna().all()
    row = t.summary()  # the warehouse card's row: records and files are the manifest list's, deletes unknown
    assert (row["records"], row["data_files"], row["deleted_rows"], row["live_rows"], row["deleted_share"]) == (
        ORDERS_RECORDS, 8, None, None, None)
    assert row["unknown"] == ["deleted_rows", "live_rows", "deleted_share"]

    text = t._repr_mimebundle_()["text/plain"]
    assert f"121,964 records, live {UNKNOWN}, deleted {UNKNOWN}; 8 data files, 4 DVs" in text
    assert f"deleted rows                warning  {UNKNOWN}" in text
    html = t._repr_mimebundle_()["text/html"]
    assert f"<b>{UNKNOWN}</b>" in html and f"<td>{UNKNOWN}</td>" in html.replace(' class="pe-num"', "")


def test_a_puffin_file_gone_leaves_the_counts_whole(shop):
    """The DVs' rows are the manifests' record counts: no count depends on the Puffin file, so none is unknown."""
    t = _opened_then_gone(shop, PUFFIN)
    h = t.health(now=NOW, list_files=False)
    assert (h.metrics["deleted_rows"], h.metrics["live_rows"]) == (ORDERS_DELETED, ORDERS_RECORDS - ORDERS_DELETED)
    assert h.finding(COUNT_UNKNOWN) is None


def test_a_partial_count_is_labelled_with_what_it_covers(shop):
    t = _opened_then_gone(shop, f"{META}/{NEW_DATA}")  # 4 files, 1,964 rows, none with a DV
    h = t.health(now=NOW, list_files=False)
    assert (h.metrics["records"], h.metrics["deleted_rows"], h.metrics["live_rows"], h.metrics["dvs"]) == (
        None, None, None, 4)  # the delete manifests were read: their counts are whole
    f = h.finding(COUNT_UNKNOWN)
    assert (f.evidence["at_least"], f.evidence["covers"]) == (
        {"data_files": 4, "records": 120_000, "deleted_rows": ORDERS_DELETED}, "3 of 4 manifests read")
    assert f.message.endswith("; partial counts: data files ≥ 4: 3 of 4 manifests read; records ≥ 120,000: 3 of 4 "
                              "manifests read; deleted rows ≥ 27,924: 3 of 4 manifests read")
    assert h.checks().set_index("check").loc["deleted rows", "metric"] == \
        f"{UNKNOWN}; ≥ 27,924: 3 of 4 manifests read"
    assert f"; live rows {UNKNOWN}; deleted rows {UNKNOWN}; ≥ 27,924: 3 of 4 manifests read; " in h.to_text()
    assert f"{UNKNOWN}; ≥ 27,924: 3 of 4 manifests read" in h.to_html()

    debt = t.delete_debt()
    assert (debt.deleted_rows, debt.counted_deleted_rows) == (None, ORDERS_DELETED)
    assert debt.coverage.at_least(debt.counted_deleted_rows) == "≥ 27,924: 3 of 4 manifests read"
    assert debt.to_text().startswith(f"PARTIAL delete debt of orders: deleted rows {UNKNOWN}; ≥ 27,924: 3 of 4 "
                                     f"manifests read; records {UNKNOWN}; ≥ 120,000: 3 of 4 manifests read")
    assert "≥ 27,924: 3 of 4 manifests read" in debt.to_html()
    per_file = t.deleted_rows_per_file()  # every delete was read: the files listed have their whole counts
    assert (len(per_file), int(per_file.deleted_rows.sum()), per_file.attrs["partial"]) == (4, ORDERS_DELETED, True)
    assert per_file.attrs["unknown"] == [] and per_file.attrs["covers"] == "3 of 4 manifests read"


def test_a_delete_manifest_gone_leaves_each_files_deletes_unknown(shop):
    t = _opened_then_gone(shop, f"{META}/{DVS}")
    per_file = t.deleted_rows_per_file()
    assert len(per_file) == 8 and per_file.record_count.sum() == ORDERS_RECORDS
    assert per_file.attrs["unknown"] == ["deleted_rows", "live_rows", "deleted_share", "dvs", "position_delete_files",
                                         "superseded_position_deletes", "equality_delete_files"]
    assert per_file[per_file.attrs["unknown"]].isna().all().all()
    part = t.delete_debt().per_partition()
    assert part.deleted_rows.isna().all() and part.record_count.sum() == ORDERS_RECORDS
    assert len(t.delete_debt().candidates()) == 0 and t.delete_debt().candidate_count is None


def test_the_warehouse_card_says_unknown_rather_than_a_smaller_sum(shop):
    wh = Warehouse(str(shop.parent))
    wh.table("shop.orders")
    (shop / META / DVS).unlink()
    row = wh.summary().set_index("table").loc["shop.orders"]
    assert row[["deleted_rows", "live_rows", "deleted_share"]].isna().all() and row["health"] == "error"
    assert (row["records"], row["unknown"]) == (ORDERS_RECORDS, ["deleted_rows", "live_rows", "deleted_share"])
    text = wh._repr_mimebundle_()["text/plain"]
    assert text.splitlines()[0].endswith(f"3 tables, live rows {UNKNOWN}")
    assert f"shop.orders 3 5 {UNKNOWN} {UNKNOWN} {UNKNOWN} 8 4 / 0 / 0 1" in _words(text)
    assert UNKNOWN in wh._repr_mimebundle_()["text/html"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "puffin_explorer", *args], capture_output=True, text=True, env=env,
                          cwd=str(ROOT), timeout=300)


def test_json_contract_writes_null_and_fail_on_warning_catches_an_unknown_count(shop):
    """A damaged data manifest (not gone: no error finding of the doctor's own) leaves the counts unknown: the JSON
    says null, the status is a warning, and ``--fail-on warning`` fails the job."""
    manifest = shop / META / NEW_DATA
    manifest.write_bytes(manifest.read_bytes()[:600])
    table = str(shop / "orders")
    p = _cli("doctor", table, "--now", NOW, "--no-listing", "--format", "json")
    assert p.returncode == 0, p.stderr  # the default --fail-on error: no error finding
    assert '"deleted_rows": null' in p.stdout and '"live_rows": null' in p.stdout
    [doc] = json.loads(p.stdout)
    assert doc["status"] == "warning"
    assert (doc["metrics"]["records"], doc["metrics"]["deleted_rows"], doc["metrics"]["data_files"]) == (None,) * 3
    [f] = [f for f in doc["findings"] if f["code"] == COUNT_UNKNOWN]
    assert (f["severity"], f["evidence"]["covers"], f["evidence"]["because"]) == (
        "warning", "3 of 4 manifests read", ["iceberg.manifest-damaged"])
    assert f["evidence"]["at_least"]["deleted_rows"] == ORDERS_DELETED
    warn = _cli("doctor", table, "--now", NOW, "--no-listing", "--fail-on", "warning")
    assert warn.returncode == 1 and f"warning {COUNT_UNKNOWN}: " in warn.stdout


# ---- Delta -------------------------------------------------------------------------------------------------
LARGE = "engines/delta/delta-spark-table-with-dv-large"
DELTA_COUNTS = ("data_files", "records", "deleted_rows", "live_rows", "dvs")


def test_delta_version_missing_a_commit_it_needs(fixtures, tmp_path):
    """The log cleaned up past commit 1 (no checkpoint covers it): version 4 cannot be rebuilt, so its counts
    are unknown; the files rebuilt without commit 1 may hold files it removed, so there is no partial count."""
    root = copy_fixture_table(fixtures, LARGE, tmp_path)
    (root / "_delta_log" / f"{1:020d}.json").unlink()
    t = DeltaTable(str(root))
    assert [f.code for f in t.findings] == ["delta.log-gap"]
    assert t.totals() == dict.fromkeys(DELTA_COUNTS)
    assert t.deleted_rows_per_file().attrs["partial"] is True
    h = t.health(now=NOW, list_files=False)
    assert {k: h.metrics[k] for k in (*DELTA_COUNTS, "deleted_share", "delete_files")} == dict.fromkeys(
        (*DELTA_COUNTS, "deleted_share", "delete_files"))
    f = h.finding(COUNT_UNKNOWN)
    assert (f.severity.value, f.evidence["at_least"], f.evidence["because"], f.evidence["missing_commits"]) == (
        "warning", {}, ["delta.log-gap"], [1])
    assert json.loads(json.dumps(h.to_dict()))["metrics"]["live_rows"] is None
    versions = t.versions().set_index("version")
    assert versions.loc[0, "live_rows"] == 2000 and versions.loc[[2, 3, 4], list(DELTA_COUNTS)].isna().all().all()
    bundle = t._repr_mimebundle_()
    assert bundle["text/plain"].splitlines()[1] == (f"  Delta table t at version 4: data files, rows and DVs {UNKNOWN}: "
                                                    "a commit the version needs is missing")
    assert f"2 WRITE 1 0 0 0 {UNKNOWN} {UNKNOWN} {UNKNOWN} {UNKNOWN}" in _words(bundle["text/plain"])
    html = bundle["text/html"]
    assert f"<span><i>live rows</i> {UNKNOWN}</span>" in html
    assert (f'<td>deleted rows</td><td class="pe-nowrap"><span class="pe-badge pe-warning">warning</span></td>'
            f'<td class="pe-wrap">{UNKNOWN}</td>') in html
    summary = _cli("table", str(root)).stdout
    assert f"live rows {UNKNOWN}" in _words(summary) and "None" not in summary


def test_delta_timeline_with_a_commit_deleted_after_opening(fixtures, tmp_path):
    """Opened from its checkpoint, then commit 2 deleted (log cleanup) and a DV file vacuumed: the version's counts
    are whole (the checkpoint was read, and a DV's cardinality is the log's), the timeline from commit 2 on is not."""
    from deltalake import DeltaTable as RsTable

    root = copy_fixture_table(fixtures, LARGE, tmp_path)
    RsTable(str(root)).create_checkpoint()
    t = DeltaTable(str(root))
    (root / "_delta_log" / f"{2:020d}.json").unlink()
    for dv_file in t.dv_files()["dv_file"]:
        Path(dv_file).unlink()
    assert t.totals() == {"data_files": 22, "records": 2004, "deleted_rows": 11, "live_rows": 1993, "dvs": 8}
    h = t.health(now=NOW, list_files=False)
    assert (h.metrics["deleted_rows"], h.finding(COUNT_UNKNOWN)) == (11, None)
    versions = t.versions().set_index("version")
    assert versions.loc[[0, 1], "live_rows"].tolist() == [2000, 1995]
    assert versions.loc[[2, 3, 4], list(DELTA_COUNTS)].isna().all().all()
    assert f"{UNKNOWN}" in t._repr_mimebundle_()["text/plain"].split("versions", 1)[1]
