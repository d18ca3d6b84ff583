"""The Thrift compact-protocol reader, on hand-encoded bytes and on a real page header."""

from __future__ import annotations

import struct

import pytest

from puffin_explorer.parquet.spec import SCHEMA
from puffin_explorer.parquet.thrift import CompactReader, ThriftError, read_struct


def test_short_form_field_header_and_zigzag_i32():
    ts = read_struct(bytes([0x15, 0x0A, 0x00]))  # field 1, i32, zigzag(5) = 10
    assert ts.fields == {"field_1": 5}
    assert ts.spans == {"field_1": (0, 2)}
    assert (ts.offset, ts.end, ts.length) == (0, 3, 3)


def test_negative_numbers_are_zigzag_varints():
    assert read_struct(bytes([0x15, 0x01, 0x00]))["field_1"] == -1
    # i64 -300 -> zigzag 599 = 0x257 -> varint d7 04
    assert read_struct(bytes([0x16, 0xD7, 0x04, 0x00]))["field_1"] == -300
    # i8 0xff is -1
    assert read_struct(bytes([0x13, 0xFF, 0x00]))["field_1"] == -1


def test_long_form_field_id_and_deltas_from_it():
    # field 20 (delta would be > 15): type byte 0x05 then zigzag i16 id 40; then field 21 by delta 1
    ts = read_struct(bytes([0x05, 0x28, 0x02, 0x15, 0x04, 0x00]))
    assert ts.fields == {"field_20": 1, "field_21": 2}
    assert ts.spans == {"field_20": (0, 3), "field_21": (3, 5)}


def test_booleans_live_in_the_field_header():
    ts = read_struct(bytes([0x11, 0x12, 0x00]))
    assert ts.fields == {"field_1": True, "field_2": False}


def test_binary_and_string_by_schema():
    data = bytes([0x18, 0x03]) + b"abc" + bytes([0x00])
    assert read_struct(data)["field_1"] == b"abc"
    schema = {"T": {1: ("name", "string")}}
    assert read_struct(data, "T", schema=schema)["name"] == "abc"


def test_double_is_eight_bytes_little_endian():
    ts = read_struct(bytes([0x17]) + struct.pack("<d", 1.5) + bytes([0x00]))
    assert ts["field_1"] == 1.5


def test_lists_short_and_long_size_and_bool_elements():
    assert read_struct(bytes([0x19, 0x35, 0x02, 0x04, 0x06, 0x00]))["field_1"] == [1, 2, 3]
    long_list = bytes([0x19, 0xF5, 20]) + bytes([2 * i for i in range(20)]) + bytes([0x00])
    assert read_struct(long_list)["field_1"] == list(range(20))
    assert read_struct(bytes([0x19, 0x21, 0x01, 0x02, 0x00]))["field_1"] == [True, False]


def test_nested_struct_and_map():
    ts = read_struct(bytes([0x1C, 0x15, 0x0A, 0x00, 0x00]))
    inner = ts["field_1"]
    assert inner.fields == {"field_1": 5}
    assert (inner.offset, inner.end) == (1, 4)
    m = read_struct(bytes([0x1B, 0x01, 0x58, 0x02, 0x01]) + b"x" + bytes([0x00]))
    assert m["field_1"] == {1: b"x"}


def test_offsets_are_absolute_with_a_base():
    ts = read_struct(bytes([0x15, 0x0A, 0x00]), base=100)
    assert ts.spans["field_1"] == (100, 102)
    assert (ts.offset, ts.end) == (100, 103)


@pytest.mark.parametrize("data, offset, truncated, message", [
    (bytes([0x15, 0x80]), 1, True, "varint runs past the end"),
    (bytes([0x15, 0x02]), 2, True, "byte runs past the end"),
    (bytes([0x1D]), 0, False, "field 1 has unknown wire type 13"),
    (bytes([0x19, 0xF5, 0xFF, 0xFF, 0xFF, 0x0F]), 1, True, "list of 33554431 elements"),
    (bytes([0x18, 0x10, 0x61]), 1, True, "binary of 16 bytes runs past the end"),
    (bytes([0x15]) + bytes([0xFF] * 11), 1, False, "varint longer than 10 bytes"),
    (bytes([0x19, 0x21, 0x07, 0x00]), 2, False, "boolean list element 7"),
    (bytes([0x1C] * 70), 65, False, "structs nested deeper than 64"),
    # lists of lists (found by tests/fuzz): bounded like structs, not by the interpreter's stack
    (bytes([0x19] * 5000), 65, False, "lists nested deeper than 64"),
    (bytes([0x1B, 0x01, 0xBB] + [0x01, 0xBB] * 3000), None, None, "nested deeper than 64"),
])
def test_malformed_bytes_raise_with_the_offset(data, offset, truncated, message):
    with pytest.raises(ThriftError) as err:
        read_struct(data, base=0)
    if offset is not None:
        assert err.value.offset == offset
        assert err.value.truncated is truncated
    assert message in err.value.message


def test_a_real_spark_page_header(fixtures):
    """The first page header of a Spark-written data file (bytes 4..33)."""
    path = fixtures / "warehouse/shop/orders/data/customer_id_bucket=0/" \
        "00000-10-c9a0f6d8-bc79-45b4-884c-1caf32abe7eb-0-00002.parquet"
    data = path.read_bytes()[4:4 + 64]
    assert data[:29].hex() == "15001580c41315b8ba0615d7c8a6f6081c15c0b80215001508150800" + "00"
    h = CompactReader(data, 4, SCHEMA).read_struct("PageHeader")
    assert (h.offset, h.end) == (4, 33)
    assert h["type"] == 0  # DATA_PAGE
    assert h["uncompressed_page_size"] == 160000
    assert h["compressed_page_size"] == 52892
    assert h["crc"] == -1197789740
    dph = h["data_page_header"]
    assert dph.type_name == "DataPageHeader"
    assert dph.fields == {"num_values": 20000, "encoding": 0, "definition_level_encoding": 4,
                          "repetition_level_encoding": 4}
    assert h.spans["data_page_header"] == (20, 32)
