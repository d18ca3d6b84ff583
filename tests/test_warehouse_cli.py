"""The ``table`` subcommand: output on the fixture warehouse, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from puffin_explorer.cli import main

try:
    from _warehouse_fixtures import ORDERS_DV_PUFFIN, WAREHOUSE, copy_warehouse
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import ORDERS_DV_PUFFIN, WAREHOUSE, copy_warehouse


def test_summary(capsys):
    assert main(["table", str(WAREHOUSE), "--table", "shop.orders"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "table      shop.orders (format v3)"
    assert lines[2] == "location   /data/warehouse/shop/orders"
    assert lines[4] == "snapshots  5; current 6590999396394158857"
    assert lines[5].split() == ["data", "8", "files", "121,964", "rows"]
    assert lines[6].split() == ["dv", "4", "files", "27,924", "rows"]


def test_dvs_as_json_from_a_table_folder(capsys):
    assert main(["table", str(WAREHOUSE / "shop" / "events"), "dvs", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["content_offset"], r["content_size_in_bytes"], r["record_count"]) for r in rows] == [(4, 16161, 55878)]


def test_check_exit_codes(tmp_path, capsys):
    assert main(["table", str(WAREHOUSE / "shop/orders/metadata/v7.metadata.json"), "check"]) == 0
    assert capsys.readouterr().out.strip() == "0 findings, 0 errors"
    shop = copy_warehouse(tmp_path) / "shop"
    (shop / ORDERS_DV_PUFFIN).unlink()
    assert main(["table", str(shop.parent), "check", "--table", "shop.orders"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "1 finding, 1 error"
    assert out[0].startswith("error table.file-vanished @ ?: Puffin file ")


def test_bad_input_is_a_message_not_a_traceback(tmp_path):
    bad = tmp_path / "v1.metadata.json"
    bad.write_text('{"format-version": 2, "location": ')
    for argv, message in (
        ([str(tmp_path / "missing" / "v1.metadata.json")], "table: no such file: "),
        ([str(bad)], "not valid JSON table metadata"),
        ([str(WAREHOUSE)], "is a warehouse: pass --table NAME (one of: shop.events, shop.legacy, shop.orders)"),
        ([str(WAREHOUSE), "--table", "shop.nope"], "no table 'shop.nope'"),
    ):
        proc = subprocess.run([sys.executable, "-m", "puffin_explorer", "table", *argv],
                              capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and proc.stderr.startswith("puffin-explorer table: ")
        assert proc.stderr.count("\n") == 1
        assert "Traceback" not in proc.stderr


def test_table_subcommand_is_part_of_the_main_command(capsys):
    from puffin_explorer.cli import main as package_main

    assert package_main(["table", str(WAREHOUSE / "shop" / "legacy"), "deletes", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("kind,content,file_path,location,file_format,record_count,")
    assert out[1].startswith("position-deletes,1,/data/warehouse/shop/legacy/data/00000-37-")
