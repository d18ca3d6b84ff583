"""Tables written by PyIceberg (format v1 and v2) through a real SQL catalog (SQLite), read back."""

from __future__ import annotations

import pytest

from puffin_explorer.iceberg import Table, Warehouse

from _parquet_samples import skip_without_writer_options

pytest.importorskip("sqlalchemy")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    skip_without_writer_options("PyIceberg 0.12 passes to every Parquet file it writes (its pyarrow extra "
                                "wants pyarrow 18)", store_decimal_as_integer=True)
    root = tmp_path_factory.mktemp("pyiceberg")
    cat = SqlCatalog("local", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    cat.create_namespace("ns")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    for version in ("1", "2"):
        t = cat.create_table(f"ns.t_v{version}", schema=schema, properties={"format-version": version})
        t.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema))
        t.append(pa.table({"id": [4, 5], "name": ["d", "e"]}, schema=schema))
        t.delete("id = 2")  # copy-on-write: the first file is replaced by a 2-row file
    return cat


def test_catalog_as_warehouse(catalog):
    wh = Warehouse(catalog)
    assert wh.table_names() == ["ns.t_v1", "ns.t_v2"]
    assert wh.namespaces() == ["ns"]


@pytest.mark.parametrize("version", [1, 2])
def test_pyiceberg_tables(catalog, version):
    t = Warehouse(catalog).table(f"ns.t_v{version}")
    assert t.metadata.format_version == version
    assert t.findings == []  # written where it is: nothing to relocate
    assert t.snapshots().operation.tolist() == ["append", "append", "overwrite"]
    files = t.files()
    assert files.kind.tolist() == ["data", "data"]
    assert sorted(files.record_count) == [2, 2]
    assert sorted(b["id"] for b in files.lower_bounds) == [1, 4]
    assert sorted(b["name"] for b in files.upper_bounds) == ["c", "e"]
    everything = t.files(include_deleted=True)
    assert sorted(everything.status) == ["added", "added", "deleted"]
    if version == 1:  # v1 manifests have no sequence numbers: all read as 0
        assert set(everything.sequence_number) == {0}
        assert t.snapshots().sequence_number.tolist() == [0, 0, 0]
    else:
        assert t.snapshots().sequence_number.tolist() == [1, 2, 3]
        assert sorted(files.sequence_number) == [2, 3]
    assert t.delete_files().empty
    assert t.check() == []


def test_folder_without_version_hint_uses_highest_numbered_metadata(catalog):
    t = catalog.load_table("ns.t_v2")
    root = t.metadata.location
    opened = Table.from_folder(root)
    assert opened.metadata_location == t.metadata_location.replace("file://", "")
    assert opened.metadata.current_snapshot_id == t.metadata.current_snapshot_id
