"""A snapshot ``timestamp-ms`` no datetime can hold (before 1677 or after 2262, a damaged metadata JSON) is a
metadata finding and an unknown time in every answer: never a traceback, never a wrapped or 1970 date."""

from __future__ import annotations

import json

import pandas as pd

from puffin_explorer.delta.table import DeltaTable
from puffin_explorer.iceberg.warehouse import Warehouse

try:
    from _warehouse_fixtures import copy_warehouse
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import copy_warehouse

NOW = "2026-11-28T00:00:00Z"
EVENTS_IDS = [6372083600183000311, 3379575596702121728, 3714665768772348830, 15511898047522140]
RANGE = "outside the times a timestamp can hold (epoch milliseconds from 1677-09-21 to 2262-04-11); the time is " \
        "read as unknown"


def _damaged_events(tmp_path):
    root = copy_warehouse(tmp_path)
    meta = root / "shop" / "events" / "metadata" / "v6.metadata.json"
    doc = json.loads(meta.read_text())
    doc["snapshots"][1]["timestamp-ms"] = -10 ** 13
    doc["snapshots"][2]["timestamp-ms"] = 10 ** 16
    doc["snapshot-log"][1]["timestamp-ms"] = -10 ** 13
    doc["metadata-log"][1]["timestamp-ms"] = 10 ** 16
    meta.write_text(json.dumps(doc))
    return Warehouse(str(root)).table("shop.events")


def test_the_metadata_names_each_bad_timestamp(tmp_path):
    t = _damaged_events(tmp_path)
    bad = [(f.code, f.severity.value, f.message) for f in t.findings if f.code != "iceberg.table-relocated"]
    assert bad == [
        ("iceberg.metadata-number-range", "error", f"snapshots[1].timestamp-ms is -10000000000000, {RANGE}"),
        ("iceberg.metadata-number-range", "error", f"snapshots[2].timestamp-ms is 10000000000000000, {RANGE}"),
        ("iceberg.metadata-number-range", "error", f"snapshot-log[1].timestamp-ms is -10000000000000, {RANGE}"),
        ("iceberg.metadata-number-range", "error",
         f"metadata-log[1].timestamp-ms is 10000000000000000, {RANGE}")]
    assert [s.timestamp_ms for s in t.metadata.snapshots] == [1795322738375, None, None, 1795322739800]


def test_snapshots_and_timeline_hold_the_bad_times_as_missing(tmp_path):
    t = _damaged_events(tmp_path)
    for df in (t.snapshots(), t.timeline()):
        assert list(df["snapshot_id"]) == EVENTS_IDS
        assert pd.api.types.is_datetime64_any_dtype(df["timestamp"]) and str(df["timestamp"].dt.tz) == "UTC"
        assert list(df["timestamp"].isna()) == [False, True, True, False]
        assert df["timestamp"][0] == pd.Timestamp("2026-11-22 04:45:38.375", tz="UTC")
        assert df["timestamp"][3] == pd.Timestamp("2026-11-22 04:45:39.800", tz="UTC")
    assert list(t.timeline()["live_rows"]) == [300000, 296907, 267215, 244122]


def test_health_dates_only_the_known_commits(tmp_path):
    h = _damaged_events(tmp_path).health(now=NOW)
    snaps = h.frames["snapshots"]
    assert [None if v is pd.NA else int(v) for v in snaps["timestamp_ms"]] == [1795322738375, None, None,
                                                                               1795322739800]
    # ages from the two known commits (2026-11-22 04:45:38.375 and :39.800), never from year 1653 or 318857
    assert h.metrics["oldest_snapshot_age_days"] == round((1795824000000 - 1795322738375) / 86_400_000, 3)
    assert h.metrics["newest_snapshot_age_days"] == round((1795824000000 - 1795322739800) / 86_400_000, 3)
    assert h.metrics["snapshots"] == 4
    # a snapshot of unknown time is never called past retention: of the two dated ones, the first (older than
    # the 5-day cutoff, not the current snapshot) is
    assert h.metrics["snapshots_past_retention"] == 1
    assert h.finding("health.snapshots-past-retention").message.startswith("1 of 4 snapshots are older than ")


def test_the_card_shows_the_unknown_times_blank(tmp_path):
    t = _damaged_events(tmp_path)
    bundle = t._repr_mimebundle_()
    text, html = bundle["text/plain"], bundle["text/html"]
    assert "Traceback" not in text and "Error" not in text.split("findings")[0]
    rows = [line.split() for line in text.splitlines() if line.startswith("    ") and line.split()[0] in "1234"]
    assert rows[:4] == [["1", "6372083600183000311", "2026-11-22", "04:45:38", "append", "300,000", "0"],
                        ["2", "3379575596702121728", "delete", "296,907", "3,093"],
                        ["3", "3714665768772348830", "delete", "267,215", "32,785"],
                        ["4", "15511898047522140", "2026-11-22", "04:45:39", "delete", "244,122", "55,878"]]
    assert text.count("iceberg.metadata-number-range") == 4
    assert "1653" not in html and "318857" not in html and "1970-01-01" not in html
    assert "snapshots and manifest bytes" in _health_svg(t) and "(2 undated commits left out)" in _health_svg(t)


def _health_svg(t) -> str:
    from puffin_explorer.display.table_charts import health_svg

    return health_svg(t.health(now=NOW, list_files=False))


def test_a_delta_commit_time_out_of_range_is_missing(fixtures, tmp_path):
    import shutil

    root = tmp_path / "d"
    shutil.copytree(fixtures / "engines/delta/kernel-rs-table-with-dv-small", root)
    log = root / "_delta_log" / f"{1:020d}.json"
    lines = log.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        if "commitInfo" in action:
            action["commitInfo"]["timestamp"] = 10 ** 16
            lines[i] = json.dumps(action)
    log.write_text("\n".join(lines) + "\n")
    versions = DeltaTable(str(root)).versions()
    assert list(versions["version"]) == [0, 1]
    assert list(versions["timestamp"].isna()) == [False, True]
