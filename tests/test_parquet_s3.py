"""Parquet layouts over a real S3-compatible server: range reads only, same tree as locally."""

from __future__ import annotations

import pytest

from puffin_explorer import read_dv
from puffin_explorer.parquet import ParquetLayout


pytestmark = pytest.mark.s3

EVENTS = "warehouse/shop/events/data/00000-26-2016bb11-7592-4e1e-b79e-22c17a19c45a-0-00001.parquet"
EVENTS_DV = "warehouse/shop/events/data/00000-32-436b1e66-7bea-4a37-be34-5e251e777eaa-00001-deletes.puffin"


def test_layout_and_overlay_over_s3(s3_server, fixtures):
    url = s3_server.upload(fixtures / EVENTS, "parquet-layout")
    dv_url = s3_server.upload(fixtures / EVENTS_DV, "parquet-layout")
    opts = s3_server.storage_options
    with s3_server.record_requests() as wire:
        pl = ParquetLayout(url, storage_options=opts)
    gets = [r for r in wire if r.operation == "GetObject"]
    # what crossed the wire is what the reader counted: under 1% of a 10.9 MB file
    assert sum(r.bytes_sent for r in gets) == pl.bytes_read < pl.size // 100
    assert len(gets) == pl.source.read_count
    assert all(r.content_range is not None for r in gets)  # every GET a range GET
    assert gets[0].content_range == f"bytes {pl.size - 65536}-{pl.size - 1}/{pl.size}"
    local = ParquetLayout(fixtures / EVENTS)
    assert pl.findings == [] and pl.root.to_records()[1:] == local.root.to_records()[1:]
    assert pl.pages().equals(local.pages())

    ov = pl.overlay(read_dv(dv_url, offset=4, length=16161, storage_options=opts))
    assert ov.deleted == 55_878
    assert list(ov.pages[ov.pages.column == "event_id"].deleted[7:9]) == [10_103, 20_000]


def test_truncated_file_over_s3(s3_server, fixtures):
    data = (fixtures / EVENTS).read_bytes()[:400_000]
    url = s3_server.put_bytes("parquet-layout/cut.parquet", data)
    pl = ParquetLayout(url, storage_options=s3_server.storage_options)
    assert [(f.code, f.offset) for f in pl.findings] == [("parquet.magic", 399_996),
                                                        ("parquet.recovered", 4)]
    # event_id's 15 pages and kind's 16 chain from byte 4; payload's first page is cut
    assert len(pl.pages()) == 31
