"""``puffin-explorer table`` on a Delta table folder: the views that apply (summary, files, dvs, check) with the
numbers of the fixtures' README, --snapshot as the Delta version, and a usage error for Iceberg's views."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from puffin_explorer.cli import main

try:
    from _warehouse_fixtures import copy_fixture_table as _copy
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import copy_fixture_table as _copy

SMALL = "engines/delta/kernel-rs-table-with-dv-small"
LARGE = "engines/delta/delta-spark-table-with-dv-large"
#: The large table per version (its README): data files, live rows, sum of DV cardinalities.
LARGE_VERSIONS = {0: (20, 2000, 0), 1: (20, 1995, 5), 2: (21, 1997, 5), 3: (21, 1991, 11), 4: (22, 1993, 11)}
CUT_DV_FILE = "deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin"


def test_summary_of_the_latest_version(fixtures, capsys):
    folder = fixtures / LARGE
    assert main(["table", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "table      delta-spark-table-with-dv-large (Delta, reader v3, writer v7; features deletionVectors)"
    assert lines[1] == f"location   {folder}"
    assert lines[2] == "version    4; latest 4"
    assert lines[3].split() == ["data", "files", "22", "files", "2,004", "rows"]
    assert lines[4].split() == ["DVs", "8", "DVs", "11", "rows", "deleted"]
    assert lines[5].split() == ["live", "rows", "1,993", "rows"]
    assert lines[6].split() == ["DV", "files", "2"]
    assert len(lines) == 7


def test_one_file_and_one_dv_agree_in_number(fixtures, capsys):
    assert main(["table", str(fixtures / SMALL), "summary", "--snapshot", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "version    0; latest 1"
    assert lines[3].split() == ["data", "files", "1", "file", "10", "rows"]
    assert lines[4].split() == ["DVs", "0", "DVs", "0", "rows", "deleted"]
    assert main(["table", str(fixtures / SMALL)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[4].split() == ["DVs", "1", "DV", "2", "rows", "deleted"]
    assert lines[5].split() == ["live", "rows", "8", "rows"]


@pytest.mark.parametrize("version", sorted(LARGE_VERSIONS))
def test_snapshot_is_the_delta_version(fixtures, capsys, version):
    assert main(["table", str(fixtures / LARGE), "--snapshot", str(version), "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["version"], row["latest_version"], row["format"]) == (version, 4, "delta")
    assert (row["data_files"], row["live_rows"], row["deleted_rows"]) == LARGE_VERSIONS[version]
    assert row["records"] == row["live_rows"] + row["deleted_rows"]
    assert row["notes"] == ""


def test_files_as_csv_at_two_versions(fixtures, capsys):
    assert main(["table", str(fixtures / LARGE), "files", "--format", "csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(df) == 22 and df.num_records.sum() == 2004
    assert int(df.has_dv.sum()) == 8 and df.dv_cardinality.sum() == 11
    assert main(["table", str(fixtures / LARGE), "files", "--format", "csv", "--snapshot", "0"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(df) == 20 and df.num_records.sum() == 2000 and int(df.has_dv.sum()) == 0


def test_dvs_as_json(fixtures, capsys):
    folder = fixtures / SMALL
    assert main(["table", str(folder), "dvs", "--format", "json"]) == 0
    [dv] = json.loads(capsys.readouterr().out)
    assert (dv["storage_type"], dv["path_or_inline_dv"], dv["offset"], dv["size_in_bytes"], dv["cardinality"],
            dv["num_records"], dv["version"]) == ("u", "vBn[lx{q8@P<9BNH/isA", 1, 36, 2, 10, 1)
    assert dv["dv_file"] == str(folder / "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin")
    assert main(["table", str(folder), "dvs", "--format", "json", "--snapshot", "0"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_check_exit_codes(fixtures, tmp_path, capsys):
    assert main(["table", str(fixtures / LARGE), "check"]) == 0
    assert capsys.readouterr().out.strip() == "0 findings, 0 errors"
    root = _copy(fixtures, LARGE, tmp_path)
    dvf = root / CUT_DV_FILE
    dvf.write_bytes(dvf.read_bytes()[:100])  # the DVs at 1 and 43 stay whole; those at 87..215 are cut
    assert main(["table", str(root), "check"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "9 findings, 9 errors"
    assert lines[0] == (f"error delta.dv-file-truncated @ 87: bytes [87, 100) do not hold a DV: its size field says "
                        f"36 bytes, but the file has 5 left [{dvf}]")
    assert main(["table", str(root), "check", "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert sorted((r["code"], r["offset"]) for r in rows) == [
        ("delta.dv-file-truncated", 87), ("delta.dv-offset-mismatch", 87), ("delta.dv-offset-mismatch", 131),
        ("delta.dv-offset-mismatch", 173), ("delta.dv-offset-mismatch", 215), ("delta.dv-range", 87),
        ("delta.dv-range", 131), ("delta.dv-range", 173), ("delta.dv-range", 215)]
    assert {r["file"] for r in rows} == {str(dvf)} and {r["severity"] for r in rows} == {"error"}
    # at version 1 the cut file is not yet referenced (its DVs came with version 3): one note, no error
    assert main(["table", str(root), "check", "--snapshot", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"info delta.dv-file-unreferenced @ ?: {CUT_DV_FILE} holds DVs no live add action of version 1 references "
        f"[{dvf}]", "1 finding, 0 errors"]


def test_a_missing_dv_file_is_one_finding(fixtures, tmp_path, capsys):
    root = _copy(fixtures, SMALL, tmp_path)
    (root / "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin").unlink()
    assert main(["table", str(root), "check"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "1 finding, 1 error" and lines[0].startswith("error table.file-vanished")


@pytest.mark.parametrize("view", ["snapshots", "deletes", "stats", "puffin"])
def test_iceberg_views_are_a_usage_error_naming_the_delta_views(fixtures, capsys, view):
    folder = fixtures / SMALL
    assert main(["table", str(folder), view]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"puffin-explorer table: {folder} is a Delta table: view '{view}' is for Iceberg tables; "
                            "the views of a Delta table are summary, files, dvs, check\n")


def test_a_version_the_log_does_not_have(fixtures, capsys):
    folder = fixtures / LARGE
    for version in ("9", "-1"):
        assert main(["table", str(folder), "files", "--snapshot", version]) == 2
        captured = capsys.readouterr()
        assert captured.err == f"puffin-explorer table: {folder}: the log has no version {version} (latest 4)\n"
