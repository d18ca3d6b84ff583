"""What reaches a notebook besides the output: no Python warning from the package or from matplotlib's
date ticks, on real tables whose commits are milliseconds, minutes or centuries apart, and on damaged
manifests (a ``content`` code that is no content gives a null, never INT64_MIN through a float cast)."""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path

import fastavro
import pytest

from puffin_explorer import Warehouse
from puffin_explorer.display.table_charts import health_svg

try:
    from _warehouse_fixtures import FIXTURES, ORDERS_CURRENT_METADATA, ORDERS_MANIFEST_LIST, copy_warehouse, edit_json
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (FIXTURES, ORDERS_CURRENT_METADATA, ORDERS_MANIFEST_LIST, copy_warehouse,
                                           edit_json)

pytestmark = pytest.mark.skipif(not (FIXTURES / "warehouse").is_dir(), reason="reference fixtures missing")

DATA_MANIFEST = "2e503939-dedb-4b87-a3ed-4de41fab2d1e-m0.avro"  # record 1 of orders' current manifest list
NOW = "2026-11-25T00:00:00Z"
#: The orders fixture's five commits, 2026-11-22 04:45:33.136 to 04:45:35.812 (UTC).
FIRST_MS = 1795322733136


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _rewrite(path: Path, change) -> None:
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema, codec = reader.writer_schema, reader.codec
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = list(reader)
    change(records)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, metadata=meta)
    path.write_bytes(buf.getvalue())


def _orders_with_commit_times(tmp_path: Path, times_ms: list[int]):
    shop = copy_warehouse(tmp_path) / "shop"

    def change(md):
        for snap, ms in zip(md["snapshots"], times_ms):
            snap["timestamp-ms"] = ms
    edit_json(shop / ORDERS_CURRENT_METADATA, change)
    return Warehouse(str(shop.parent)).table("shop.orders")


def _time_panel_labels(svg: str) -> list[str]:
    """The texts of the health chart's third panel: its x tick labels, offset and title."""
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    return texts[texts.index("bytes per partition") + 1:]


def test_the_fixture_commits_seconds_apart_get_second_ticks():
    t = Warehouse(str(FIXTURES / "warehouse")).table("shop.orders")
    assert t.snapshots().timestamp.iloc[0].value // 10**6 == FIRST_MS
    labels = _time_panel_labels(health_svg(t.health(now=NOW)))
    assert labels[:3] == ["34", "35", "2026-Nov-22 04:45"]
    assert "snapshots and manifest bytes" in labels


@pytest.mark.parametrize("step_ms, ticks", [
    (50_000, ["04:46", "04:47", "04:48", "04:49", "2026-Nov-22"]),        # 200 s: matplotlib used to warn
    (1_500_000, ["05:00", "05:30", "06:00", "06:30", "2026-Nov-22"]),     # 100 minutes: it warned too
    (0, ["04:45", "04:46", "2026-Nov-22", "1", "2"]),                      # one instant: a minute either side
])
def test_commits_minutes_apart_or_at_one_instant_draw_without_a_warning(tmp_path, step_ms, ticks):
    t = _orders_with_commit_times(tmp_path, [FIRST_MS + i * step_ms for i in range(5)])
    labels = _time_panel_labels(health_svg(t.health(now=NOW)))
    assert labels[:5] == ticks


def test_a_commit_time_before_1970_is_left_out_of_the_axis_and_said(tmp_path):
    t = _orders_with_commit_times(tmp_path, [-(10 ** 10)] + [FIRST_MS + i * 60_000 for i in range(1, 5)])
    labels = _time_panel_labels(health_svg(t.health(now=NOW)))
    assert labels[:4] == ["04:47", "04:48", "04:49", "2026-Nov-22"]
    assert "snapshots and manifest bytes" in labels and "(1 undated commit left out)" in labels  # two lines


def test_a_content_code_that_is_no_content_is_a_null_in_files(tmp_path):
    shop = copy_warehouse(tmp_path) / "shop"
    manifest = shop / "orders" / "metadata" / DATA_MANIFEST
    _rewrite(manifest, lambda rs: rs[1]["data_file"].__setitem__("content", 1000))
    _rewrite(shop / ORDERS_MANIFEST_LIST, lambda rs: rs[1].__setitem__("manifest_length", manifest.stat().st_size))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    assert [(f.code, f.message) for f in t.check()] == [
        ("iceberg.entry-type", f"{DATA_MANIFEST} entry 1: content is int 1000, not the spec's type; read as null")]
    files = t.files()
    assert str(files.content.dtype) == "Int64"
    assert files.content.isna().tolist() == [False] * 5 + [True] + [False] * 6
    assert files.content.dropna().tolist() == [0] * 7 + [1] * 4
    assert files.kind[5] == "content-None" and files.record_count[5] == 30185
    none = t.files_of_kind(["equality-deletes"])  # no such files: the same column type
    assert len(none) == 0 and str(none.content.dtype) == "Int64"
