"""Which manifest decoder runs, said where it matters: show_versions(), --version --verbose, and one info finding
on a table whose manifests were decoded the slow way."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from puffin_explorer import show_versions
from puffin_explorer.iceberg.manifest_decoder import decoder
from puffin_explorer.versions import DEPENDENCIES, versions

ROOT = Path(__file__).resolve().parent.parent
WAREHOUSE = ROOT / "resources" / "fixtures" / "warehouse"

# A table read in a fresh process; the first argument says whether the Avro extension package can be imported
# (as if it were not installed: an import of a module set to None fails), and DuckDB's own extension directory is
# an empty HOME's.  The thresholds are lowered so the fixture's small manifests count as a big table's.
_READ = """
import json, sys
if sys.argv[1] == "without":
    sys.modules["duckdb_extension_avro"] = None
from puffin_explorer.iceberg import manifest_chunks, manifest_decoder
manifest_chunks.DUCKDB_FROM_BYTES = 0
manifest_decoder.SLOW_FINDING_FROM_BYTES = 0
from puffin_explorer import Warehouse
t = Warehouse(sys.argv[2]).table("shop.orders")
health = t.health(list_files=False, now="2026-11-28T00:00:00Z")
card = t._repr_mimebundle_()["text/html"]
print(json.dumps({"decoder": manifest_decoder.decoder().name,
                  "health": [[f.code, f.severity.value, f.message] for f in health.findings],
                  "card": card.count("<td class=\\"pe-mono\\">iceberg.manifests-decoded-slowly</td>"),
                  "deleted_rows": health.metrics["deleted_rows"], "manifests": len(t.manifests())}))
"""


def _read(extension: str, home: Path) -> dict:
    env = {**os.environ, "HOME": str(home)}
    env.pop("DUCKDB_EXTENSION_DIRECTORY", None)
    out = subprocess.run([sys.executable, "-c", _READ, extension, str(WAREHOUSE)], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_without_the_avro_extension_the_table_says_once_that_its_manifests_were_decoded_slowly(tmp_path):
    slow = _read("without", tmp_path)
    assert slow["decoder"] == "fastavro"
    found = [f for f in slow["health"] if f[0] == "iceberg.manifests-decoded-slowly"]
    assert len(found) == 1 and found[0][1] == "info"
    message = found[0][2]
    assert message.startswith("4 manifests (")  # the current snapshot's 2 data and 2 delete manifests
    assert "the duckdb-extension-avro package is not installed" in message
    assert f'pip install "duckdb-extension-avro=={version("duckdb")}"' in message  # the remedy, for this DuckDB
    assert "INSTALL avro" in message
    assert slow["card"] == 1  # the card's findings table lists it once
    assert slow["deleted_rows"] == 27_924  # the answers are the fast path's


def test_with_the_extension_no_slow_finding(tmp_path):
    fast = _read("with", tmp_path)
    assert fast["decoder"] == "duckdb-avro"
    assert not [f for f in fast["health"] if f[0] == "iceberg.manifests-decoded-slowly"]
    assert fast["card"] == 0
    assert fast["deleted_rows"] == 27_924


def test_show_versions_names_every_dependency_and_the_fast_paths():
    buf = io.StringIO()
    show_versions(file=buf)
    text = buf.getvalue()
    lines = dict(line.split(" : ", 1) for line in text.splitlines() if " : " in line)
    for dist in ("numpy", "pandas", "pyarrow", "duckdb", "fastavro", "pyroaring"):
        assert lines[dist.ljust(max(map(len, DEPENDENCIES)))] == version(dist)
    assert lines["manifest decoder".ljust(max(map(len, DEPENDENCIES)))] == \
        "DuckDB read_avro (the duckdb-extension-avro package)"
    assert "Arrow memory pool" in text and "S3 client" in text
    assert decoder().fast
    assert versions()["dependencies"]["duckdb-extension-avro"] == version("duckdb") == version("duckdb-extension-avro")


def test_the_command_prints_the_same_facts_as_json():
    out = subprocess.run([sys.executable, "-m", "puffin_explorer", "--version", "--verbose", "--json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    assert facts["dependencies"]["duckdb"] == version("duckdb")
    assert facts["fast_paths"]["manifest decoder"] == "DuckDB read_avro (the duckdb-extension-avro package)"
    plain = subprocess.run([sys.executable, "-m", "puffin_explorer", "--version"], capture_output=True,
                           text=True, cwd=ROOT, timeout=120)
    assert plain.returncode == 0 and plain.stdout.startswith("puffin-explorer ")


@pytest.mark.parametrize("name", ["duckdb", "duckdb-extension-avro"])
def test_the_extension_and_duckdb_that_pip_resolved_load_together(name):
    from puffin_explorer.iceberg.manifest_decoder import _packaged_extension

    path, why = _packaged_extension(version("duckdb"))
    assert path is not None and why == "", why
    assert f"v{version(name)}" in path
