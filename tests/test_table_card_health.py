"""The health section of a table card: the doctor's checks without the storage listing, and its charts,
exact values from the fixture warehouse (dated with a fixed ``now``)."""

from __future__ import annotations

import re

import pytest

from puffin_explorer import Warehouse
from puffin_explorer.display.registry import RenderOptions
from puffin_explorer.display.table_view import table_html, table_text

try:
    from _warehouse_fixtures import ORDERS_DELETE_MANIFEST, WAREHOUSE, copy_warehouse
except ImportError:  # pragma: no cover
    from tests._warehouse_fixtures import ORDERS_DELETE_MANIFEST, WAREHOUSE, copy_warehouse

NOW = "2026-11-25T00:00:00Z"


@pytest.fixture(scope="module")
def wh():
    return Warehouse(str(WAREHOUSE))


def test_checks_of_orders(wh):
    h = wh.table("shop.orders").health(now=NOW, list_files=False)
    assert not h.listed
    rows = h.checks()[["check", "status", "metric", "threshold", "source"]].values.tolist()
    assert rows == [
        ["small files", "warning", "8 of 8 data files", "below 384 MiB",
         "75% of the target (rewrite_data_files min-file-size-bytes default)"],
        ["deleted rows", "warning", "22.9% (27,924 of 121,964 rows)", "above 10%", "doctor default"],
        ["delete files per data file", "ok", "at most 1", "above 1", "doctor default"],
        ["clustering", "ok", "no sort order", "above 2", "doctor default"],
        ["snapshot retention", "ok", "0 of 5 snapshots past retention", "older than 5 days, keep 1", "default"],
        ["manifests", "ok", "4 of 4 below target", "8 MiB, merge from 100", "default"],
        ["metadata files", "info", "7 (7 tracked)", "keep 100, delete after commit off", "default"],
        ["statistics", "ok", "0 commits behind", "current snapshot", "doctor default"],
        ["orphan files", "not run", "not listed: run t.health()", "older than 2026-11-22 00:00:00.000",
         "3 days before now"],
    ]
    assert h.checks().codes.tolist()[:2] == [["health.small-files"], ["health.deleted-share"]]


def test_checks_follow_the_clock_and_the_listing(wh):
    t = wh.table("shop.events")
    later = t.health(now="2026-12-31T00:00:00Z")  # with the storage listing, a month later
    assert later.listed
    checks = later.checks().set_index("check")
    assert checks.loc["snapshot retention", "status"] == "warning"
    assert checks.loc["snapshot retention", "metric"] == "3 of 4 snapshots past retention"
    assert checks.loc["orphan files", ["status", "metric"]].tolist() == ["ok", "0 (0 B)"]
    assert checks.loc["statistics", ["status", "metric"]].tolist() == ["info", "0 commits behind"]


def test_card_shows_the_health_section_at_the_top(wh):
    t = wh.table("shop.orders")
    html = table_html(t, RenderOptions(now=NOW))
    head = html.index("</div></div>")  # end of the card's header
    health = html.index("<summary>Health ")
    assert head < health < html.index("no findings") if "no findings" in html else head < health
    assert health < html.index("Snapshot timeline")
    section = html[health:html.index("</details>", health)]
    assert '<span class="pe-badge pe-warning">warning</span>' in section
    assert "<td>small files</td>" in section and "22.9% (27,924 of 121,964 rows)" in section
    assert '<span class="pe-badge pe-muted">not run</span>' in section and "t.health()" in section
    svg = re.search(r"<svg.*?</svg>", section, re.S).group(0)
    for title in ("data files per size", "bytes per partition", "snapshots and manifest bytes"):
        assert title in svg, title
    assert "var(--pe-accent)" in svg and "var(--pe-warn)" in svg
    assert table_html(t, RenderOptions(now=NOW)) == html  # deterministic
    compact = table_html(t, RenderOptions(now=NOW, compact=True))
    assert "<summary>Health " in compact and "<svg" not in compact[compact.index("<summary>Health "):
                                                                      compact.index("Snapshot timeline")]
    text = table_text(t, RenderOptions(now=NOW))
    assert "health warning (no storage listing: orphan files: run t.health())" in text
    assert re.search(r"deleted rows +warning +22\.9% \(27,924 of 121,964 rows\) +above 10%", text)


