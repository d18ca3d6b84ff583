"""Values no writer produces, in copies of real tables: integers past their spec type in a manifest list or a
manifest, and paths with NUL or other control characters in a manifest, a manifest list or the metadata.

Each case copies a fixture table (the Spark-written warehouse, the DuckDB-written v3 table), rewrites one
file with fastavro (or edits the metadata JSON), and runs what a user runs -- ``check()``,
``commit_deletes()``, ``files()``, ``dvs()``, ``delete_debt()``, the card, ``health()`` and the ``table``
command line -- asserting exact findings and that nothing raises.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import fastavro
import pytest

from puffin_explorer import Warehouse
from puffin_explorer.cli import main
from puffin_explorer.errors import SourceError
from puffin_explorer.iceberg.table import Table
from puffin_explorer.io import FileIO

try:
    from _warehouse_fixtures import (FIXTURES, ORDERS_CURRENT_METADATA, ORDERS_MANIFEST_LIST, copy_warehouse,
                                     edit_json)
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import (FIXTURES, ORDERS_CURRENT_METADATA, ORDERS_MANIFEST_LIST, copy_warehouse,
                                           edit_json)

pytestmark = pytest.mark.skipif(not (FIXTURES / "warehouse").is_dir(), reason="reference fixtures missing")

ML_NAME = Path(ORDERS_MANIFEST_LIST).name
DATA_MANIFEST = "2e503939-dedb-4b87-a3ed-4de41fab2d1e-m0.avro"  # record 1 of the current manifest list
DUCK_MANIFEST = "058cef03-36db-4450-a30b-6f8107dc3221-m0.avro"  # the DuckDB table's data manifest: 1 file


def rewrite(path: Path, change, widen: tuple[str, ...] = ()) -> None:
    """Rewrite an Avro file with fastavro, its schema's int fields named in ``widen`` made longs (so a value
    past an int can be written, as a damaged writer would)."""
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema, codec = reader.writer_schema, reader.codec
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = list(reader)

    def walk(t):
        if isinstance(t, dict):
            for f in t.get("fields", []):
                if f.get("name") in widen:
                    typ = f.get("type")
                    f["type"] = "long" if typ == "int" else ["long" if x == "int" else x for x in typ] \
                        if isinstance(typ, list) else typ
                walk(f.get("type"))
        elif isinstance(t, list):
            for x in t:
                walk(x)

    walk(schema)
    change(records)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, metadata=meta)
    path.write_bytes(buf.getvalue())


def everything(t: Table, name: str, root: str, cli_table: list[str]) -> list:
    """Every user path over the table, none raising; ``check()``'s findings."""
    found = t.check()
    assert t.commit_deletes().findings is not None
    files, dvs = t.files(), t.dvs()
    t.delete_debt()
    bundle = t._repr_mimebundle_()
    assert "Traceback" not in bundle["text/html"] and "Traceback" not in bundle["text/plain"]
    t.health(list_files=True)
    t.puffin_files()
    t.statistics_files()
    for view in ("check", "files", "dvs", "deletes", "puffin", "summary"):
        assert main(["table", root, *cli_table, view]) in (0, 1), view
    return [found, files, dvs]


# ---------------------------------------------------------------------------- integers past their type
@pytest.mark.parametrize("value", [2 ** 53 + 1, 10 ** 12, -(2 ** 63)])
def test_a_partition_spec_id_past_an_int_in_a_manifest_list(tmp_path, value, capsys):
    shop = copy_warehouse(tmp_path) / "shop"
    rewrite(shop / ORDERS_MANIFEST_LIST, lambda rs: rs[1].__setitem__("partition_spec_id", value),
            widen=("partition_spec_id",))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    found, files, dvs = everything(t, "shop.orders", str(shop.parent), ["--table", "shop.orders"])
    loc = str(shop / ORDERS_MANIFEST_LIST)
    message = (f"{ML_NAME} record 1: partition_spec_id is {value:,}, outside the range of an int; read as absent")
    assert [(f.code, f.message, f.file) for f in found] == [("iceberg.manifest-number-range", message, loc)]
    # the value is absent; every file is still listed with the fixture's values
    assert len(files) == 12 and files.kind.value_counts().to_dict() == {"data": 8, "dv": 4}
    from_it = files.manifest_path.str.endswith(DATA_MANIFEST)
    assert from_it.sum() == 4 and files.spec_id[from_it].isna().all() and (files.spec_id[~from_it] == 0).all()
    assert len(dvs) == 4 and t.summary()["live_rows"] == 94_040
    assert "iceberg.manifest-number-range" in [f.code for f in t.card_findings()]
    assert main(["table", str(shop.parent), "--table", "shop.orders", "check"]) == 1
    assert message in capsys.readouterr().out


