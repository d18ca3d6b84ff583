"""The one command-line package: shared options anywhere, one exit-code map, one-line errors, no tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

try:
    from _warehouse_fixtures import ORDERS_DV_PUFFIN, WAREHOUSE, copy_warehouse
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import ORDERS_DV_PUFFIN, WAREHOUSE, copy_warehouse

RES = ROOT / "resources"
EVENTS_META = WAREHOUSE / "shop" / "events" / "metadata" / "v6.metadata.json"


def run(*args, env=None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "puffin_explorer", *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=full_env)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return proc


def one_error_line(proc: subprocess.CompletedProcess, command: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"puffin-explorer {command}: "), proc.stderr
    return proc.stderr


# ------------------------------------------------------------------ the problems the command line had
def test_table_view_after_the_options_as_the_readme_writes_it(tmp_path):
    ok = run("table", WAREHOUSE, "--table", "shop.orders", "check")
    assert ok.returncode == 0 and ok.stdout == "0 findings, 0 errors\n"
    shop = copy_warehouse(tmp_path) / "shop"
    (shop / ORDERS_DV_PUFFIN).unlink()
    bad = run("table", shop.parent, "--table", "shop.orders", "check")
    assert bad.returncode == 1 and bad.stdout.splitlines()[-1] == "1 finding, 1 error"
    strict = one_error_line(run("table", shop.parent, "--table", "shop.orders", "check", "--strict"), "table")
    assert "table.file-vanished: Puffin file " in strict and " is gone: its DVs are not checked" in strict
    wrong = run("table", WAREHOUSE, "--table", "shop.orders", "chekc")
    assert wrong.returncode == 2 and "invalid choice: 'chekc'" in wrong.stderr
    extra = run("table", WAREHOUSE, "--table", "shop.orders", "check", "dvs")
    assert extra.returncode == 2 and "error: unrecognized arguments: dvs\n" in extra.stderr


def test_dv_range_is_checked_against_the_file_size():
    err = one_error_line(run("dv", RES / "multi-dv.puffin", "--offset", "4", "--length", "99999999999"), "dv")
    assert "ends at byte 100,000,000,003, past the end of" in err and "(62,393 bytes)" in err


def test_validate_exits_2_when_a_file_cannot_be_read(tmp_path):
    p = run("validate", RES / "broken-dv-crc.puffin", tmp_path / "missing.puffin", RES / "multi-dv.puffin")
    assert p.returncode == 2
    assert p.stdout.splitlines()[0].endswith("broken-dv-crc.puffin: INVALID (1 error, 0 other findings)")
    assert f"{tmp_path / 'missing.puffin'}: UNREADABLE: no such file" in p.stdout
    assert p.stdout.splitlines()[-1].endswith("multi-dv.puffin: valid (0 errors, 0 other findings)")
    folder = run("validate", RES)
    assert folder.returncode == 2 and "is a folder, not a file" in folder.stdout
    doc = json.loads(run("validate", "--json", tmp_path / "missing.puffin").stdout)
    assert doc["readable"] is False and doc["valid"] is False and "no such file" in doc["error"]


def test_each_command_says_what_a_file_of_another_kind_is(tmp_path):
    err = one_error_line(run("inspect", RES / "spark-orders-data.parquet"), "inspect")
    assert "is a Parquet file, not a Puffin file: use puffin-explorer parquet " in err
    err = one_error_line(run("inspect", EVENTS_META), "inspect")
    assert "is a JSON file, not a Puffin file: use puffin-explorer table " in err
    err = one_error_line(run("parquet", RES / "multi-dv.puffin"), "parquet")
    assert "is a Puffin file, not a Parquet file: use puffin-explorer inspect " in err
    empty = tmp_path / "empty.puffin"
    empty.write_bytes(b"")
    p = run("inspect", empty)
    assert p.returncode == 1
    assert p.stdout.splitlines()[0] == f"{empty} is empty (0 bytes): not a Puffin file, or a write that never finished"
    assert "error file.too-small @ 0" in p.stdout
    assert run("parquet", RES / "spark-orders-data.parquet").returncode == 0


def test_table_on_a_folder_without_tables_and_on_a_file():
    err = one_error_line(run("table", "resources/parquet-testing"), "table")
    assert err == ("puffin-explorer table: resources/parquet-testing/ holds no Iceberg table (no metadata/ folder in "
                   "it or in the folders below it): pass a table folder, a *.metadata.json, or a warehouse folder\n")
    err = one_error_line(run("table", "resources/multi-dv.puffin"), "table")
    assert err == ("puffin-explorer table: resources/multi-dv.puffin is a Puffin file, not an Iceberg table: "
                   "use puffin-explorer inspect resources/multi-dv.puffin\n")


def test_inspect_prints_the_deleted_positions_capped_with_the_count():
    p = run("inspect", RES / "iceberg-java-dv-shapes.puffin")
    assert "      deletedRows: [0, 2, 4, 1000, 65535, 65536, 70000, 1048576]  (8 rows)" in p.stdout
    assert ("      deletedRows: [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, …]  "
            "(299,900 rows; first 10 shown, 'dv --blob 1' lists all)") in p.stdout
    p = run("inspect", RES / "iceberg-java-dv-shapes.puffin", "--positions", "2", "--format", "json")
    blobs = json.loads(p.stdout)["blobs"]
    assert [(b["positions"], b["deletedRows"]) for b in blobs] == [
        ([0, 2], 8), ([100, 101], 299_900), ([1, 3], 60_000), ([5, 4294967303], 4)]


# ------------------------------------------------------------------ shared options
def test_shared_options_go_before_or_after_the_subcommand():
    before = run("--format", "json", "inspect", RES / "trino-theta-v1.puffin")
    after = run("inspect", RES / "trino-theta-v1.puffin", "--format", "json")
    assert before.stdout == after.stdout and json.loads(before.stdout)["blobs"][0]["ndv_estimate"] == 5.0
    assert run("--json", "inspect", RES / "trino-theta-v1.puffin").stdout == before.stdout
    strict = one_error_line(run("inspect", RES / "broken-dv-crc.puffin", "--strict"), "inspect")
    assert "dv.crc" in strict
    assert run("--strict", "validate", RES / "broken-dv-crc.puffin").returncode == 2
    assert run("validate", RES / "broken-dv-crc.puffin").returncode == 1


def test_relocate_before_and_after_the_subcommand_is_one_list(tmp_path):
    fixtures_root = str(WAREHOUSE)
    p = run("--relocate", "/elsewhere=/nowhere", "table", EVENTS_META, "dvs", "--format", "json",
            "--relocate", f"/data/warehouse={fixtures_root}")
    rows = json.loads(p.stdout)
    assert p.returncode == 0
    assert [(r["content_offset"], r["content_size_in_bytes"], r["record_count"]) for r in rows] == [(4, 16161, 55878)]
    assert rows[0]["location"].startswith(fixtures_root + "/shop/events/data/")
    err = one_error_line(run("table", EVENTS_META, "--relocate", "nope"), "table")
    assert "--relocate 'nope' is not OLD=NEW" in err


@pytest.mark.parametrize("value,message", [
    ("{nope", "--storage-options is not JSON (Expecting property name enclosed in double quotes at character 1)"),
    ("[1]", "--storage-options must be a JSON object ({...}), not list"),
])
def test_storage_options_are_parsed_one_way_for_every_command(value, message):
    for argv in (["--storage-options", value, "inspect", RES / "multi-dv.puffin"],
                 ["html", RES / "multi-dv.puffin", "--storage-options", value],
                 ["table", WAREHOUSE, "--storage-options", value],
                 ["parquet", RES / "spark-orders-data.parquet", "--storage-options", value],
                 ["spark", "check", "shop.orders", "--storage-options", value]):
        assert message in one_error_line(run(*argv), str(argv[0] if argv[0] != "--storage-options" else argv[2]))


def test_formats(tmp_path):
    csv = run("validate", "--format", "csv", RES / "broken-dv-crc.puffin", RES / "multi-dv.puffin").stdout.splitlines()
    assert csv[0] == "file,valid,severity,code,offset,message"
    assert csv[1].startswith(f"{RES / 'broken-dv-crc.puffin'},False,error,dv.crc,")
    assert csv[2] == f"{RES / 'multi-dv.puffin'},True,,,,"
    blobs = run("inspect", RES / "multi-dv.puffin", "--csv").stdout.splitlines()
    assert blobs[0].startswith("index,type,fields,snapshot-id,sequence-number,offset,length,compression-codec,")
    assert len(blobs) == 1 + 4
    doc = json.loads(run("dv", RES / "iceberg-java-dv-shapes.puffin", "--blob", "0", "--json").stdout)
    assert doc["positions"] == [0, 2, 4, 1000, 65535, 65536, 70000, 1048576] and doc["cardinality"] == 8
    regions = json.loads(run("hex", RES / "multi-dv.puffin", "--offset", "0", "--length", "8", "--json").stdout)
    assert regions["regions"][0]["name"] == "magic" and regions["end"] == 8
    err = one_error_line(run("html", RES / "multi-dv.puffin", "-o", tmp_path / "r.html", "--json"), "html")
    assert "--format json does not apply" in err


# ------------------------------------------------------------------ errors, exit codes, output hygiene
def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    from puffin_explorer import cli
    from puffin_explorer.cli import inspect as inspect_command

    def broken(*args, **kwargs):
        raise RuntimeError("something no one expected")

    monkeypatch.setattr(inspect_command, "_text", broken)
    assert cli.main(["inspect", str(RES / "multi-dv.puffin")]) == 2
    err = capsys.readouterr().err
    assert err == ("puffin-explorer inspect: unexpected error in inspect: RuntimeError: something no one expected "
                   "(rerun with --debug for the traceback)\n")
    assert cli.main(["inspect", str(RES / "multi-dv.puffin"), "--debug"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "RuntimeError: something no one expected" in err

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(inspect_command, "_text", interrupted)
    assert cli.main(["inspect", str(RES / "multi-dv.puffin")]) == 130
    assert capsys.readouterr().err == "puffin-explorer inspect: interrupted\n"


def test_usage_and_help_exit_codes():
    assert run().returncode == 2
    assert run("--help").returncode == 0
    help_text = run("spark", "--help")
    assert help_text.returncode == 0 and "``" not in help_text.stdout
    assert "puffin-explorer spark check shop.orders --warehouse ./demo-warehouse" in help_text.stdout
    assert run("inspect", RES / "multi-dv.puffin", "--bogus").returncode == 2


def test_text_output_fits_the_terminal_and_has_no_progress_lines():
    p = run("table", WAREHOUSE / "shop" / "orders", "files", env={"COLUMNS": "100"})
    assert p.returncode == 0 and "\r" not in p.stdout + p.stderr and p.stderr == ""
    lines = p.stdout.splitlines()
    assert max(map(len, lines)) <= 100
    assert any("…" in line for line in lines)  # long paths are cut in the middle, not wrapped per character
    wide = run("table", WAREHOUSE / "shop" / "orders", "files", "--format", "csv")
    assert "…" not in wide.stdout  # CSV keeps every value whole


def test_python_dash_m_and_the_console_script_are_the_same_command():
    script = Path(sys.executable).with_name("puffin-explorer")
    if not script.exists():
        pytest.skip("no puffin-explorer console script beside this interpreter")
    a = subprocess.run([str(script), "inspect", str(RES / "multi-dv.puffin")], capture_output=True, text=True,
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert a.returncode == 0 and a.stdout == run("inspect", RES / "multi-dv.puffin").stdout


def test_storage_errors_are_one_line_with_the_fix():
    opts = '{"anon": true, "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}'
    for command in ("inspect", "table", "hex", "parquet"):
        err = one_error_line(run(command, "s3://no-bucket/x.puffin", "--storage-options", opts), command)
        assert "cannot connect to http://127.0.0.1:9 for s3://no-bucket/x.puffin" in err
        assert "check the endpoint URL" in err
    err = one_error_line(run("inspect", "resources/"), "inspect")
    assert err.endswith("resources/ is a folder, not a Puffin file: pass a file "
                        "(for a table folder: puffin-explorer table resources/)\n")


def test_ctrl_c_while_waiting_on_a_server_exits_130_with_one_line():
    """A server that accepts and never answers; SIGINT to the waiting command."""
    import signal
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/x.puffin"
    # as from a terminal: a run started in the background (make test under `&`, some CI runners) ignores
    # SIGINT, and a Python started with SIGINT ignored never raises KeyboardInterrupt
    proc = subprocess.Popen([sys.executable, "-m", "puffin_explorer", "inspect", url], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not held and time.monotonic() < deadline:  # wait until the command is waiting on the server
            time.sleep(0.1)
        assert held, "the command never connected"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        server.close()
        for conn in held:
            conn.close()
    assert proc.returncode == 130 and out == "" and err == "puffin-explorer inspect: interrupted\n"
