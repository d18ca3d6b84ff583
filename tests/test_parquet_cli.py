"""The ``parquet`` subcommand, run through the package's command-line entry point."""

from __future__ import annotations

import json

from puffin_explorer.cli import main

EVENTS = "warehouse/shop/events/data/00000-26-2016bb11-7592-4e1e-b79e-22c17a19c45a-0-00001.parquet"
EVENTS_DV = "warehouse/shop/events/data/00000-32-436b1e66-7bea-4a37-be34-5e251e777eaa-00001-deletes.puffin"


def test_layout_tables_and_overlay(fixtures, capsys):
    rc = main(["parquet", str(fixtures / EVENTS), "--row-groups", "--chunks",
               "--dv", str(fixtures / EVENTS_DV), "--dv-offset", "4", "--dv-length", "16161",
               "--column", "event_id"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "10,929,219 bytes · 1 row group · 300,000 rows · 3 columns · 52 pages" in out
    assert "column chunk payload" in out and "findings: none" in out
    assert "row groups:" in out and "column chunks:" in out
    assert "55,878 of 300,000 rows deleted (18.6%)" in out
    assert "1 of 15 data pages fully deleted" in out


def test_json_is_valid_and_complete(fixtures, capsys):
    rc = main(["parquet", str(fixtures / EVENTS), "--json", "--pages"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert doc["num_rows"] == 300_000 and doc["findings"] == []
    assert len(doc["pages"]) == 52
    assert doc["pages"][15]["page_type"] == "DICTIONARY_PAGE"
    assert doc["pages"][15]["first_row_index"] is None


def test_broken_and_missing_files_exit_without_traceback(fixtures, tmp_path, capsys):
    cut = tmp_path / "cut.parquet"
    cut.write_bytes((fixtures / EVENTS).read_bytes()[:50_000])
    assert main(["parquet", str(cut)]) == 1
    out = capsys.readouterr().out
    assert "error parquet.magic @ 49996" in out and "recovered pages" in out
    assert main(["parquet", str(cut), "--strict"]) == 2
    assert "parquet.magic" in capsys.readouterr().err
    assert main(["parquet", str(tmp_path / "missing.parquet")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["parquet", str(fixtures / EVENTS), "--dv", "x.puffin"]) == 2
    assert "--dv needs --dv-offset and --dv-length" in capsys.readouterr().err


def test_footer_only_and_all_headers(fixtures, capsys):
    assert main(["parquet", str(fixtures / EVENTS), "--footer-only"]) == 0
    assert "read 65,540 bytes in 2 requests" in capsys.readouterr().out
    assert main(["parquet", str(fixtures / EVENTS), "--all-headers"]) == 0
    assert "52 pages" in capsys.readouterr().out
