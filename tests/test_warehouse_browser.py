"""The ipywidgets warehouse browser, driven from Python the way a click would drive it."""

from __future__ import annotations

import pandas as pd
import pytest

from puffin_explorer.iceberg import Warehouse
from puffin_explorer.widgets import table_views as views

try:
    from _warehouse_fixtures import (ORDERS_DV_PUFFIN, ORDERS_SNAPSHOT, WAREHOUSE, copy_warehouse,
                                     rewrite_orders_delete_manifest)
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (ORDERS_DV_PUFFIN, ORDERS_SNAPSHOT, WAREHOUSE, copy_warehouse,
                                           rewrite_orders_delete_manifest)

FIRST_DELETE = 5121291212189297242
BUCKET1 = "customer_id_bucket=1/00000-10-c9a0f6d8-bc79-45b4-884c-1caf32abe7eb-0-00003.parquet"


@pytest.fixture
def browser():
    pytest.importorskip("ipywidgets")
    return Warehouse(str(WAREHOUSE)).browse()


def labels(select) -> list[str]:
    return [label for label, _ in select.options]


def test_opens_on_the_first_table_and_its_current_snapshot(browser):
    assert browser.namespace.options == ("shop",)
    assert browser.table.options == ("shop.events", "shop.legacy", "shop.orders")
    assert browser.table.value == "shop.events"
    assert browser.snapshot.value == 15511898047522140
    assert len(browser.snapshot.options) == 4
    assert labels(browser.file) == [
        "[data] 00000-26-2016bb11-7592-4e1e-b79e-22c17a19c45a-0-00001.parquet (300,000 rows)",
        "[dv] 00000-32-436b1e66-7bea-4a37-be34-5e251e777eaa-00001-deletes.puffin @4 -> "
        "00000-26-2016bb11-7592-4e1e-b79e-22c17a19c45a-0-00001.parquet (55,878 rows)",
        "[stats] 15511898047522140-1fc050c2-967d-453d-80a4-4f5f4960324e.stats",
    ]
    assert "shop.events: 4 snapshots" in browser.timeline.value
    assert "<svg" in browser.chart.value


def test_snapshot_timeline_labels(browser):
    browser.select(table="shop.orders")
    assert browser.snapshot.value == ORDERS_SNAPSHOT
    first = labels(browser.snapshot)[0]  # newest first
    assert " · overwrite · +4 data files · +4 DVs · -4 DVs · 27,924 deleted rows added · 27,924 deleted rows in total · " \
        "6590999396394158857" in first
    assert labels(browser.snapshot)[-1].endswith(" · append · +4 data files · 4894008605646771791")


def test_select_dv_shows_the_dv_and_its_puffin_file(browser):
    browser.select(table="shop.orders", kind="dv")
    assert [lab.split(" @")[1].split(" ")[0] for lab in labels(browser.file)] == ["4", "8236", "16468", "24700"]
    browser.select(file="@8236 ")
    html = browser.detail.value
    assert "at offset 8,236, 8,232 bytes · manifest record_count 7,105" in html
    assert f"Puffin file /data/warehouse/shop/{ORDERS_DV_PUFFIN}</h4><p>34,239 bytes · 4 blobs" in html


def test_select_data_file_shows_its_deletions(browser):
    browser.select(table="shop.orders", kind="data", file=BUCKET1)
    html = browser.detail.value
    assert "<p>30,185 rows · <b>7,105 deleted</b> (23.5%) · 23,080 live</p>" in html
    assert "deleted positions (runs)" in html
    bounds = html[html.index("column bounds"):]
    assert "<td>order_date</td>\n      <td>2025-01-01</td>\n      <td>2025-12-31</td>" in bounds
    assert "<td>status</td>" in bounds
    # an earlier snapshot: only the first DELETE's 296 rows of this file are gone
    browser.select(snapshot_id=FIRST_DELETE, kind="data", file=BUCKET1)
    assert "<p>30,185 rows · <b>296 deleted</b> (1.0%) · 29,889 live</p>" in browser.detail.value
    browser.select(kind="dv")
    assert len(browser.file.options) == 4
    assert "(296 rows)" in labels(browser.file)[1]


