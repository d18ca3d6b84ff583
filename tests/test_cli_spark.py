"""The ``spark`` subcommand's messages and output on a real local Spark session with the Iceberg runtime."""

from __future__ import annotations

import pytest

from conftest import FIXTURES

pytestmark = pytest.mark.spark


def test_a_moved_table_is_read_where_it_lies(spark, capsys):
    from puffin_explorer.cli import main

    moved = FIXTURES / "warehouse" / "shop" / "events" / "metadata" / "v6.metadata.json"  # written at /data/...
    assert main(["spark", "positions", str(moved)]) == 0
    assert capsys.readouterr().out.strip()


def test_a_missing_file_names_the_file(spark, capsys, tmp_path):
    import shutil

    from puffin_explorer.cli import main

    table = tmp_path / "events"
    shutil.copytree(FIXTURES / "warehouse" / "shop" / "events", table)
    (manifest_list,) = [p for p in (table / "metadata").glob("snap-15511898047522140-*.avro")]
    manifest_list.unlink()
    assert main(["spark", "positions", str(table / "metadata" / "v6.metadata.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("puffin-explorer spark: ") and manifest_list.name in err
    assert "Traceback" not in err and len(err.splitlines()) <= 2


def test_a_catalog_the_session_lacks_is_a_usage_error(spark, capsys):
    from puffin_explorer.cli import main

    assert main(["spark", "check", "nocatalog.shop.orders"]) == 2
    assert capsys.readouterr().err == (
        "puffin-explorer spark: no catalog 'nocatalog' in this Spark session (for nocatalog.shop.orders): pass "
        "--warehouse FOLDER --catalog nocatalog, or name the table NAMESPACE.TABLE with --warehouse\n")


def test_check_output_fits_the_width(spark, fixture_warehouse, capsys, monkeypatch):
    from puffin_explorer.cli import main

    monkeypatch.setenv("COLUMNS", "100")
    assert main(["spark", "check", "shop.orders", "--warehouse", str(fixture_warehouse), "--catalog", "fxw"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[-1] == "4 deletion vectors checked, 0 with differences"
    assert max(map(len, lines)) <= 100 and "\r" not in out
    assert sum(line.count(" True ") for line in lines) == 8  # ok and crc_ok, one of each per data file
