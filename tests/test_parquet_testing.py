"""Files of apache/parquet-testing (resources/parquet-testing, provenance in its README)."""

from __future__ import annotations

import pytest

from puffin_explorer import ParquetLayout

from conftest import RESOURCES

PT = RESOURCES / "parquet-testing"


@pytest.mark.parametrize("name, struct, copies", [
    ("sort_columns.parquet", "ColumnChunk", [(108, 91), (269, 59), (432, 93), (595, 59)]),  # Arrow C++
    ("null_list.parquet", "ColumnChunk", [(33, 47)]),  # parquet-rs
    ("alltypes_plain.parquet", "ColumnChunk", [(77, 32), (133, 35), (215, 41), (303, 42)]),  # Impala
    ("ARROW-GH-43605.parquet", "ColumnMetaData", [(2722, 31)]),  # Polars
])
def test_metadata_copy_at_file_offset_is_a_region_not_a_gap(name, struct, copies):
    pl = ParquetLayout(str(PT / name))
    assert list(pl.findings) == []
    root = pl.regions()
    assert root.find("unclaimed") == []
    found = root.find("column-meta-copy")
    offsets = [c.chunk.get("file_offset") for rg in pl.row_group_infos for c in rg.chunks]
    assert [r.offset for r in found] == offsets
    assert [(r.offset, r.length) for r in found][: len(copies)] == copies
    assert {r.value for r in found} == {f"{struct} at file_offset"}
    # the copy's fields are regions too, and it sits inside its row group
    assert found[0].children and found[0].children[0].kind == "thrift-field"
    rg0 = root.find("row-group")[0]
    assert found[0] in rg0.children


def test_copy_that_does_not_decode_as_the_same_column_stays_a_gap():
    data = bytearray((PT / "null_list.parquet").read_bytes())
    data[33:80] = b"\x00" * 47  # zero the copy at file_offset 33
    pl = ParquetLayout(bytes(data))
    assert [(f.code, f.offset, f.length) for f in pl.findings] == [("parquet.gap", 33, 47)]
    assert pl.regions().find("column-meta-copy") == []


def test_corrupted_schema_type_is_a_finding():
    pl = ParquetLayout(str(PT / "PARQUET-1481.parquet"))
    f = [(f.code, f.severity.value, f.offset, f.length) for f in pl.findings]
    assert f == [("parquet.schema-type", "error", 306, 2), ("parquet.gap", "warning", 209, 80)]
    assert pl.findings[0].message == ("schema element 1 (Handle): physical type -7 is not one of BOOLEAN, "
                                      "INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY")
    with pytest.raises(Exception, match="parquet.schema-type"):
        ParquetLayout(str(PT / "PARQUET-1481.parquet"), strict=True)