def test_stats_file_and_filter(browser):
    browser.select(table="shop.orders", kind="stats")
    assert len(browser.file.options) == 1
    browser.file.value = browser.file.options[0][1]
    assert ("Puffin file /data/warehouse/shop/orders/metadata/6590999396394158857-92be345f-60f4-4aca-92b0-"
            "3d2dd0ad9bb8.stats</h4><p>101,827 bytes · 5 blobs") in browser.detail.value
    browser.select(kind="all")
    browser.search.value = "bucket=2"
    assert len(browser.file.options) == 2
    assert all("[data]" in lab for lab in labels(browser.file))
    assert browser.detail.value == "<p><i>2 files; select one</i></p>"


def test_v2_position_delete_file_contents(browser):
    browser.select(table="shop.legacy", kind="position-deletes")
    browser.file.value = browser.file.options[0][1]
    assert "position-deletes file /data/warehouse/shop/legacy/data/00000-37-" in browser.detail.value
    assert "<p>2,000 rows</p>" in browser.detail.value
    browser.select(kind="data")
    browser.file.value = browser.file.options[0][1]
    assert "<p>20,000 rows · <b>2,000 deleted</b> (10.0%) · 18,000 live</p>" in browser.detail.value


def test_per_file_chart_and_table(browser):
    browser.select(table="shop.orders")
    assert "<svg" in browser.chart.value
    assert "per data file" in browser.per_file.value
    per_file = Warehouse(str(WAREHOUSE)).table("shop.orders").deleted_rows_per_file()
    assert sorted(per_file.deleted_rows) == [0, 0, 0, 0, 6889, 6953, 6977, 7105]
    fig = views.deleted_rows_figure(None, per_file=per_file)
    heights = [round(p.get_height()) for p in fig.axes[0].patches]
    assert sorted(heights) == [0, 0, 0, 0, 6889, 6953, 6977, 7105]
    shares = [p.get_height() for p in fig.axes[1].patches]
    assert shares == sorted(shares, reverse=True)  # files ordered by share deleted, the compaction candidates first
    assert round(shares[0], 2) == round(100 * 7105 / 30185, 2)


def test_strings_from_files_are_escaped(tmp_path):
    pytest.importorskip("ipywidgets")
    shop = copy_warehouse(tmp_path) / "shop"
    evil = "/data/warehouse/shop/orders/data/<script>alert(1)</script>.parquet"

    def change(records):
        records[0]["data_file"]["referenced_data_file"] = evil

    rewrite_orders_delete_manifest(shop, change)
    b = Warehouse(str(shop.parent)).browse().select(table="shop.orders", kind="dv")
    b.file.value = b.file.options[0][1]
    assert "<script>" not in b.detail.value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in b.detail.value


def test_missing_puffin_file_is_shown_not_raised(tmp_path):
    pytest.importorskip("ipywidgets")
    shop = copy_warehouse(tmp_path) / "shop"
    (shop / ORDERS_DV_PUFFIN).unlink()
    b = Warehouse(str(shop.parent)).browse().select(table="shop.orders", kind="dv")
    b.file.value = b.file.options[0][1]
    assert "<b>cannot read the DV</b>: table.file-vanished: Puffin file " in b.detail.value
    assert "of snapshot 6590999396394158857 (metadata v7.metadata.json) is gone" in b.detail.value
    assert "<b>cannot open /data/warehouse/shop/" in b.detail.value
    b.select(kind="data", file=BUCKET1)  # the data file's DV lives in the Puffin file that is gone
    assert "<b>cannot show " in b.detail.value and "table.file-vanished: Puffin file " in b.detail.value


def test_rich_views_are_used_when_present():
    df = pd.DataFrame({"a": ["<b>x</b>"]})
    assert views.rich_html(df) == df._repr_html_()
    assert views.rich_html(object()) is None
    assert "&lt;b&gt;x&lt;/b&gt;" in views.frame_html(df)


def test_per_file_table_orders_compaction_candidates_first(browser):
    browser.select(table="shop.orders")
    html = browser.per_file.value
    first = html.index("customer_id_bucket=1/00000-10-")
    assert first < html.index("customer_id_bucket=3/00000-10-") < html.index("customer_id_bucket=0/00000-21-")
    assert "<td>23.5%</td>" in html and "<td>0.0%</td>" in html


