"""The views of a Puffin file read over a real S3-compatible server: same content, range reads only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from puffin_explorer import PuffinFile
from puffin_explorer.display.hexview import HexView


pytestmark = pytest.mark.s3

RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def _without_location(text: str, location: str) -> str:
    return text.replace(location, "<loc>")


def test_views_over_s3_equal_the_local_views(s3_server):
    local_path = RESOURCES / "multi-dv.puffin"
    url = s3_server.upload(local_path, "display")
    remote = PuffinFile(url, storage_options=s3_server.storage_options)
    local = PuffinFile(local_path)
    assert _without_location(remote.to_text(), url) == _without_location(local.to_text(), str(local_path))
    assert _without_location(remote.to_html(), url) == _without_location(local.to_html(), str(local_path))
    dv_remote, dv_local = remote.blobs[2].decode(), local.blobs[2].decode()
    assert dv_remote.to_html() == dv_local.to_html()


def test_hex_view_over_s3_reads_only_its_windows(s3_server):
    url = s3_server.upload(RESOURCES / "multi-dv.puffin", "display-hex")
    pf = PuffinFile(url, storage_options=s3_server.storage_options, tail_size=1024)
    root = pf.regions(decode=False)
    with s3_server.record_requests() as calls:
        hv = HexView(pf.source, root)
    gets = [c for c in calls if c.operation == "GetObject"]
    assert sum(c.bytes_sent for c in gets) <= hv.bytes_shown
    assert len(gets) <= len(hv.windows)
    assert hv.bytes_shown < pf.size


def test_cli_html_report_of_an_s3_file(s3_server, tmp_path, monkeypatch):
    import json

    url = s3_server.upload(RESOURCES / "stats-theta.puffin", "display-cli")
    for key, value in {"AWS_ACCESS_KEY_ID": s3_server.key, "AWS_SECRET_ACCESS_KEY": s3_server.secret,
                       "AWS_ENDPOINT_URL": s3_server.endpoint_url, "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    from puffin_explorer.cli import main

    out = tmp_path / "report.html"
    assert main(["html", url, "-o", str(out)]) == 0  # credentials from the environment
    page = out.read_text(encoding="utf-8")
    assert re.search(r"blob 2: apache-datasketches-theta-v1", page)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(key)
    out.unlink()
    # html takes --storage-options like every other command (it used to ignore them)
    assert main(["html", url, "-o", str(out), "--storage-options", json.dumps(s3_server.storage_options)]) == 0
    page = out.read_text(encoding="utf-8")
    assert re.search(r"blob 2: apache-datasketches-theta-v1", page)
    assert "estimate 200,947.1" in page