def test_one_display_runs_the_doctor_once_and_a_big_table_says_to_run_it(monkeypatch):
    from puffin_explorer import health as model_module
    from puffin_explorer.iceberg import health as health_module

    runs = []
    real = health_module.table_health
    monkeypatch.setattr(health_module, "table_health", lambda *a, **k: runs.append(k["now"]) or real(*a, **k))
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    bundle = t._repr_mimebundle_()  # undated: the HTML and the text share one run
    assert len(runs) == 1 and "<summary>Health " in bundle["text/html"]
    assert "health warning (no storage listing" in bundle["text/plain"]
    assert t.summary()["data_files"] == 8
    monkeypatch.setattr(model_module, "ICEBERG_CARD_HEALTH_UP_TO", 7)
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    html, text = table_html(t, RenderOptions(now=NOW)), table_text(t, RenderOptions(now=NOW))
    assert len(runs) == 1  # above the card's limit: no doctor run
    note = "more than 7 data files, the most the card runs the doctor on: t.health() runs every check"
    assert "<details open><summary>Health<span class=\"pe-count\"> not run</span></summary>" in html and note in html
    assert f"health not run: {note}" in text
    assert t.health(now=NOW, list_files=False).status == "warning" and len(runs) == 2


def test_an_iceberg_card_runs_the_doctor_up_to_its_own_limit_and_a_delta_card_up_to_the_general_one(monkeypatch,
                                                                                                  fixtures):
    """An Iceberg card's doctor sums column metrics as it decodes the manifests (its memory grows with the files, not
    the columns): it runs up to ICEBERG_CARD_HEALTH_UP_TO data files; a Delta card up to CARD_HEALTH_UP_TO."""
    from puffin_explorer import health as model_module
    from puffin_explorer.delta import DeltaTable

    monkeypatch.setattr(model_module, "CARD_HEALTH_UP_TO", 7)  # shop.orders has 8 data files: not the Iceberg limit
    monkeypatch.setattr(model_module, "ICEBERG_CARD_HEALTH_UP_TO", 8)
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    assert t.card_health_up_to == 8
    html = table_html(t, RenderOptions(now=NOW))
    assert t.card_health(NOW).status == "warning" and "<summary>Health " in html and " not run</span>" not in html
    monkeypatch.setattr(model_module, "ICEBERG_CARD_HEALTH_UP_TO", 7)
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    assert t.card_health(NOW) is None
    assert ("health not run: more than 7 data files, the most the card runs the doctor on"
            in table_text(t, RenderOptions(now=NOW)))
    small = fixtures / "engines/delta/kernel-rs-table-with-dv-small"
    delta = DeltaTable(str(small))
    files = delta.totals()["data_files"]
    monkeypatch.setattr(model_module, "CARD_HEALTH_UP_TO", files)
    assert delta.card_health_up_to == files and delta.card_health(NOW) is not None
    monkeypatch.setattr(model_module, "CARD_HEALTH_UP_TO", files - 1)
    delta = DeltaTable(str(small))
    assert delta.card_health(NOW) is None


def test_the_partition_chart_says_when_it_holds_only_the_first_partitions_by_key(wh):
    """The doctor keeps the first partitions by key (every one is summed in its metrics): past them, the chart of
    the largest says it chose among those, not among all."""
    from puffin_explorer.display.table_charts import health_svg

    h = wh.table("shop.orders").health(now=NOW, list_files=False)
    assert len(h.frames["partitions"]) == h.metrics["partitions"] == 4
    assert "of the first" not in health_svg(h)
    h.metrics["partitions"] = 500_000
    assert "(top 4 of the first 4 by key)" in health_svg(h)


def test_damaged_table_shows_findings_before_health(tmp_path):
    root = copy_warehouse(tmp_path / "wh")
    manifest = root / "shop" / ORDERS_DELETE_MANIFEST
    data = manifest.read_bytes()
    manifest.write_bytes(data[: len(data) // 2])
    t = Warehouse(str(root)).table("shop.orders")
    html = table_html(t, RenderOptions(now=NOW))
    assert "Traceback" not in html
    assert "<summary>Health " in html
    assert html.index("Findings") < html.index("<summary>Health ")


def test_delta_card_health_rows():
    from puffin_explorer import DeltaTable
    from puffin_explorer.display.delta_view import table_html as delta_html

    try:
        from _warehouse_fixtures import FIXTURES
    except ImportError:  # pragma: no cover
        from tests._warehouse_fixtures import FIXTURES
    t = DeltaTable(str(FIXTURES / "engines" / "delta" / "delta-spark-table-with-dv-large"))
    rows = t.health(now=NOW, list_files=False).checks()[["check", "status", "metric", "threshold", "source"]]
    assert rows.values.tolist() == [
        ["small files", "warning", "22 of 22 data files", "below 768 MiB", "75% of the target"],
        ["deleted rows", "ok", "0.5% (11 of 2,004 rows)", "above 10%", "doctor default"],
        ["tombstones", "ok", "0 of 0 removed files past retention", "older than 7 days", "default"],
        ["checkpoints", "ok", "5 commits since the last checkpoint", "above 10", "default"],
        ["orphan files", "not run", "not listed: run t.health()", "older than 7 days", "default"],
    ]
    html = delta_html(t, RenderOptions(now=NOW))
    assert html.index("Delta table") < html.index("<summary>Health ") < html.index("<summary>Versions")
    assert "<td>checkpoints</td>" in html and "bytes per partition" in html