def test_an_entry_number_past_its_type_in_a_manifest(tmp_path):
    shop = copy_warehouse(tmp_path) / "shop"
    manifest = shop / "orders" / "metadata" / DATA_MANIFEST

    def change(rs):
        rs[2]["data_file"]["sort_order_id"] = 2 ** 31
        rs[3]["data_file"]["sort_order_id"] = -(2 ** 63)

    rewrite(manifest, change, widen=("sort_order_id",))
    length = manifest.stat().st_size
    rewrite(shop / ORDERS_MANIFEST_LIST, lambda rs: rs[1].__setitem__("manifest_length", length))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    found, files, _ = everything(t, "shop.orders", str(shop.parent), ["--table", "shop.orders"])
    assert [(f.code, f.message) for f in found if f.code != "iceberg.summary-mismatch"] == [
        ("iceberg.manifest-number-range", f"{DATA_MANIFEST} entry 2: sort_order_id is 2,147,483,648, outside the "
                                          "range of an int; read as absent"),
        ("iceberg.manifest-number-range", f"{DATA_MANIFEST} entry 3: sort_order_id is "
                                          "-9,223,372,036,854,775,808, outside the range of an int; read as absent")]
    mine = files[files.manifest_path.str.endswith(DATA_MANIFEST)]
    assert len(files) == 12 and mine.sort_order_id.isna().tolist() == [False, False, True, True]


def test_metadata_numbers_past_a_long_use_the_same_check(tmp_path):
    shop = copy_warehouse(tmp_path) / "shop"
    edit_json(shop / ORDERS_CURRENT_METADATA, lambda md: md["snapshots"][4].__setitem__("sequence-number", 2 ** 63))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    assert [(f.code, f.message) for f in t.findings if f.code != "iceberg.table-relocated"] == [
        ("iceberg.metadata-number-range", "snapshots[4].sequence-number is 9223372036854775808, outside the range "
                                          "of a long")]
    everything(t, "shop.orders", str(shop.parent), ["--table", "shop.orders"])


# ---------------------------------------------------------------------------- control characters in paths
CONTROLS = ["\x00", "\x01", "\x1f", "\x7f"]


@pytest.mark.parametrize("char", CONTROLS)
def test_a_data_file_path_with_a_control_character_in_a_duckdb_table(tmp_path, char):
    root = tmp_path / "dv_single"
    shutil.copytree(FIXTURES / "engines" / "duckdb" / "dv_single", root)
    bad = []

    def change(rs):
        df = rs[0]["data_file"]
        df["file_path"] = df["file_path"].replace("/dv_single/data/", f"/dv_single/da{char}ta/", 1)
        bad.append(df["file_path"])

    rewrite(root / "metadata" / DUCK_MANIFEST, change)
    t = Table.from_folder(str(root))
    found, files, dvs = everything(t, "dv_single", str(root), [])
    path_found = [(f.code, f.message) for f in found if f.code == "iceberg.path-control-character"]
    at = bad[0].index(char)
    assert path_found == [("iceberg.path-control-character",
                           f"{DUCK_MANIFEST} entry 0: file_path {bad[0]!r} holds the control character {char!r} at "
                           f"character {at}; the file is not opened")]
    unlisted = [f for f in found if f.code == "iceberg.folder-unlisted"]
    assert len(unlisted) == 1 and "holds the control character" in unlisted[0].message
    assert bad[0] in files.file_path.tolist()


