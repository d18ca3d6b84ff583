"""The ``puffin-explorer`` command run as a real subprocess: output, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from make_samples import EXPECTED


def run(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "puffin_explorer", *map(str, args)],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return proc


def test_inspect_trino_dv(resources):
    p = run("inspect", resources / "trino-deletion-vector-v1.puffin")
    assert p.returncode == 0
    assert "created-by: Trino version testversion" in p.stdout
    assert "[0] deletion-vector-v1  fields=[2147483645]  snapshot-id=-1  sequence-number=-1" in p.stdout
    assert "offset=4  length=46  codec=none" in p.stdout
    assert "deletedRows: [0, 2, 4]  (3 rows)" in p.stdout
    assert "findings: 0 (valid)" in p.stdout


def test_inspect_theta_json(resources):
    p = run("inspect", resources / "trino-theta-v1.puffin", "--json")
    doc = json.loads(p.stdout)
    assert [b["ndv_estimate"] for b in doc["blobs"]] == [5.0, 5.0, 5.0]
    assert [b["properties"]["ndv"] for b in doc["blobs"]] == ["5", "5", "5"]
    assert doc["valid"] is True and doc["findings"] == []


def test_inspect_all_lists_regions(resources):
    p = run("inspect", resources / "iceberg-java-dv-shapes.puffin", "--all")
    assert p.returncode == 0
    assert "run container key=0" in p.stdout and "bitmap container key=0" in p.stdout
    assert "CRC-32 (big-endian)" in p.stdout


def test_validate_exit_codes(resources):
    good = run("validate", resources / "multi-dv.puffin", resources / "stats-theta.puffin")
    assert good.returncode == 0 and good.stdout.count(": valid") == 2
    bad = run("validate", resources / "multi-dv.puffin", resources / "broken-dv-crc.puffin")
    assert bad.returncode == 1
    assert "broken-dv-crc.puffin: INVALID" in bad.stdout and "dv.crc @ " in bad.stdout


@pytest.mark.parametrize("name", sorted(n for n, code in EXPECTED.items() if code))
def test_validate_every_broken_sample_cleanly(resources, name):
    p = run("validate", "--json", resources / name)
    doc = json.loads(p.stdout)
    assert EXPECTED[name] in [f["code"] for f in doc["findings"]]
    # warnings alone keep a file valid
    assert p.returncode == (0 if doc["valid"] else 1)


def test_dv_positions(resources):
    p = run("dv", resources / "iceberg-java-dv-shapes.puffin", "--blob", "0", "--csv")
    assert p.stdout.split() == ["pos", "0", "2", "4", "1000", "65535", "65536", "70000", "1048576"]
    p = run("dv", resources / "iceberg-java-dv-shapes.puffin", "--blob", "1")
    assert "299,900 deleted rows" in p.stdout and "100..299999  (299,900 rows)" in p.stdout
    p = run("dv", resources / "iceberg-java-dv-shapes.puffin", "--offset", "175", "--length", "16432")
    assert p.returncode == 0 and "60,000 deleted rows" in p.stdout


@pytest.mark.parametrize("args,message", [
    (["inspect", "/no/such/file.puffin"], "no such file"),
    (["dv", "RES/trino-theta-v1.puffin"], "holds no deletion-vector-v1 blob"),
    (["dv", "RES/multi-dv.puffin", "--blob", "9"], "no blob 9"),
    (["dv", "RES/multi-dv.puffin", "--offset", "4"], "--offset and --length go together"),
    (["dv", "RES/multi-dv.puffin", "--offset", "0", "--length", "20"], "DV magic"),
    (["--storage-options", "{nope", "inspect", "RES/multi-dv.puffin"], "not JSON"),
])
def test_errors_are_one_clean_line(resources, args, message):
    args = [a.replace("RES", str(resources)) for a in args]
    p = run(*args)
    if p.returncode == 1:  # a lenient read reports the problem as an error finding instead
        assert message in p.stdout
    else:
        assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1


def test_usage_error_exit_code():
    p = run("dv")
    assert p.returncode == 2 and "usage:" in p.stderr
