"""The table doctor on real tables: every number checked against an independent read (the metadata JSON, the
manifests read with fastavro, an os.walk of the folder, pyarrow on the data files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest

from puffin_explorer import Table, Warehouse
from puffin_explorer.findings import is_known, lookup
from puffin_explorer.health import METRIC_KEYS, TableHealth

from _warehouse_fixtures import (WAREHOUSE, WRITTEN_ROOT, copy_warehouse, edit_json, leave_orphans,
                                 read_delete_files_csv)
from conftest import ROOT

#: Three days after the fixture warehouse was written (2026-11-22 04:45 UTC): every snapshot is past
#: the 5-day default retention except the current one.
NOW = "2026-11-28T00:00:00Z"
NOW_MS = 1795824000000
DAY_MS = 86_400_000
CONTRACT_METRICS = ("data_files", "data_bytes", "delete_files", "delete_bytes", "dvs", "position_delete_files",
                    "equality_delete_files", "live_rows", "deleted_rows", "snapshots", "snapshots_past_retention",
                    "manifests", "metadata_files", "small_files", "orphan_files", "orphan_bytes")


# ---- an independent reader: json + fastavro + the file system --------------------------------------------
def _local(path: str, root: Path) -> Path:
    """Where a path written under /data/warehouse is in ``root`` (the fixture or its copy)."""
    return root / path[len(WRITTEN_ROOT) + 1:] if path.startswith(WRITTEN_ROOT) else Path(path)


def _avro(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        return list(fastavro.reader(fh))


def _metadata(root: Path, table: str) -> dict:
    meta = root / table.replace(".", "/") / "metadata"
    version = (meta / "version-hint.text").read_text().strip()
    return json.loads((meta / f"v{version}.metadata.json").read_text())


def _snapshot_files(root: Path, snap: dict) -> dict[str, int]:
    """Every file a snapshot references (live entries, its manifests, its manifest list) -> size on disk."""
    out = {}
    ml = _local(snap["manifest-list"], root)
    out[str(ml)] = ml.stat().st_size
    for m in _avro(ml):
        mp = _local(m["manifest_path"], root)
        out[str(mp)] = mp.stat().st_size
        for e in _avro(mp):
            if e["status"] != 2:
                p = _local(e["data_file"]["file_path"], root)
                out[str(p)] = p.stat().st_size
    return out


def _live_entries(root: Path, snap: dict) -> list[dict]:
    out = []
    for m in _avro(_local(snap["manifest-list"], root)):
        out += [e["data_file"] for e in _avro(_local(m["manifest_path"], root)) if e["status"] != 2]
    return out


def _independent(root: Path, table: str, now_ms: int = NOW_MS) -> dict:
    md = _metadata(root, table)
    snaps = {s["snapshot-id"]: s for s in md["snapshots"]}
    current = snaps[md["current-snapshot-id"]]
    live = _live_entries(root, current)
    data = [e for e in live if e["content"] == 0]
    deletes = [e for e in live if e["content"] != 0]
    delete_paths = {e["file_path"] for e in deletes}
    # retention: the current snapshot is kept (min-snapshots-to-keep 1), the rest when younger than 5 days
    cutoff = now_ms - 5 * DAY_MS
    kept = {s for s, v in snaps.items() if v["timestamp-ms"] >= cutoff} | {md["current-snapshot-id"]}
    expired = set(snaps) - kept
    kept_files = {}
    for s in kept:
        kept_files.update(_snapshot_files(root, snaps[s]))
    freed = {}
    for s in expired:
        freed.update({k: v for k, v in _snapshot_files(root, snaps[s]).items() if k not in kept_files})
    folder = root / table.replace(".", "/")
    metadata_files = sum(1 for _, _, names in os.walk(folder) for n in names if n.endswith(".metadata.json"))
    rows = sum(pq.ParquetFile(_local(e["file_path"], root)).metadata.num_rows for e in data)
    return {
        "data_files": len(data),
        "data_bytes": sum(_local(e["file_path"], root).stat().st_size for e in data),
        "records": rows,
        "delete_files": len(delete_paths),
        "delete_bytes": sum(_local(p, root).stat().st_size for p in delete_paths),
        "dvs": sum(1 for e in deletes if e["file_format"].upper() == "PUFFIN"),
        "position_delete_files": sum(1 for e in deletes if e["content"] == 1 and e["file_format"].upper() != "PUFFIN"),
        "equality_delete_files": sum(1 for e in deletes if e["content"] == 2),
        "snapshots": len(snaps),
        "snapshots_past_retention": len(expired),
        "bytes_only_in_expired_snapshots": sum(freed.values()),
        "files_only_in_expired": len(freed),
        "freed": sorted(freed),
        "manifests": len(_avro(_local(current["manifest-list"], root))),
        "metadata_files": metadata_files,
    }


@pytest.fixture(scope="module")
def wh():
    return Warehouse(str(WAREHOUSE))


@pytest.fixture(scope="module")
def health(wh):
    return {name: wh.table(name).health(now=NOW) for name in wh.table_names()}


# ---- numbers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["shop.orders", "shop.events", "shop.legacy"])
def test_metrics_match_an_independent_read(health, name):
    h = health[name]
    truth = _independent(WAREHOUSE, name)
    for key in ("data_files", "data_bytes", "records", "delete_files", "delete_bytes", "dvs", "position_delete_files",
                "equality_delete_files", "snapshots", "snapshots_past_retention", "bytes_only_in_expired_snapshots",
                "manifests", "metadata_files"):
        assert h.metrics[key] == truth[key], key
    assert set(CONTRACT_METRICS) <= set(h.metrics) and set(METRIC_KEYS) == set(h.metrics)


def test_orders_counts_a_puffin_file_of_four_dvs_once(health):
    m = health["shop.orders"].metrics
    dv_rows = read_delete_files_csv("orders_delete_files.csv")
    assert len(dv_rows) == 4 and len({r[0] for r in dv_rows}) == 1
    assert (m["dvs"], m["delete_files"], m["delete_bytes"]) == (4, 1, 34239)
    assert (m["data_files"], m["records"]) == (8, 121964)
    assert m["deleted_rows"] == sum(r[4] for r in dv_rows) == 27924
    assert m["live_rows"] == 94040
    assert (m["small_files"], m["partitions"], m["max_delete_files_per_data_file"]) == (8, 4, 1)
    assert (m["snapshots_past_retention"], m["bytes_only_in_expired_snapshots"]) == (4, 114731)
    assert (m["orphan_files"], m["orphan_bytes"], m["metadata_files"]) == (0, 0, 7)


def test_events_deleted_share_and_legacy_position_deletes(health):
    ev = health["shop.events"].metrics
    csv_rows = read_delete_files_csv("events_delete_files.csv")
    assert ev["deleted_rows"] == sum(r[4] for r in csv_rows) == 55878
    assert (ev["live_rows"], round(ev["deleted_share"], 3)) == (244122, 0.186)
    legacy = health["shop.legacy"].metrics
    pos = pq.read_table(next((WAREHOUSE / "shop/legacy/data").glob("*-deletes.parquet")))
    assert legacy["deleted_rows"] == pos.num_rows == 2000
    assert (legacy["live_rows"], legacy["dvs"], legacy["position_delete_files"], legacy["delete_files"]) == \
        (18000, 0, 1, 1)


def test_small_files_against_the_default_target(health):
    h = health["shop.orders"]
    f = h.finding("health.small-files")
    assert f.evidence["target_file_size"] == 512 << 20 and f.evidence["source"] == "default"
    assert f.evidence["small_file_size"] == 402653184  # 75 %: rewrite_data_files' min-file-size-bytes
    assert f.effect == {"data_files_before": 8, "data_files_after": 4, "files_rewritten": 8,
                        "bytes_rewritten": 1111347, "rows_read": 121964}
    assert "CALL spark_catalog.system.rewrite_data_files(table => 'shop.orders', options => " \
           "map('min-input-files', '2', 'remove-dangling-deletes', 'true'))" in h.actions("spark")
    hist = h.size_histogram
    assert int(hist.files.sum()) == 8 and int(hist.bytes.sum()) == 1111347
    assert int(hist.loc[hist.small, "files"].sum()) == 8
    assert h.partitions.files.tolist() == [2, 2, 2, 2]


def test_small_file_threshold_comes_from_the_table_property(tmp_path):
    root = copy_warehouse(tmp_path)
    meta = root / "shop/orders/metadata/v7.metadata.json"
    edit_json(meta, lambda d: d["properties"].update({"write.target-file-size-bytes": "100000"}))
    h = Warehouse(str(root), relocate={WRITTEN_ROOT: str(root)}).table("shop.orders").health(now=NOW)
    sizes = [e["file_size_in_bytes"] for e in _live_entries(root, next(
        s for s in _metadata(root, "shop.orders")["snapshots"] if s["snapshot-id"] == 6590999396394158857))
        if e["content"] == 0]
    assert h.metrics["small_file_size"] == 75000
    assert h.metrics["small_files"] == sum(1 for s in sizes if s < 75000) == 4
    assert h.thresholds["write.target-file-size-bytes"] == {"value": 100000, "property": "write.target-file-size-bytes",
                                                            "source": "table property"}
    f = h.finding("health.small-files")
    # one small file per partition: nothing merges (each partition's other file is 3.6x the target)
    assert f is None


def test_retention_finding_and_the_expire_statement(health):
    h = health["shop.orders"]
    f = h.finding("health.snapshots-past-retention")
    truth = _independent(WAREHOUSE, "shop.orders")
    assert f.effect == {"snapshots_before": 5, "snapshots_after": 1, "files_freed": truth["files_only_in_expired"],
                        "bytes_freed": truth["bytes_only_in_expired_snapshots"]}
    assert f.evidence["max_age_source"] == "default" and f.evidence["max_snapshot_age_ms"] == 5 * DAY_MS
    assert [a.to_dict() for a in f.actions][0] == {
        "engine": "spark", "statement": "CALL spark_catalog.system.expire_snapshots(table => 'shop.orders', "
                                        "older_than => TIMESTAMP '2026-11-23 00:00:00.000 UTC', retain_last => 1)"}
    assert {a.engine for a in f.actions} == {"spark", "trino", "pyiceberg"}
    assert sorted(Path(p).name for p in h.expired_only.location) == sorted(
        Path(p).name for p in truth["freed"])
    # before the 5 days are up nothing is past retention
    early = Warehouse(str(WAREHOUSE)).table("shop.orders").health(now="2026-11-24T00:00:00Z")
    assert early.metrics["snapshots_past_retention"] == 0 and early.finding("health.snapshots-past-retention") is None


def test_bounded_frames_keep_the_top_rows_and_the_sums_keep_every_file(monkeypatch):
    """``amplification``, ``expired_only`` and ``partitions`` keep their first rows only (as the Spark doctor
    does); the counts, bytes and findings still cover every file and partition."""
    import puffin_explorer.iceberg.health as ih
    import puffin_explorer.iceberg.health_aggregates as aggregates

    full = Warehouse(str(WAREHOUSE)).table("shop.orders").health(now=NOW)
    monkeypatch.setattr(aggregates, "AMPLIFICATION_ROWS", 2)
    monkeypatch.setattr(ih, "FRAME_ROWS", 3)
    monkeypatch.setattr(aggregates, "PARTITION_ROWS", 2)
    cut = Warehouse(str(WAREHOUSE)).table("shop.orders").health(now=NOW)
    truth = _independent(WAREHOUSE, "shop.orders")
    ranked = full.amplification.sort_values(["delete_files", "deleted_rows", "file_path"],
                                            ascending=[False, False, True]).reset_index(drop=True)
    assert len(full.amplification) == truth["data_files"] > 2
    assert cut.amplification.to_dict("list") == ranked.head(2).to_dict("list")
    assert len(full.expired_only) == truth["files_only_in_expired"] > 3
    assert cut.expired_only.location.tolist() == sorted(full.expired_only.location)[:3]
    assert cut.expired_only.location.tolist() == full.expired_only.location.tolist()[:3]
    assert cut.metrics == full.metrics
    assert cut.metrics["bytes_only_in_expired_snapshots"] == truth["bytes_only_in_expired_snapshots"]
    # the small-files finding counts all 4 partitions from the summed row, the frame shows the first 2 by key
    assert len(full.partitions) == full.metrics["partitions"] == 4 and len(cut.partitions) == 2
    assert cut.partitions.to_dict("list") == full.partitions.head(2).to_dict("list")
    assert cut.to_dict()["findings"] == full.to_dict()["findings"]
    assert "8 of them in 4 partitions merge into 4" in cut.finding("health.small-files").message


def test_orphans_respect_the_grace_period(tmp_path):
    root = copy_warehouse(tmp_path)
    table = root / "shop/events"
    made = leave_orphans(table, NOW_MS)  # the .crc file is hidden: remove_orphan_files skips . and _ names
    old, young, stray_meta = made["old"], made["young"], made["stray_meta"]
    h = Warehouse(str(root)).table("shop.events").health(now=NOW)
    listed = {str(p) for p in table.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))}
    referenced = set()
    md = _metadata(root, "shop.events")
    for s in md["snapshots"]:
        referenced |= set(_snapshot_files(root, s))
    referenced |= {str(_local(e["metadata-file"], root)) for e in md["metadata-log"]}
    referenced |= {str(table / "metadata/v6.metadata.json"), str(table / "metadata/version-hint.text")}
    referenced |= {str(_local(s["statistics-path"], root)) for s in md["statistics"]}
    assert listed - referenced == {str(old), str(young), str(stray_meta)}
    assert (h.metrics["orphan_files"], h.metrics["orphan_bytes"], h.metrics["in_flight_files"]) == (2, 1244, 1)
    f = h.finding("health.orphan-files")
    assert f.severity.value == "warning" and f.effect == {"files_before": 2, "files_after": 0, "bytes_freed": 1244}
    assert "CALL spark_catalog.system.remove_orphan_files(table => 'shop.events', older_than => TIMESTAMP " \
           "'2026-11-25 00:00:00.000 UTC')" in h.actions("spark")
    assert sorted(Path(p).name for p in h.orphans.location) == ["left-behind.parquet", "stray-m0.avro"]
    # every file is listed; a size and time are read only for the files a check looks at (the unreferenced
    # ones, the metadata files, the manifest lists), the referenced data files' left null (no stat per file)
    listing = h.listing.set_index(h.listing.location.map(lambda loc: str(Path(loc.split("://")[-1]))))
    assert set(listing.index) == {str(p) for p in table.rglob("*") if p.is_file()}
    for p in (old, young, stray_meta, table / "metadata/v6.metadata.json", *table.glob("metadata/snap-*.avro")):
        assert (listing.loc[str(p), "size"], listing.loc[str(p), "mtime_ms"]) == \
            (p.stat().st_size, int(p.stat().st_mtime * 1000)), p
    data_files = [str(p) for p in table.glob("data/**/*.parquet") if str(p) in referenced]
    assert data_files and listing.loc[data_files, "size"].isna().all()
    # an explicit cutoff after the young file's time makes it an orphan too
    later = Warehouse(str(root)).table("shop.events").health(now=NOW, older_than=NOW)
    assert (later.metrics["orphan_files"], later.metrics["orphan_bytes"]) == (3, 1343)


def test_duckdb_table_is_read_dv_correct(fixtures):
    t = Table.from_metadata(str(fixtures / "engines/duckdb/dv_single/metadata/v5.metadata.json"),
                            relocate={"/data/engines/duckdb/warehouse/duck": str(fixtures / "engines/duckdb")})
    h = t.health(now="2026-11-25T00:00:00Z")
    folder = fixtures / "engines/duckdb/dv_single"
    parquet = next((folder / "data").glob("*.parquet"))
    puffin = next((folder / "data").glob("2ce83c90-*-deletes.puffin"))
    m = h.metrics
    assert (m["data_files"], m["data_bytes"], m["records"]) == (1, parquet.stat().st_size,
                                                                pq.ParquetFile(parquet).metadata.num_rows)
    assert (m["dvs"], m["delete_files"], m["delete_bytes"]) == (1, 1, puffin.stat().st_size)
    assert (m["deleted_rows"], m["live_rows"]) == (22889, 77111)  # the superseded (status 2) DVs are not counted
    md = json.loads((folder / "metadata/v5.metadata.json").read_text())
    assert m["snapshots"] == len(md["snapshots"]) == 4
    assert m["metadata_files"] == sum(1 for p in (folder / "metadata").iterdir() if p.name.endswith(".metadata.json"))
    assert (m["orphan_files"], m["snapshots_past_retention"]) == (0, 0)
    assert h.status == "warning" and h.codes()[0] == "health.deleted-share"


# ---- findings, contract and views ---------------------------------------------------------------------
def test_every_finding_is_catalogued_and_every_warning_has_an_action(health):
    for h in health.values():
        for f in h.findings:
            assert is_known(f.code) and f.severity in lookup(f.code).severities, f.code
            if f.severity.value in ("warning", "error"):
                assert f.actions, f.code
            assert all(a.engine in ("spark", "trino", "pyiceberg", "delta", "delta-rs") for a in f.actions)
    assert [h.status for h in health.values()] == ["warning", "warning", "warning"]


def test_warehouse_health_is_one_row_per_table(wh):
    df = wh.health(now=NOW)
    assert df.table.tolist() == ["shop.events", "shop.legacy", "shop.orders"]
    assert df.status.tolist() == ["warning", "warning", "warning"]
    assert df.set_index("table").loc["shop.orders", "top_problem"].startswith("22.9% of the rows are deleted")
    assert df.set_index("table").loc["shop.legacy", "top_problem"].startswith("1 of 2 snapshots are older than 5d")
    assert isinstance(df.attrs["health"]["shop.orders"], TableHealth)


def test_views_show_findings_and_copyable_statements(health):
    h = health["shop.orders"]
    html = h.to_html()
    assert "<script" not in html
    assert '<pre class="pe-hex">CALL spark_catalog.system.expire_snapshots(table =&gt; &#x27;shop.orders&#x27;' in html
    assert "health.small-files" in html and "table doctor" in html
    text = h.to_text()
    assert text.startswith("table doctor shop.orders: warning")
    assert "  [spark] CALL spark_catalog.system.rewrite_data_files(table => 'shop.orders', options => " \
           "map('min-input-files', '2', 'remove-dangling-deletes', 'true'))" in text
    assert h._repr_mimebundle_()["text/plain"] == text


def test_catalog_name_is_a_parameter(wh):
    h = wh.table("shop.orders").health(now=NOW, catalog="prod", name="sales.orders")
    assert h.table == "sales.orders"
    assert all(s.startswith(("CALL prod.system.", "ALTER TABLE prod.sales.orders")) for s in h.actions("spark"))
    assert [s.split("(")[0] for s in h.plan("spark")] == [
        "CALL prod.system.rewrite_data_files", "CALL prod.system.rewrite_data_files",
        "CALL prod.system.expire_snapshots"]  # rewrites first, expiry after; info findings are not in the plan
    assert h.plan("spark", severity="info")[-1].startswith("ALTER TABLE prod.sales.orders SET TBLPROPERTIES")


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "puffin_explorer", *args], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=300)


def test_cli_json_contract_and_fail_on(tmp_path):
    p = _cli("doctor", str(WAREHOUSE), "--now", NOW, "--format", "json")
    assert p.returncode == 0, p.stderr  # warnings only: below the default --fail-on error
    doc = json.loads(p.stdout)
    assert [d["table"] for d in doc] == ["shop.events", "shop.legacy", "shop.orders"]
    for d in doc:
        assert set(d) == {"table", "status", "metrics", "findings"} and d["status"] == "warning"
        assert set(CONTRACT_METRICS) <= set(d["metrics"])
        for f in d["findings"]:
            assert set(f) == {"code", "severity", "message", "evidence", "actions", "effect"}
            assert all({"engine", "statement"} <= set(a) for a in f["actions"])
    orders = doc[2]["metrics"]
    assert (orders["delete_files"], orders["delete_bytes"], orders["dvs"], orders["live_rows"]) == (1, 34239, 4,
                                                                                                     94040)
    warn = _cli("doctor", str(WAREHOUSE), "--table", "shop.legacy", "--now", NOW, "--fail-on", "warning")
    assert warn.returncode == 1 and "warning health.snapshots-past-retention" in warn.stdout
    early = _cli("doctor", str(WAREHOUSE / "shop/legacy"), "--now", "2026-11-24T00:00:00Z", "--fail-on", "warning")
    assert early.returncode == 0, early.stdout  # legacy: 10.0 % deleted is not above the 10 % threshold
    bad = _cli("doctor", str(WAREHOUSE), "--now", "yesterday-ish")
    assert bad.returncode == 2 and bad.stderr.startswith("puffin-explorer doctor: --now 'yesterday-ish' is not a time")
    assert "Traceback" not in bad.stderr


def test_cli_relocate_is_shared(tmp_path):
    meta = WAREHOUSE / "shop/events/metadata/v6.metadata.json"
    p = _cli("doctor", str(meta), "--relocate", f"{WRITTEN_ROOT}={WAREHOUSE}", "--now", NOW, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc[0]["table"] == "events" and doc[0]["metrics"]["live_rows"] == 244122


def test_an_older_metadata_file_skips_the_orphan_check_and_an_empty_table_is_ok(tmp_path):
    root = copy_warehouse(tmp_path)
    meta = root / "shop/orders/metadata"
    for i, p in enumerate(sorted(meta.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))):
        os.utime(p, (NOW_MS / 1000 - 10 * DAY_MS / 1000 + i, NOW_MS / 1000 - 10 * DAY_MS / 1000 + i))
    old = Table.from_metadata(str(meta / "v3.metadata.json")).health(now=NOW)
    assert old.finding("health.not-current-metadata").evidence["newer"] == [
        str(meta / f"v{i}.metadata.json") for i in range(4, 8)][:5]
    assert (old.metrics["orphan_files"], old.metrics["orphan_bytes"]) == (None, None)
    assert old.finding("health.orphan-files") is None
    empty = Table.from_metadata(str(meta / "v1.metadata.json"), relocate={WRITTEN_ROOT: str(root)})
    md = json.loads((meta / "v1.metadata.json").read_text())
    assert md.get("current-snapshot-id", -1) in (-1, None) and not md.get("snapshots")
    h = empty.health(now=NOW)
    assert (h.metrics["snapshots"], h.metrics["data_files"], h.metrics["live_rows"]) == (0, 0, 0)
    assert h.status == "ok" and "table doctor orders: ok" in h.to_text() and "<script" not in h.to_html()


def test_an_unreadable_manifest_is_a_note_not_a_crash(tmp_path):
    root = copy_warehouse(tmp_path)
    manifest = root / "shop/events/metadata/6d3f6038-5e32-44af-984a-804a0d99305d-m0.avro"
    manifest.write_bytes(manifest.read_bytes()[:100])  # only an older snapshot uses it
    h = Warehouse(str(root)).table("shop.events").health(now=NOW)
    f = h.finding("health.snapshot-unreadable")
    assert f.severity.value == "info" and f.evidence == {"snapshot_id": 3379575596702121728}
    assert (h.metrics["orphan_files"], h.metrics["live_rows"]) == (None, 244122)
    p = _cli("doctor", str(root), "--table", "shop.events", "--now", NOW)
    assert p.returncode == 0 and "info health.snapshot-unreadable" in p.stdout and not p.stderr


def test_partitions_and_column_metrics_match_the_manifests_and_the_data(health):
    h = health["shop.orders"]
    md = _metadata(WAREHOUSE, "shop.orders")
    current = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    data = [e for e in _live_entries(WAREHOUSE, current) if e["content"] == 0]
    per_bucket: dict[int, list[int]] = {}
    for e in data:
        b = e["partition"]["customer_id_bucket"]
        files, rows, nbytes = per_bucket.get(b, [0, 0, 0])
        per_bucket[b] = [files + 1, rows + e["record_count"], nbytes + e["file_size_in_bytes"]]
    parts = h.partitions
    assert [[int(r["files"]), int(r["rows"]), int(r["bytes"])] for r in parts.to_dict("records")] == \
        [per_bucket[b] for b in sorted(per_bucket)]
    assert parts.deleted_rows.sum() == 27924 and h.finding("health.partition-skew") is None
    schema = {f["id"]: f["name"] for f in md["schemas"][-1]["fields"]}
    sizes: dict[str, int] = {}
    nulls: dict[str, int] = {}
    for e in data:
        for kv in e["column_sizes"]:
            sizes[schema[kv["key"]]] = sizes.get(schema[kv["key"]], 0) + kv["value"]
        for kv in e["null_value_counts"]:
            nulls[schema[kv["key"]]] = nulls.get(schema[kv["key"]], 0) + kv["value"]
    cols = h.columns.set_index("column")
    total = sum(sizes.values())
    for name, n in sizes.items():
        assert cols.loc[name, "bytes"] == n and cols.loc[name, "storage_share"] == pytest.approx(n / total)
        assert cols.loc[name, "nulls"] == nulls[name] and cols.loc[name, "values"] == 121964
    ids = [pq.read_table(_local(e["file_path"], WAREHOUSE), columns=["order_id"]).column(0) for e in data]
    assert (cols.loc["order_id", "min"], cols.loc["order_id", "max"]) == (
        min(min(c.to_pylist()) for c in ids), max(max(c.to_pylist()) for c in ids))
    assert h.metrics["columns_without_bounds"] == 0


def test_the_bounded_frames_of_nothing_are_empty_frames(wh):
    """No file only in expired snapshots, no data file, no listed file: empty frames of the same columns (pyarrow
    before 26 cannot select the first rows of an empty table)."""
    import pyarrow as pa

    from puffin_explorer.iceberg.health import DriverReads
    from puffin_explorer.iceberg.health_aggregates import _first_rows

    empty = pa.table({"location": pa.array([], pa.string()), "size": pa.array([], pa.int64())})
    assert _first_rows(empty, 10, [("location", "ascending")]).num_rows == 0
    three = pa.table({"location": ["c", "a", "b"], "size": [3, 1, 2]})
    assert _first_rows(three, 2, [("location", "ascending")]).to_pydict() == {"location": ["a", "b"], "size": [1, 2]}
    reads = DriverReads(wh.table("shop.orders").source)
    frame, files, nbytes = reads.expired_only(set(), [])
    assert (list(frame.columns), len(frame), files, nbytes) == (["location", "size"], 0, 0, 0)
    reads.add_file(1, "/t/metadata/snap-1.avro", 10)
    frame, files, nbytes = reads.expired_only({1}, [1])
    assert (len(frame), files, nbytes) == (0, 0, 0)
    frame, files, nbytes = reads.expired_only(set(), [1])
    assert (frame.to_dict("list"), files, nbytes) == ({"location": ["/t/metadata/snap-1.avro"], "size": [10]}, 1, 10)


@pytest.mark.parametrize("name", ["shop.orders", "shop.events"])
@pytest.mark.parametrize("way", ["one manifest a batch", "2 rows a batch", "index built before",
                                 "index with metrics, 2 rows a batch"])
def test_column_metrics_summed_batch_by_batch_are_the_whole_tables(monkeypatch, name, way):
    """The driver never keeps the column metrics per file: they are summed as the index is built, a batch of
    manifests at a time, or read again after an index built before, or summed from an index that holds them
    ``ROWS_PER_BATCH`` rows at a time.  Every way gives the same doctor, column frame and clustering."""
    import pandas as pd

    from puffin_explorer.iceberg import manifest_chunks
    from puffin_explorer.iceberg import metric_totals

    whole = Warehouse(str(WAREHOUSE)).table(name).health(now=NOW, list_files=False)
    t = Warehouse(str(WAREHOUSE)).table(name)
    if way == "one manifest a batch":
        monkeypatch.setattr(manifest_chunks, "BATCH", 1)
    elif way == "2 rows a batch":
        monkeypatch.setattr(metric_totals, "ROWS_PER_BATCH", 2)
    elif way == "index built before":
        t.index()
    else:
        monkeypatch.setattr(metric_totals, "ROWS_PER_BATCH", 2)
        assert t.index(metrics=True).metrics
    batched = t.health(now=NOW, list_files=False)
    assert batched.to_dict() == whole.to_dict()
    for frame in ("columns", "clustering"):
        assert (frame in batched.frames) == (frame in whole.frames)
        if frame in whole.frames:
            pd.testing.assert_frame_equal(batched.frames[frame], whole.frames[frame])
    assert len(whole.frames["columns"]) >= 3


def test_health_keeps_no_column_metrics_per_file_in_the_index():
    """The doctor's index is the one every analysis shares, without metrics, and no manifest stays cached
    with them: the metrics were summed and dropped a batch at a time."""
    from puffin_explorer.iceberg.entry_cache import entry_cache

    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    h = t.health(now=NOW, list_files=False)
    cache = entry_cache(t.source)
    assert h.frames["columns"]["values"].sum() > 0
    assert [k for k in cache.indexes if k[2]] == []
    assert [k for k in cache.chunks if k[1]] == []
    assert t.index() is cache.indexes[(t.source.metadata.current_snapshot_id, None, False)]


def test_partition_skew_from_the_summed_partitions():
    """``health.partition-skew`` from the ``partition_summary`` measure: p=3 grown to 50,000 B against a median
    partition of 700 B (p=1 30 B, p=2 700 B) is 71.4x; the same table as written by hand (5,000 B) is 7.1x, below."""
    import pyarrow as pa

    import ast

    from puffin_explorer.iceberg import health_live_files as live_files
    from puffin_explorer.iceberg import measures as M
    from puffin_explorer.iceberg.columns import partition_text

    from _measure_relations import v2_relations

    def skew(relations):
        found: list = []
        summary = M.run_local(M.PARTITION_SUMMARY, **relations).to_pylist()[0]
        # the engines look the text up: the record's text, as a user reads it
        summary["largest_partition"] = partition_text(ast.literal_eval(summary["largest_pkey"].split("|", 1)[1]))
        live_files._skew_finding(found, summary)
        return found

    rel = v2_relations()
    assert skew(rel) == []
    data = rel["data"]
    rel["data"] = data.set_column(data.schema.get_field_index("file_size_in_bytes"), "file_size_in_bytes",
                                  pa.array([10, 20, 300, 400, 50_000], pa.int64()))
    (f,) = skew(rel)
    assert f.code == "health.partition-skew"
    assert f.message == "partition p=3 holds 50,000 B, 71.4x the median partition"
    assert f.evidence == {"partition": "p=3", "bytes": 50_000, "rows": 500, "files": 1, "median_bytes": 700.0,
                          "ratio": 71.43, "threshold": live_files.SKEW_RATIO, "source": "default"}


def test_a_snapshots_file_set_is_made_only_for_the_checks_that_read_it(monkeypatch):
    """Without a listing and with no snapshot past retention nothing reads the file sets, so none is made; the
    retention check makes the expired ones' and the kept ones', the orphan check every snapshot's, and the
    numbers are those of a doctor that made them all."""
    from puffin_explorer.iceberg import health as health_module

    made = []
    real = health_module._snapshot_files
    monkeypatch.setattr(health_module, "_snapshot_files", lambda src, sid, mans: made.append(sid) or real(src, sid, mans))

    def run(now, list_files):
        made.clear()
        h = Warehouse(str(WAREHOUSE)).table("shop.orders").health(now=now, list_files=list_files)
        return h, sorted(made)

    h, sets = run("2026-11-22T05:00:00Z", False)  # an hour after the last commit: nothing past retention
    assert h.metrics["snapshots_past_retention"] == 0 and sets == []
    h, sets = run("2026-11-28T00:00:00Z", False)
    assert h.metrics["snapshots_past_retention"] == 4 and len(sets) == 5  # the four expired and the one kept
    assert h.metrics["bytes_only_in_expired_snapshots"] == 95_480  # as when every set was made up front
    h, sets = run("2026-11-22T05:00:00Z", True)
    assert len(sets) == 5 and h.metrics["orphan_files"] == 0  # the orphan check reads every snapshot's