@pytest.mark.parametrize("char", CONTROLS)
def test_a_manifest_path_with_a_control_character_in_a_manifest_list(tmp_path, char):
    shop = copy_warehouse(tmp_path) / "shop"
    bad = []

    def change(rs):
        rs[1]["manifest_path"] = rs[1]["manifest_path"].replace("-m0", f"-m{char}0")
        bad.append(rs[1]["manifest_path"])

    rewrite(shop / ORDERS_MANIFEST_LIST, change)
    t = Warehouse(str(shop.parent)).table("shop.orders")
    found, files, dvs = everything(t, "shop.orders", str(shop.parent), ["--table", "shop.orders"])
    at = bad[0].index(char)
    codes = [f.code for f in found]
    assert codes[:2] == ["iceberg.path-control-character", "iceberg.manifest-unreadable"]
    assert found[0].message == (f"{ML_NAME} record 1: manifest_path {bad[0]!r} holds the control character "
                                f"{char!r} at character {at}; the manifest is not read")
    assert "holds the control character" in found[1].message
    assert set(codes[2:]) <= {"iceberg.dv-orphan", "iceberg.summary-mismatch", "iceberg.file-missing"}
    # the other manifests still read: 4 data files and the 4 DVs
    assert files.kind.value_counts().to_dict() == {"data": 4, "dv": 4} and len(dvs) == 4


def test_paths_with_control_characters_in_the_metadata(tmp_path):
    shop = copy_warehouse(tmp_path) / "shop"

    def change(md):
        md["snapshots"][3]["manifest-list"] = md["snapshots"][3]["manifest-list"].replace("/snap-", "/snap\x00-")
        md["statistics"][0]["statistics-path"] += "\x1f"
        md["metadata-log"][0]["metadata-file"] += "\x7f"

    edit_json(shop / ORDERS_CURRENT_METADATA, change)
    t = Warehouse(str(shop.parent)).table("shop.orders")
    got = [f.message.split(" ", 1)[0] for f in t.findings if f.code == "iceberg.path-control-character"]
    assert got == ["snapshots[3].manifest-list", "statistics[0].statistics-path", "metadata-log[0].metadata-file"]
    found, files, _ = everything(t, "shop.orders", str(shop.parent), ["--table", "shop.orders"])
    assert [f.code for f in found][:3] == ["iceberg.path-control-character"] * 3
    assert len(files) == 12  # the current snapshot's manifest list is intact
    assert t.commit_deletes(t.snapshots().snapshot_id.tolist()[3]).findings is not None


def test_the_io_layer_refuses_a_location_with_a_control_character(tmp_path):
    io_ = FileIO()
    (tmp_path / "a").write_bytes(b"x")
    for op in (io_.read, io_.size, io_.listdir, io_.source):
        with pytest.raises(SourceError) as err:
            op(f"{tmp_path}/a\x00b")
        assert err.value.code == "source.invalid-location"
        assert str(err.value).startswith(f"'{tmp_path}/a\\x00b' holds the control character '\\x00' at character "
                                         f"{len(str(tmp_path)) + 2}; no file is opened at it")
    assert io_.exists(f"{tmp_path}/a\x01") is False and io_.read(f"{tmp_path}/a") == b"x"


