"""Counts and their nouns agree in the messages read off real fixtures: one file, two files (``_text.plural``)."""

from __future__ import annotations

from pathlib import Path

from puffin_explorer.cli import main
from puffin_explorer.delta.table import DeltaTable
from puffin_explorer.iceberg.warehouse import Warehouse

try:
    from _warehouse_fixtures import WAREHOUSE
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import WAREHOUSE

NOW = "2026-11-28T00:00:00Z"
RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def _metric(health, check: str) -> str:
    return health.checks().set_index("check").loc[check, "metric"]


def test_the_doctor_counts_one_data_file_and_eight(fixtures):
    wh = Warehouse(str(WAREHOUSE))
    events, orders = (wh.table(n).health(now=NOW) for n in ("shop.events", "shop.orders"))
    assert _metric(events, "small files") == "1 of 1 data file"
    assert _metric(orders, "small files") == "8 of 8 data files"
    assert _metric(events, "snapshot retention") == "3 of 4 snapshots past retention"
    # one Puffin delete file: "merge 1 delete file", not "1 delete files"
    assert orders.finding("health.deleted-share").message == (
        "22.9% of the rows are deleted (27,924 of 121,964); readers still read them and merge 1 delete file")


def test_the_delta_doctor_counts_one_deletion_vector(fixtures):
    small = DeltaTable(str(fixtures / "engines/delta/kernel-rs-table-with-dv-small")).health(now=NOW)
    assert small.finding("health.deleted-share").message == (
        "20.0% of the rows are deleted (2 of 10); readers still read them and apply 1 deletion vector")
    assert _metric(small, "small files") == "1 of 1 data file"
    large = DeltaTable(str(fixtures / "engines/delta/delta-spark-table-with-dv-large")).health(now=NOW)
    assert _metric(large, "small files") == "22 of 22 data files"


def test_validate_counts_one_error_and_zero_findings(capsys):
    assert main(["validate", str(RESOURCES / "broken-dv-crc.puffin"), str(RESOURCES / "multi-dv.puffin")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("broken-dv-crc.puffin: INVALID (1 error, 0 other findings)")
    assert lines[-1].endswith("multi-dv.puffin: valid (0 errors, 0 other findings)")


def test_the_table_card_text_counts_one_data_file_and_eight():
    wh = Warehouse(str(WAREHOUSE))
    events = wh.table("shop.events")._repr_mimebundle_()["text/plain"]
    orders = wh.table("shop.orders")._repr_mimebundle_()["text/plain"]
    assert "; 1 data file, 1 DV, 0 position-delete files, 0 equality-delete files; health " in events
    assert "; 8 data files, 4 DVs, 0 position-delete files, 0 equality-delete files; health " in orders


def test_verbs_agree_with_one_file():
    """"1 file (4,438 B) is held only by them": the verb follows the count as the noun does."""
    legacy = Warehouse(str(WAREHOUSE)).table("shop.legacy").health(now=NOW)
    assert legacy.finding("health.snapshots-past-retention").message.endswith(
        "; 1 file (4,438 B) is held only by them")
    orders = Warehouse(str(WAREHOUSE)).table("shop.orders").health(now=NOW)
    assert " 8 of 8 data files (100%) are below " in " " + orders.finding("health.small-files").message
