"""Random bytes and random corruptions never crash the Thrift reader, the layout or its views."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from puffin_explorer.parquet import ParquetLayout
from puffin_explorer.parquet.spec import SCHEMA
from puffin_explorer.parquet.thrift import CompactReader, ThriftError, TStruct

ORDERS_SMALL = ("warehouse/shop/orders/data/customer_id_bucket=0/"
                "00000-21-5bda5967-7808-4966-bb27-4f1a594d8228-00001.parquet")


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300),
       name=st.sampled_from(["FileMetaData", "PageHeader", "ColumnIndex", "OffsetIndex"]))
def test_thrift_reader_returns_a_struct_or_raises_thrift_error(data, name):
    try:
        ts = CompactReader(data, 0, SCHEMA).read_struct(name)
    except ThriftError as exc:
        assert 0 <= exc.offset <= len(data)
        return
    assert isinstance(ts, TStruct) and ts.end <= len(data)


FOOTER = 6850 - 8 - 1159  # the FileMetaData of ORDERS_SMALL starts here
# anywhere in the file, or (more often) inside the footer, the page indexes or the first pages
POSITIONS = st.one_of(st.integers(0, 6849), st.integers(FOOTER - 300, 6849), st.integers(0, 400))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(POSITIONS, st.integers(0, 255)), min_size=1, max_size=8),
       cut=st.one_of(st.none(), st.integers(0, 6850)))
def test_corrupted_copies_open_leniently(fixtures, edits, cut):
    data = bytearray((fixtures / ORDERS_SMALL).read_bytes())
    assert len(data) == 6850
    for pos, value in edits:
        data[pos] = value
    if cut is not None:
        del data[cut:]
    pl = ParquetLayout(bytes(data), max_workers=1)
    pl.to_text()
    pl.to_html()
    pl.pages()
    pl.column_chunks()
    pl.overlay([0, 1, 2, 10**6]).to_text()
    for f in pl.findings:
        assert f.offset is None or 0 <= f.offset <= len(data)