def test_a_location_of_megabytes_is_refused_before_it_is_searched_and_shown_clipped(tmp_path):
    """A manifest list path of 20 MB (table fuzzer seed 50, case 2401) is refused by the I/O layer by its length,
    and the snapshot's card names it by its start and end: no storage call, no 20 MB of HTML."""
    from puffin_explorer.io.locations import MAX_LOCATION_CHARS

    io_ = FileIO()
    huge = f"{tmp_path}/" + "x" * 20_000_000
    for op in (io_.read, io_.size, io_.listdir, io_.source):
        with pytest.raises(SourceError) as err:
            op(huge)
        assert err.value.code == "source.invalid-location" and err.value.location == huge
        length = f"20,000,{len(str(tmp_path)) + 1:03d}"
        assert str(err.value).startswith(f"a location of {length} characters, more than any storage takes "
                                         f"({MAX_LOCATION_CHARS:,}), is not opened: {tmp_path}/xxx")
        assert f"xxx…({length} characters)…{'x' * 100}: the path was damaged" in str(err.value)
        assert len(str(err.value)) < 600
    assert io_.exists(huge) is False

    shop = copy_warehouse(tmp_path) / "shop"
    edit_json(shop / ORDERS_CURRENT_METADATA,
              lambda md: md["snapshots"][3].__setitem__("manifest-list", "x" * 20_000_000))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    sid = t.snapshots().snapshot_id.tolist()[3]
    bundle = t.snapshot(sid)._repr_mimebundle_()
    assert len(bundle["text/html"]) < 200_000 and len(bundle["text/plain"]) < 50_000
    assert "x" * 200 + "…(20,000,000 characters)…" + "x" * 100 in bundle["text/html"]


def test_a_dv_offset_near_the_long_limit_is_a_range_finding_without_overflow(tmp_path):
    """offset + size past 2^63 must not wrap (nor warn): the range ends past the file, exactly."""
    import warnings

    shop = copy_warehouse(tmp_path) / "shop"
    manifest = shop / "orders" / "metadata" / "da354e0d-4a95-484a-b518-c198966d2374-m2.avro"  # DVs: record 2
    seen = {}

    def change(rs):
        d = rs[0]["data_file"]
        d["content_offset"] = 2 ** 63 - 1
        seen.update(size=d["content_size_in_bytes"], file=d["file_size_in_bytes"])

    rewrite(manifest, change)
    length = manifest.stat().st_size
    rewrite(shop / ORDERS_MANIFEST_LIST, lambda rs: rs[2].__setitem__("manifest_length", length))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = [f for f in t.index().findings if f.code == "iceberg.entry-range-beyond-file"]
    assert [f.message for f in found] == [
        f"{manifest.name} entry 0: content range [{2 ** 63 - 1:,}, {2 ** 63 - 1 + seen['size']:,}) ends past file_size_in_bytes "
        f"{seen['file']:,}"]


def test_csv_output_writes_a_control_character_of_a_path_as_an_escape(tmp_path, capsys):
    """A NUL in a path never reaches CSV as a raw byte (Python 3.10's csv module refuses to write it)."""
    root = tmp_path / "dv_single"
    shutil.copytree(FIXTURES / "engines" / "duckdb" / "dv_single", root)

    def change(rs):
        rs[0]["data_file"]["file_path"] = rs[0]["data_file"]["file_path"].replace("/data/", "/da\x00ta/", 1)

    rewrite(root / "metadata" / DUCK_MANIFEST, change)
    capsys.readouterr()
    assert main(["table", str(root), "files", "--format", "csv"]) in (0, 1)
    out = capsys.readouterr().out
    assert "\x00" not in out and "/da\\x00ta/" in out


def test_a_past_snapshots_manifest_list_of_thousands_of_bad_records_is_read_once_and_its_findings_capped(tmp_path):
    """Table fuzzer, seed 37 case 2419: v5's manifest list, its records repeated and every number pushed past
    its type. timeline() reads each snapshot's list; each record's findings were noted one by one against
    every finding noted before (a list lookup), tens of seconds for one card."""
    from puffin_explorer.regions import MAX_FINDINGS_PER_CODE

    shop = copy_warehouse(tmp_path) / "shop"
    v5_list = shop / "orders" / "metadata" / "snap-4843015790835191333-1-6b045a58-7556-49ca-ac2d-a31e10ee71ca.avro"
    copies = 1_500

    def change(rs):
        rs[:] = [dict(r, partition_spec_id=2 ** 40) for r in rs] * copies
    rewrite(v5_list, change, widen=("partition_spec_id",))
    t = Warehouse(str(shop.parent)).table("shop.orders")
    timeline = t.timeline()
    assert timeline.snapshot_id.tolist()[3] == 4843015790835191333
    found = t.manifest_list_findings(4843015790835191333)
    n = copies * 3  # the list names three manifests
    assert [f.code for f in found] == ["iceberg.manifest-number-range"] * MAX_FINDINGS_PER_CODE + ["findings.capped"]
    assert f"{n - MAX_FINDINGS_PER_CODE:,} more iceberg.manifest-number-range findings" in found[-1].message
    assert sum(f.code == "iceberg.manifest-number-range" for f in t.findings) == MAX_FINDINGS_PER_CODE
    assert timeline.live_rows.tolist()[4] == 94_040  # the current snapshot is read as it is


