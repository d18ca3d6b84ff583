"""The table doctor on Delta tables: every number checked against an independent read of the log (json lines)
and of the folder (os.walk), on the fixtures and on a copy given a tombstone, an orphan and a long log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from puffin_explorer.delta.table import DeltaTable

from conftest import ROOT

NOW = "2026-12-31T00:00:00Z"
NOW_MS = 1798675200000
DAY_MS = 86_400_000
SMALL = "engines/delta/kernel-rs-table-with-dv-small"
LARGE = "engines/delta/delta-spark-table-with-dv-large"


def _live_adds(folder: Path) -> dict:
    return _replay(folder)[0]


def _replay(folder: Path) -> tuple[dict, dict]:
    """The live add actions and the tombstones (path -> action), replayed from the JSON commits."""
    live, removed = {}, {}
    for commit in sorted((folder / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
                removed.pop(action["add"]["path"], None)
            elif "remove" in action:
                r = action["remove"]
                if live.get(r["path"], {}).get("deletionVector") == r.get("deletionVector"):
                    live.pop(r["path"], None)
                    removed[r["path"]] = r
    return live, removed


def _independent(folder: Path) -> dict:
    """Live files, DVs and tombstones replayed from the JSON commits; DV file sizes from the folder."""
    live, removed = _replay(folder)
    dvs = [a["deletionVector"] for a in live.values() if a.get("deletionVector")]
    dv_files = {p.name for p in folder.glob("deletion_vector_*.bin")}
    records = sum(json.loads(a["stats"])["numRecords"] for a in live.values())
    deleted = sum(d["cardinality"] for d in dvs)
    return {"data_files": len(live), "data_bytes": sum(a["size"] for a in live.values()), "dvs": len(dvs),
            "delete_files": len(dv_files), "delete_bytes": sum((folder / n).stat().st_size for n in dv_files),
            "records": records, "deleted_rows": deleted, "live_rows": records - deleted, "tombstones": removed,
            "log_files": len(list((folder / "_delta_log").iterdir())),
            "log_bytes": sum(p.stat().st_size for p in (folder / "_delta_log").iterdir())}


@pytest.mark.parametrize("name, live_rows, data_files, dvs", [(SMALL, 8, 1, 1), (LARGE, 1993, 22, 8)])
def test_fixture_metrics_are_exact(fixtures, name, live_rows, data_files, dvs):
    folder = fixtures / name
    h = DeltaTable(str(folder)).health(now=NOW)
    ind = _independent(folder)
    m = h.metrics
    assert (m["live_rows"], m["data_files"], m["dvs"]) == (live_rows, data_files, dvs)  # the fixture README's
    for key in ("data_files", "data_bytes", "dvs", "delete_files", "delete_bytes", "records", "deleted_rows",
                "live_rows", "log_files", "log_bytes"):
        assert m[key] == ind[key], key
    assert m["tombstones"] == len(ind["tombstones"]) == 0  # v3 replaced DVs: the same files are live again
    assert (m["orphan_files"], m["orphan_bytes"], m["position_delete_files"], m["equality_delete_files"]) == (0, 0, 0, 0)
    assert m["checkpoints"] == 0 and m["commits_since_checkpoint"] == ind["log_files"]
    assert m["snapshots_past_retention"] is None and m["manifests"] is None  # Iceberg-only: not applicable
    assert m["target_file_size"] == 1 << 30 and m["small_files"] == data_files  # kilobyte files
    json.dumps(h.to_dict())


def test_small_fixture_asks_for_reorg(fixtures):
    folder = fixtures / SMALL
    h = DeltaTable(str(folder)).health(now=NOW)
    assert h.codes() == ["health.deleted-share"] and h.status == "warning"
    f = h.finding("health.deleted-share")
    assert f.evidence["deleted_share"] == 0.2 and f.evidence["delete_files"] == 1
    assert [a.to_dict() for a in f.actions] == [
        {"engine": "delta", "statement": f"REORG TABLE delta.`{folder}` APPLY (PURGE)"}]
    assert f.effect == {"data_files_rewritten": 1, "rows_read": 10, "deleted_rows_after": 0, "dvs_after": 0,
                        "live_rows_after": 8}
    html = h.to_html()
    assert "REORG TABLE delta.`" in html and "<script" not in html and "table doctor" in h.to_text()
    assert h.partitions[["files", "rows", "deleted_rows", "delete_files"]].values.tolist() == [[1, 10, 2, 1]]


def test_large_fixture_asks_for_optimize(fixtures):
    folder = fixtures / LARGE
    h = DeltaTable(str(folder)).health(now=NOW, name="db.events")
    assert h.codes() == ["health.small-files"]  # 11 of 2,004 rows deleted: 0.5 %, under the 10 % threshold
    f = h.finding("health.small-files")
    assert f.actions[0].statement == "OPTIMIZE db.events" and f.actions[0].engine == "delta"
    ind = _independent(folder)
    assert ind["records"] == 2_004  # every file is small: OPTIMIZE reads every row
    assert f.effect == {"data_files_before": 22, "data_files_after": 1, "files_rewritten": 22,
                        "bytes_rewritten": ind["data_bytes"], "rows_read": ind["records"]}


@pytest.fixture
def damaged(fixtures, tmp_path):
    """The large fixture plus: v5 removes one data file (30 days before NOW), an orphan file 10 days old,
    v6..v16 commits with no data change (17 commits, no checkpoint)."""
    dst = tmp_path / "t"
    shutil.copytree(fixtures / LARGE, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    log = dst / "_delta_log"
    gone = "part-00019-a9bb3ce8-afba-47ec-8451-13edcd855b15-c000.snappy.parquet"
    add = _live_adds(dst)[gone]
    size = (dst / gone).stat().st_size
    remove = {"remove": {"path": gone, "deletionTimestamp": NOW_MS - 30 * DAY_MS, "dataChange": True, "size": size}}
    if add.get("deletionVector"):  # a remove names the logical file: path and DV
        remove["remove"]["deletionVector"] = add["deletionVector"]
    (log / f"{5:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": NOW_MS - 30 * DAY_MS,
                                                                   "operation": "DELETE"}}) + "\n"
                                        + json.dumps(remove) + "\n")
    for v in range(6, 17):
        (log / f"{v:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": NOW_MS - DAY_MS,
                                                                       "operation": "SET TBLPROPERTIES"}}) + "\n")
    orphan = dst / "part-99999-left-by-a-failed-job.snappy.parquet"
    orphan.write_bytes(b"PAR1" + b"\0" * 100)
    old = (NOW_MS - 10 * DAY_MS) / 1000
    os.utime(orphan, (old, old))
    young = dst / "part-99998-being-written.snappy.parquet"
    young.write_bytes(b"PAR1")
    os.utime(young, (NOW_MS / 1000 - 3600, NOW_MS / 1000 - 3600))
    (dst / ".part-99999-left-by-a-failed-job.snappy.parquet.crc").write_bytes(b"crc")  # hidden: never an orphan
    return dst, gone, size


def test_damaged_copy_findings_and_plan(damaged):
    dst, gone, size = damaged
    h = DeltaTable(str(dst)).health(now=NOW)
    m = h.metrics
    ind = _independent(dst)
    assert list(ind["tombstones"]) == [gone]
    assert m["data_files"] == 21 == ind["data_files"] and m["data_bytes"] == ind["data_bytes"]
    assert (m["tombstones"], m["tombstones_past_retention"], m["tombstone_bytes_on_storage"]) == (1, 1, size)
    assert (m["orphan_files"], m["orphan_bytes"], m["in_flight_files"]) == (1, 104, 1)
    assert m["commits_since_checkpoint"] == 17 and m["log_files"] == 17
    assert h.codes() == ["health.delta-checkpoint-overdue", "health.delta-tombstones-past-retention",
                         "health.orphan-files", "health.small-files"]
    t = h.finding("health.delta-tombstones-past-retention")
    assert t.evidence["retention_ms"] == 7 * DAY_MS and t.evidence["source"] == "default"
    assert t.evidence["examples"] == [gone] and t.effect == {"files_freed": 1, "bytes_freed": size}
    o = h.finding("health.orphan-files")
    assert o.evidence["examples"] == ["part-99999-left-by-a-failed-job.snappy.parquet"]
    assert h.frames["orphans"]["size"].tolist() == [104]
    html = h.to_html()
    assert "Tombstones (removed files)" in html and "2026-12-01 00:00:00" in html and gone in html
    c = h.finding("health.delta-checkpoint-overdue")
    assert c.evidence["checkpoint_interval"] == 10 and c.evidence["last_checkpoint"] is None
    ident = f"delta.`{dst}`"
    assert h.plan("delta") == [f"OPTIMIZE {ident}", f"VACUUM {ident} RETAIN 168 HOURS"]
    rs = f"deltalake.DeltaTable({str(dst)!r})"
    assert h.plan("delta-rs") == [f"{rs}.optimize.compact(target_size={1 << 30})", f"{rs}.create_checkpoint()",
                                  f"{rs}.vacuum(retention_hours=168, dry_run=False)"]


def test_configuration_sets_the_thresholds(damaged):
    dst, gone, size = damaged
    meta = json.loads((dst / "_delta_log" / f"{0:020d}.json").read_text().splitlines()[2])["metaData"]
    meta["configuration"] = {"delta.deletedFileRetentionDuration": "interval 40 days",
                             "delta.checkpointInterval": "20", "delta.targetFileSize": "nonsense"}
    (dst / "_delta_log" / f"{17:020d}.json").write_text(json.dumps({"metaData": meta}) + "\n")
    h = DeltaTable(str(dst)).health(now=NOW)
    # the removal is 30 days old, the orphan 10: both within 40 days; 18 commits <= 20
    assert h.codes() == ["health.small-files"]
    assert h.metrics["tombstones"] == 1 and h.metrics["tombstones_past_retention"] == 0
    assert h.metrics["orphan_files"] == 0 and h.metrics["in_flight_files"] == 2
    assert h.thresholds["delta.deletedFileRetentionDuration"] == {
        "value": 40 * DAY_MS, "property": "delta.deletedFileRetentionDuration", "source": "table property"}
    assert h.thresholds["delta.checkpointInterval"]["value"] == 20
    assert h.thresholds["delta.targetFileSize"]["source"] == "default (table property 'nonsense' is not valid)"


def test_cli_doctor_on_a_delta_folder(damaged):
    dst, _, _ = damaged
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "puffin_explorer", "doctor", str(dst), "--format", "json",
                          "--now", NOW, "--fail-on", "warning"], capture_output=True, text=True, env=env)
    assert run.returncode == 1, run.stderr
    [doc] = json.loads(run.stdout)
    assert doc["table"] == "t" and doc["status"] == "warning"
    assert doc["metrics"]["orphan_files"] == 1 and doc["metrics"]["delete_files"] == 2
    assert all(f["actions"] and {a["engine"] for a in f["actions"]} <= {"delta", "delta-rs"} for f in doc["findings"])
    ok = subprocess.run([sys.executable, "-m", "puffin_explorer", "doctor", str(dst), "--now", NOW],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "VACUUM delta.`" in ok.stdout and "Traceback" not in ok.stderr
    bad = subprocess.run([sys.executable, "-m", "puffin_explorer", "doctor", str(dst), "--cluster-by", "value"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "apply to Iceberg tables" in bad.stderr and "Traceback" not in bad.stderr


def test_a_dv_file_only_a_remove_action_names_is_no_orphan(fixtures, tmp_path):
    """v2 drops the small table's DV (remove with the DV, add without): its file is kept for VACUUM's
    retention like a removed data file, never an orphan, even when its mtime is old."""
    dst = tmp_path / "t"
    shutil.copytree(fixtures / SMALL, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    [(path, add)] = _live_adds(dst).items()
    remove = {"path": path, "deletionTimestamp": NOW_MS - DAY_MS, "dataChange": True,
              "deletionVector": add["deletionVector"]}
    plain = {k: v for k, v in add.items() if k != "deletionVector"}
    (dst / "_delta_log" / f"{2:020d}.json").write_text(json.dumps({"remove": remove}) + "\n"
                                                        + json.dumps({"add": plain}) + "\n")
    old = (NOW_MS - 30 * DAY_MS) / 1000
    for p in dst.iterdir():
        if p.is_file():
            os.utime(p, (old, old))
    h = DeltaTable(str(dst)).health(now=NOW)
    assert (h.metrics["dvs"], h.metrics["delete_files"], h.metrics["deleted_rows"]) == (0, 0, 0)
    assert (h.metrics["tombstones"], h.metrics["orphan_files"]) == (0, 0)
    assert h.codes() == []  # one file of 10 rows, no deletes: nothing to fix


def test_the_delta_rs_statements_the_doctor_prints_fix_what_it_found(fixtures, tmp_path):
    """The large fixture (22 kilobyte files, 8 DVs) with a one-second tombstone retention: the delta-rs
    compaction the doctor prints leaves the one file it predicted with every live row and no DV, and the
    vacuum it prints then deletes the tombstones it counted, bytes as it said."""
    import time

    import deltalake

    dst = tmp_path / "large"
    shutil.copytree(fixtures / LARGE, dst)
    deltalake.DeltaTable(str(dst)).alter.set_table_properties(
        {"delta.deletedFileRetentionDuration": "interval 1 seconds"})
    before = DeltaTable(str(dst)).health()
    assert before.codes() == ["health.small-files"]
    small = before.finding("health.small-files")
    assert (before.metrics["data_files"], before.metrics["live_rows"], before.metrics["dvs"]) == (22, 1993, 8)
    [compact] = [a.statement for a in small.actions if a.engine == "delta-rs"]
    eval(compact, {"deltalake": deltalake})

    time.sleep(1.5)  # the compaction's tombstones are now past the retention
    mid = DeltaTable(str(dst)).health()
    assert mid.finding("health.small-files") is None
    m = mid.metrics
    assert (m["data_files"], m["records"], m["live_rows"], m["dvs"]) == (small.effect["data_files_after"], 1993,
                                                                       1993, 0)
    tombs = mid.finding("health.delta-tombstones-past-retention")
    on_disk = {p for p in dst.rglob("*") if p.is_file() and "_delta_log" not in p.parts}
    removed = [dst / p for p in mid.frames["tombstones"]["path"]]
    assert tombs.effect == {"files_freed": 22, "bytes_freed": sum(p.stat().st_size for p in removed)}
    assert set(removed) <= on_disk
    [vacuum] = [a.statement for a in tombs.actions if a.engine == "delta-rs"]
    assert vacuum.endswith(".vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)")
    eval(vacuum, {"deltalake": deltalake})

    after = DeltaTable(str(dst)).health()
    assert after.finding("health.delta-tombstones-past-retention") is None
    gone = on_disk - {p for p in dst.rglob("*") if p.is_file() and "_delta_log" not in p.parts}
    assert gone >= set(removed) and after.metrics["live_rows"] == 1993