def test_chart_bins_many_files():
    import numpy as np

    n = 5000
    rng = np.random.default_rng(7)
    rows = rng.integers(100, 1000, n)
    deleted = (rows * rng.random(n)).astype(int)
    per_file = pd.DataFrame({"record_count": rows, "deleted_rows": deleted, "deleted_share": deleted / rows})
    fig = views.deleted_rows_figure(None, per_file=per_file)
    left, right = fig.axes
    assert len(left.patches) == 40 and len(right.patches) == 20  # bins, not one bar per file
    assert sum(p.get_height() for p in right.patches) == n
    assert len(views.figure_svg(fig)) < 200_000


def test_long_file_lists_are_capped():
    pytest.importorskip("ipywidgets")
    from puffin_explorer.widgets.browser import WarehouseBrowser

    b = WarehouseBrowser(Warehouse(str(WAREHOUSE)), max_files=5).select(table="shop.orders")
    assert len(b.file.options) == 5
    assert b.detail.value == "<p><i>13 files (the first 5 are listed: filter to narrow); select one</i></p>"
    b.search.value = "00000-21-"
    assert len(b.file.options) == 5  # 4 new data files + the Puffin file's 4 DVs
    b.kind.value = "dv"
    assert len(b.file.options) == 4


def test_doctor_rows_and_the_selected_tables_health():
    pytest.importorskip("ipywidgets")
    b = Warehouse(str(WAREHOUSE)).browse(now="2026-11-25T00:00:00Z")
    doctor = b.doctor.value
    assert "doctor: 3 tables, 2 with warnings or errors (no storage listing" in doctor
    rows = b.doctor_frame
    assert rows[["table", "status", "findings", "small_files"]].values.tolist() == [
        ["shop.events", "warning", 1, 1], ["shop.legacy", "ok", 0, 1], ["shop.orders", "warning", 2, 8]]
    assert "<td>shop.orders</td>\n      <td>warning</td>\n      <td>2</td>" in doctor and "<td>22.9%</td>" in doctor
    assert "health.deleted-share" in b.table_health.value and "rewrite_position_delete_files" not in doctor
    b.select(table="shop.orders")
    assert "health.small-files" in b.table_health.value
    assert "CALL spark_catalog.system.rewrite_data_files(table =&gt; &#x27;shop.orders&#x27;, options =&gt; " \
           "map(&#x27;min-input-files&#x27;, &#x27;2&#x27;" in b.table_health.value
    b.list_storage.value = True  # the full doctor: the storage listing and its orphan check
    assert "health.small-files" in b.table_health.value
    static = b.static_html()
    assert static.index("pe-warehouse") < static.index("doctor: 3 tables") < static.index("pe-table-card")
    assert "<summary>Health " in static


def test_static_view_dates_the_selected_card_as_the_doctor_rows():
    """One ``now`` for the whole static view: the card's retention count is the doctor row's."""
    pytest.importorskip("ipywidgets")
    b = Warehouse(str(WAREHOUSE)).browse(now="2030-01-01T00:00:00Z").select(table="shop.orders")
    row = b.doctor_frame.set_index("table").loc["shop.orders"]
    assert (row["snapshots_past_retention"], row["snapshots"]) == (4, 5)
    assert "4 of 5 snapshots past retention" in b.static_html()


def test_refresh_moves_to_what_writers_committed_since(tmp_path):
    """The refresh button: a table opened at v5, then a writer's v6 and v7 land; refresh shows v7's snapshot."""
    pytest.importorskip("ipywidgets")
    root = copy_warehouse(tmp_path)
    meta = root / "shop" / "orders" / "metadata"
    later = {name: (meta / name).read_bytes() for name in ("v6.metadata.json", "v7.metadata.json")}
    for name in later:
        (meta / name).unlink()
    (meta / "version-hint.text").write_text("5")
    b = Warehouse(str(root)).browse()
    b.select(table="shop.orders", kind="dv")
    assert b.snapshot.value == 4843015790835191333 and len(b.snapshot.options) == 4
    assert "v5.metadata.json" in b.status.value
    for name, data in later.items():  # the writer commits
        (meta / name).write_bytes(data)
    (meta / "version-hint.text").write_text("7")
    b.refresh_button.click()
    assert (b.table.value, b.kind.value) == ("shop.orders", "dv")
    assert b.snapshot.value == ORDERS_SNAPSHOT and len(b.snapshot.options) == 5
    assert "v7.metadata.json" in b.status.value and "v5.metadata.json" not in b.status.value
    assert f"{ORDERS_SNAPSHOT}" in b.static_html()