def test_a_manifest_whose_entries_have_no_file_path(tmp_path):
    """The schema's ``file_path`` field renamed in a manifest's header (same length, so the file still reads):
    every entry lacks its path. ``check()`` says so per entry and looks for no file without a path (it called
    ``parent(None)``, found by the table fuzzer, seed 41 case 3260)."""
    shop = copy_warehouse(tmp_path) / "shop"
    manifest = shop / "orders" / "metadata" / DATA_MANIFEST
    data = manifest.read_bytes()
    at = data.index(b'"name":"file_path"', data.index(b"avro.schema"))  # the Avro schema's, not Iceberg's
    manifest.write_bytes(data[:at] + b'"name":"file_pat_"' + data[at + 18:])
    t = Warehouse(str(shop.parent)).table("shop.orders")
    found, files, _ = everything(t, "shop.orders", str(shop.parent), ["--table", "shop.orders"])
    assert [(f.code, f.message) for f in found if f.code == "iceberg.entry-type"] == [
        ("iceberg.entry-type", f"{DATA_MANIFEST} entry {i}: required field file_path is missing") for i in range(4)]
    assert not [f for f in found if f.code == "iceberg.file-missing"]
    assert len(files) == 12 and files.file_path.isna().sum() == 4


def test_a_location_of_millions_of_characters_builds_no_pattern_from_it(tmp_path, monkeypatch, capsys):
    """The table's ``location`` made 5,000,000 characters long (the table fuzzer, seed 41 case 3870): opened from
    its folder, the location becomes a relocation prefix. Mapping paths column-wise escaped it into a regular
    expression in every call (a dozen per card); prefixes are now plain prefix tests, so no pattern anywhere is
    longer than the package's own."""
    import pyarrow.compute as pc

    shop = copy_warehouse(tmp_path) / "shop"
    huge = "/data/" + "x" * 5_000_000
    edit_json(shop / "legacy" / "metadata" / "v3.metadata.json", lambda md: md.__setitem__("location", huge))
    patterns: list[int] = []
    for name in ("match_substring_regex", "replace_substring_regex", "count_substring_regex", "split_pattern_regex"):
        real = getattr(pc, name)

        def spy(strings, pattern, *args, _real=real, **kwargs):
            patterns.append(len(pattern))
            return _real(strings, pattern, *args, **kwargs)

        monkeypatch.setattr(pc, name, spy)
    meta = shop / "legacy" / "metadata" / "v3.metadata.json"
    # the files' paths still say /data/warehouse; the huge location becomes a second relocation prefix
    t = Table.from_metadata(str(meta), relocate={"/data/warehouse": str(shop.parent)})
    assert sorted(len(k) for k in t.mapper.prefixes) == [len("/data/warehouse"), len(huge)]
    found, files, _ = everything(t, "shop.legacy", str(meta),
                                 ["--relocate", f"/data/warehouse={shop.parent}"])
    assert found == [] and [f.code for f in t.card_findings()] == ["iceberg.table-relocated"]
    assert len(files) == 2 and files.location.str.startswith(str(shop / "legacy")).all()
    assert patterns and max(patterns) < 100
    bundle = t._repr_mimebundle_()
    assert max(len(bundle["text/html"]), len(bundle["text/plain"])) < 200_000  # the location is shown clipped
    capsys.readouterr()
    assert main(["table", str(meta), "--relocate", f"/data/warehouse={shop.parent}", "summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("location   /data/xxx") and lines[2].endswith("xxx")
    assert max(len(line) for line in lines) <= 820 and lines[0].startswith("table      xxx")
