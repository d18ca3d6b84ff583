"""The entry index: exact columns on the reference tables, the two decoders agree, damaged and
impossible manifests become findings that keep what can be read."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import fastavro
import pytest

from _warehouse_fixtures import (ORDERS_DELETE_MANIFEST, ORDERS_MANIFEST_LIST, WAREHOUSE, copy_warehouse,
                                 read_delete_files_csv, rewrite_avro)
from puffin_explorer import Table, Warehouse
from puffin_explorer.errors import NotInTableError
from puffin_explorer.iceberg import duckdb_manifests, entry_checks, index as index_module, manifest_chunks
from puffin_explorer.iceberg.entry_cache import entry_cache
from puffin_explorer.iceberg.partition_registry import PartitionKeys, PartitionRegistry, registry_key
from puffin_explorer.regions import Severity
from puffin_explorer.iceberg.avro import read_records, scan

ORDERS_DATA_MANIFEST = "orders/metadata/da354e0d-4a95-484a-b518-c198966d2374-m1.avro"
DUCK = "engines/duckdb"
DUCK_META = "engines/duckdb/dv_single/metadata/v5.metadata.json"


def _orders(root: Path = WAREHOUSE) -> Table:
    return Warehouse(str(root)).table("shop.orders")


def _col(ix, name: str) -> list:
    return ix.table.column(name).to_pylist()


def test_orders_index_columns_are_exact():
    ix = _orders().index()
    assert len(ix) == 16
    assert [m["manifest_path"].rsplit("/", 1)[1] for m in ix.manifests] == [
        "da354e0d-4a95-484a-b518-c198966d2374-m1.avro", "2e503939-dedb-4b87-a3ed-4de41fab2d1e-m0.avro",
        "da354e0d-4a95-484a-b518-c198966d2374-m2.avro", "da354e0d-4a95-484a-b518-c198966d2374-m0.avro"]
    assert _col(ix, "kind") == ["data"] * 8 + ["dv"] * 8
    assert _col(ix, "content") == [0] * 8 + [1] * 8
    assert _col(ix, "status") == [1] * 12 + [2] * 4
    assert _col(ix, "record_count") == [502, 483, 507, 472, 30137, 30185, 30050, 29628,
                                        6953, 7105, 6889, 6977, 6481, 6622, 6382, 6475]
    assert _col(ix, "content_offset") == [None] * 8 + [4, 8236, 16468, 24700] * 2
    assert _col(ix, "content_size_in_bytes") == [None] * 8 + [8232] * 8
    assert _col(ix, "sequence_number") == [5] * 4 + [1] * 4 + [5] * 4 + [4] * 4
    assert _col(ix, "first_row_id") == [120000, 120502, 120985, 121492, 0, 30137, 60322, 90372] + [None] * 8
    assert _col(ix, "manifest") == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert _col(ix, "entry") == [0, 1, 2, 3] * 4
    assert ix.partition_values(_col(ix, "partition")) == [{"customer_id_bucket": b} for b in
                                                          [0, 1, 2, 3, 0, 1, 2, 3, 3, 1, 2, 0, 3, 1, 2, 0]]
    assert set(_col(ix, "spec_id")) == {0} and ix.findings == []
    # the live DVs are Spark's delete_files table exactly
    live = ix.rows(ix.mask(["dv"]))
    got = sorted(zip(live.column("file_path").to_pylist(), live.column("referenced_data_file").to_pylist(),
                     live.column("content_offset").to_pylist(), live.column("content_size_in_bytes").to_pylist(),
                     live.column("record_count").to_pylist()))
    assert got == read_delete_files_csv("orders_delete_files.csv")
    # 94,040 live rows: the data files' records less the live DVs' cardinalities
    assert sum(_col(ix, "record_count")[:8]) - sum(r[4] for r in got) == 94_040


def test_metrics_columns_only_when_asked():
    t = _orders()
    plain, full = t.index(), t.index(metrics=True)
    metric = {"column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
              "upper_bounds", "split_offsets"}
    assert not metric & set(plain.columns) and metric <= set(full.columns)
    assert full.table.drop_columns(sorted(metric)).equals(plain.table)
    assert full.table.column("split_offsets").to_pylist()[:8] == [[4]] * 8
    assert t.index() is plain  # cached per snapshot


def test_duckdb_table_index(fixtures):
    t = Table.from_metadata(str(fixtures / DUCK_META),
                            relocate={"/data/engines/duckdb/warehouse/duck": str(fixtures / DUCK)})
    ix = t.index()
    assert _col(ix, "kind") == ["data", "dv", "dv", "dv"]
    assert _col(ix, "status") == [1, 2, 2, 1]  # superseded DVs carried as DELETED
    assert [p.rsplit("/", 1)[1][:8] for p in _col(ix, "file_path")] == ["01a20340", "7f5a95e5", "6da36999",
                                                                         "2ce83c90"]
    assert _col(ix, "record_count") == [100_000, 10_000, 22_858, 22_889]
    assert _col(ix, "content_offset") == [None, 4, 4, 4]
    assert _col(ix, "content_size_in_bytes") == [None, 8_232, 16_432, 16_432]
    assert _col(ix, "sequence_number") == [1, 2, 3, 4]
    assert _col(ix, "referenced_data_file")[0] is None
    assert _col(ix, "empty_referenced_data_file") == [True, False, False, False]  # DuckDB's ""
    assert _col(ix, "manifest") == [0, 1, 2, 3] and _col(ix, "entry") == [0, 0, 0, 0]
    assert int(t.deleted_rows_per_file().live_rows.sum()) == 77_111


@pytest.mark.parametrize("name", ["shop.orders", "shop.events", "shop.legacy"])
def test_duckdb_and_fastavro_decode_the_same_index(monkeypatch, name):
    monkeypatch.setattr(manifest_chunks, "DUCKDB_FROM_BYTES", 0)  # DuckDB even for these small manifests
    monkeypatch.setattr(manifest_chunks, "BATCH", 1)  # a batch per manifest: each read while the last is chunked
    calls = []
    real = manifest_chunks._duckdb
    monkeypatch.setattr(manifest_chunks, "_duckdb", lambda: calls.append(1) or real())
    fast = Warehouse(str(WAREHOUSE)).table(name)
    via_duckdb = fast.index(metrics=True)
    assert calls == [1]
    monkeypatch.setattr(manifest_chunks, "_duckdb", lambda: None)
    slow = Warehouse(str(WAREHOUSE)).table(name)
    assert slow.index(metrics=True).table.equals(via_duckdb.table)


@pytest.mark.parametrize("name", ["shop.orders", "shop.events", "shop.legacy"])
def test_one_manifest_decodes_the_same_through_duckdb_as_through_fastavro(name):
    """decode_manifest, as a Spark executor runs it per manifest: with the worker's DuckDB reader the
    chunk and the findings are the fastavro walker's, and DuckDB did read it."""
    table = Warehouse(str(WAREHOUSE)).table(name).source
    specs = table.metadata.partition_specs
    duck = duckdb_manifests._duckdb()
    reads = []
    real_collect = duck.collect
    duck.collect = lambda read: reads.append(read) or real_collect(read)
    try:
        for m in table.manifest_records():
            loc = table.locate(m["manifest_path"])
            data = table.io.read(loc)
            for metrics in (False, True):
                walked, walked_found = manifest_chunks.decode_manifest(data, m, loc, metrics, specs)
                fast, fast_found = manifest_chunks.decode_manifest(data, m, loc, metrics, specs, duck=duck)
                assert fast.equals(walked) and fast_found == walked_found
        assert len(reads) == 2 * len(table.manifest_records())
        assert duck.folder is None  # no scratch folder between reads: a Spark worker may end without cleaning up
        # a manifest cut short: DuckDB is not asked, the walker says where it ends
        m = table.manifest_records()[0]
        loc = table.locate(m["manifest_path"])
        cut = table.io.read(loc)[:-40]
        reads.clear()
        chunk, found = manifest_chunks.decode_manifest(cut, m, loc, False, specs, duck=duck)
        assert reads == [] and found == manifest_chunks.decode_manifest(cut, m, loc, False, specs)[1]
        assert any(f[1] == Severity.ERROR for f in found)
    finally:
        duck.close()


# ---- damaged Avro ------------------------------------------------------------------------------
def _manifest_in_blocks(records_per_block: int = 2) -> tuple[bytes, list[dict], bytes]:
    """The orders data manifest rewritten uncompressed with a block every few records, and its sync marker."""
    with open(WAREHOUSE / "shop" / ORDERS_DATA_MANIFEST, "rb") as fh:
        reader = fastavro.reader(fh)
        schema, meta, records = reader.writer_schema, dict(reader.metadata), list(reader)
    buf = io.BytesIO()
    w = fastavro.write.Writer(buf, fastavro.parse_schema(schema), codec="null",
                              metadata={k: v for k, v in meta.items() if not k.startswith("avro.")})
    for i, r in enumerate(records):
        w.write(r)
        if i % records_per_block == records_per_block - 1:
            w.flush()
    w.flush()
    return buf.getvalue(), records, w.sync_marker


def _sync_positions(data: bytes, sync: bytes) -> list[int]:
    """Where the sync marker occurs: the last 16 bytes of the header, then after every block."""
    out, at = [], data.find(sync)
    while at >= 0:
        out.append(at)
        at = data.find(sync, at + 1)
    return out


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def test_blocked_manifest_reads_whole():
    data, records, sync = _manifest_in_blocks()
    got = read_records(data)
    assert got.damage is None and len(got.records) == len(records) == 4 and got.claimed == 4
    assert len(_sync_positions(data, sync)) == 3  # header, then two blocks of two records


def test_truncated_manifest_keeps_the_blocks_before():
    data, records, sync = _manifest_in_blocks()
    second_block = _sync_positions(data, sync)[1] + 16
    cut = data[:second_block + 4]  # the second block's count, size and a byte of its first record
    got = read_records(cut)
    assert [r["data_file"]["file_path"] for r in got.records] == [r["data_file"]["file_path"] for r in records[:2]]
    assert got.damage.offset == second_block
    assert scan(cut)[2].offset == second_block


def test_bad_sync_marker_keeps_the_block_it_ends():
    data, records, sync = _manifest_in_blocks()
    first_end = _sync_positions(data, sync)[1]
    bad = data[:first_end] + bytes(16) + data[first_end + 16:]
    got = read_records(bad)
    assert len(got.records) == 2 and got.damage.offset == first_end
    assert got.damage.reason == "sync marker differs from the header's"


def test_block_count_beyond_its_bytes_is_damage_not_an_allocation():
    data, records, sync = _manifest_in_blocks()
    second_block = _sync_positions(data, sync)[1] + 16
    count_len = 1  # two records: one zig-zag byte
    bad = data[:second_block] + _zigzag(10**9) + data[second_block + count_len:]
    tracemalloc.start()
    try:
        got = read_records(bad)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing sized by the count read from the file
    assert len(got.records) == 2 and got.damage.offset == second_block
    assert "1,000,000,000 records" in got.damage.reason


def _install_data_manifest(tmp_path: Path, data: bytes) -> Path:
    root = copy_warehouse(tmp_path)
    (root / "shop" / ORDERS_DATA_MANIFEST).write_bytes(data)

    def fix_length(records):
        for r in records:
            if r["manifest_path"].endswith(Path(ORDERS_DATA_MANIFEST).name):
                r["manifest_length"] = len(data)
        return records

    rewrite_avro(root / "shop" / ORDERS_MANIFEST_LIST, fix_length)
    return root


def test_damaged_manifest_in_a_table_is_a_finding_with_the_entries_before(tmp_path):
    data, records, sync = _manifest_in_blocks()
    second_block = _sync_positions(data, sync)[1] + 16
    root = _install_data_manifest(tmp_path, data[:second_block + 4])
    t = _orders(root)
    ix = t.index()
    assert [f.code for f in ix.findings] == ["iceberg.manifest-damaged"]
    f = ix.findings[0]
    assert f.offset == second_block and f.file.endswith(Path(ORDERS_DATA_MANIFEST).name)
    assert f.message.startswith(f"da354e0d-4a95-484a-b518-c198966d2374-m1.avro: cannot read Avro from byte "
                                f"{second_block:,} (")
    assert f.message.endswith(": 2 of 4 records read")
    assert len(t.data_files()) == 6  # the other data manifest's 4 and the 2 before the damage
    assert "iceberg.manifest-damaged" in [x.code for x in t.check(read_files=False)]
    assert "iceberg.manifest-damaged" in t.to_html()


def test_missing_manifest_is_a_finding_and_the_others_are_read(tmp_path):
    root = copy_warehouse(tmp_path)
    (root / "shop" / ORDERS_DELETE_MANIFEST).unlink()
    t = _orders(root)
    ix = t.index()
    assert [f.code for f in ix.findings] == ["table.file-vanished"]  # a file of the table's own, gone
    assert ix.findings[0].file.endswith(Path(ORDERS_DELETE_MANIFEST).name)
    assert len(t.data_files()) == 8 and len(t.dvs()) == 0


def test_negative_record_count_and_range_past_the_file_are_findings(tmp_path):
    root = copy_warehouse(tmp_path)

    def change(records):
        records[1]["data_file"]["record_count"] = -5
        records[2]["data_file"]["content_size_in_bytes"] = 10**9
        return records

    length = rewrite_avro(root / "shop" / ORDERS_DELETE_MANIFEST, change)

    def fix_length(records):
        for r in records:
            if r["manifest_path"].endswith(Path(ORDERS_DELETE_MANIFEST).name):
                r["manifest_length"] = length
        return records

    rewrite_avro(root / "shop" / ORDERS_MANIFEST_LIST, fix_length)
    t = _orders(root)
    found = {f.code: f for f in t.index().findings}
    assert sorted(found) == ["iceberg.entry-negative", "iceberg.entry-range-beyond-file"]
    name = Path(ORDERS_DELETE_MANIFEST).name
    assert found["iceberg.entry-negative"].message == f"{name} entry 1: record_count -5 is negative"
    assert found["iceberg.entry-range-beyond-file"].message == (
        f"{name} entry 2: content range [16,468, 1,000,016,468) ends past file_size_in_bytes 34,239")
    assert found["iceberg.entry-negative"].file.endswith(name)
    assert "iceberg.entry-negative" in [f.code for f in t.card_findings()]


def test_asking_for_what_the_table_does_not_have():
    t = _orders()
    with pytest.raises(NotInTableError, match="no deletion vector for /nowhere.parquet"):
        t.read_dv("/nowhere.parquet")
    with pytest.raises(KeyError):  # still a KeyError for callers that catch one
        t.delete_file_contents("/nowhere-deletes.puffin")
    dv = t.read_dv(t.dvs().referenced_data_file[0])
    assert dv.cardinality == int(t.dvs().record_count[0])


def test_json_of_findings_is_serialisable():
    assert json.dumps([f.to_dict() for f in _orders().index().findings]) == "[]"


def _own_scratch_folders(monkeypatch, tmp_path) -> str:
    """The pattern of DuckDB's scratch folders, made in a temporary folder of this test's own: another process
    decoding manifests meanwhile (the other test lane) makes and removes scratch folders of its own in the
    system's temporary folder, which a look there would take for this test's."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return f"{tmp_path}/puffin-explorer-manifests-*"


def test_ctrl_c_ends_a_build_cleanly_and_the_next_build_completes(monkeypatch, tmp_path):
    import glob

    pattern = _own_scratch_folders(monkeypatch, tmp_path)
    before = set(glob.glob(pattern))
    real = manifest_chunks._finish_batch

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    t = _orders()
    monkeypatch.setattr(manifest_chunks, "_finish_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        t.index()
    assert set(glob.glob(pattern)) == before  # DuckDB's scratch folder is gone
    monkeypatch.setattr(manifest_chunks, "_finish_batch", real)
    assert len(t.index()) == 16 and t.index().findings == []


def test_ctrl_c_while_duckdb_reads_the_next_batch_ends_its_queries_and_removes_their_files(monkeypatch, tmp_path):
    import glob
    import threading

    pattern = _own_scratch_folders(monkeypatch, tmp_path)
    before = set(glob.glob(pattern))
    monkeypatch.setattr(manifest_chunks, "DUCKDB_FROM_BYTES", 0)
    monkeypatch.setattr(manifest_chunks, "BATCH", 1)
    real = manifest_chunks._finish_batch
    finished = []

    def interrupted(source, batch, duck):
        if finished:  # the second batch: the third is being read
            assert duck.running
            assert set(glob.glob(pattern)) - before  # its scratch folder, where this test looks
            raise KeyboardInterrupt
        finished.append(real(source, batch, duck))

    t = Warehouse(str(WAREHOUSE)).table("shop.events")
    assert len(t.source.manifest_records(t.metadata.current_snapshot_id)) >= 3
    monkeypatch.setattr(manifest_chunks, "_finish_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        t.index()
    assert set(glob.glob(pattern)) == before  # the scratch folder and the files being read are gone
    assert not [th for th in threading.enumerate() if th.name.startswith("puffin-explorer-avro")]
    monkeypatch.setattr(manifest_chunks, "_finish_batch", real)
    monkeypatch.setattr(manifest_chunks, "_duckdb", lambda: None)
    fastavro_built = Warehouse(str(WAREHOUSE)).table("shop.events").index()
    assert t.index().table.equals(fastavro_built.table)  # the batches decoded before Ctrl-C stay cached


def test_a_manifest_listed_twice_is_decoded_once_and_is_a_finding(tmp_path):
    root = copy_warehouse(tmp_path)
    rewrite_avro(root / "shop" / ORDERS_MANIFEST_LIST, lambda records: records + records[-1:] * 3)
    t = _orders(root)
    ix = t.index()
    twice = [f for f in ix.findings if f.code == "iceberg.manifest-listed-twice"]
    assert len(twice) == 1 and len(ix.findings) == 1
    assert twice[0].message.startswith("snapshot 6590999396394158857's manifest list names 3 manifests again (")
    assert twice[0].file.endswith(Path(ORDERS_MANIFEST_LIST).name)
    listed_last = Path(t.source.manifest_records()[-1]["manifest_path"]).name
    assert listed_last in twice[0].message
    # the entries once: a manifest list's count of listings never multiplies the index's rows
    assert len(ix) == len(_orders().index()) and len(t.files()) == len(_orders().files())
    assert twice[0].message.endswith("readers read their files once per listing; this index holds their entries once")


def test_a_table_with_no_current_snapshot_lists_no_files(tmp_path):
    root = copy_warehouse(tmp_path)
    meta = root / "shop" / "orders" / "metadata" / "v7.metadata.json"
    doc = json.loads(meta.read_text())
    doc["current-snapshot-id"] = None
    doc["refs"] = {}
    meta.write_text(json.dumps(doc))
    t = _orders(root)
    assert len(t.files()) == 0 and len(t.dvs()) == 0 and len(t.deleted_rows_per_file()) == 0
    assert t.delete_debt().deleted_rows == 0 and len(t.puffin_files()) == 0
    with pytest.raises(NotInTableError, match="orders: no current snapshot"):
        t.snapshot()
    assert len(t.snapshots()) == 5


def test_a_bucket_value_outside_its_spec_is_one_finding_per_partition(tmp_path):
    """Two entries of m1.avro moved to bucket 7 of a bucket[4] spec: one finding for that partition (named at
    its first entry), none for the partitions that fit; the index and its files still read."""
    root = copy_warehouse(tmp_path)
    manifest = root / "shop" / ORDERS_DATA_MANIFEST

    def move(records):
        for r in records[2:]:
            r["data_file"]["partition"]["customer_id_bucket"] = 7
        return records

    new_length = rewrite_avro(manifest, move)
    rewrite_avro(root / "shop" / ORDERS_MANIFEST_LIST,
                 lambda records: [dict(r, manifest_length=new_length) if r["manifest_path"].endswith("-m1.avro") else r
                                  for r in records])
    t = _orders(root)
    ix = t.index()
    found = [(f.code, f.message) for f in ix.findings]
    assert found == [("iceberg.entry-partition-mismatch",
                      "da354e0d-4a95-484a-b518-c198966d2374-m1.avro entry 2: partition customer_id_bucket=7 is "
                      "outside bucket[4]")]
    assert len(ix) == len(_orders().index()) and len(t.files()) == len(_orders().files())
    assert t.index(metrics=True).findings[0].message == found[0][1]  # decoded again: the same finding, once


def test_partition_records_whose_strings_hold_the_key_separator_keep_their_own_codes():
    """Two partition records that a joined text key without lengths would confuse get two codes."""
    import pyarrow as pa

    registry = PartitionRegistry()
    records = [{"a": "x\x1fvy", "b": "z"}, {"a": "x", "b": "y\x1fvz"}, {"a": "x", "b": "y\x1fvz"}, None]
    codes = registry.codes_of(pa.array(records, pa.struct([("a", pa.string()), ("b", pa.string())])))
    assert codes.to_pylist() == [0, 1, 1, 2]
    assert registry.partitions == records[:2] + [None]


def test_under_a_low_address_space_limit_the_index_decodes_without_duckdb():
    """Table fuzzer class (a worker aborted): under ``ulimit -v`` with little room left, DuckDB's connect
    ends the process with a C++ terminate instead of raising.  With under DUCKDB_HEADROOM free the
    manifests are decoded with fastavro; the same files come back."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import resource, sys
        sys.path.insert(0, "tests")
        from _warehouse_fixtures import WAREHOUSE
        from puffin_explorer import Warehouse
        from puffin_explorer.iceberg import duckdb_manifests, manifest_chunks
        manifest_chunks.DUCKDB_FROM_BYTES = 0  # the fixture's small manifests would go to DuckDB too
        t = Warehouse(str(WAREHOUSE)).table("shop.orders")
        import fastavro, pandas, pyarrow, pyarrow.compute  # noqa: F401  (mapped before the limit, as in a notebook)
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + (64 << 20), used + (64 << 20)))
        print(len(t.files()), int(t.files().record_count.sum()))
        assert duckdb_manifests._address_space_headroom() < duckdb_manifests.DUCKDB_HEADROOM
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["12", "149888"]  # 8 data files and 4 DVs; their record counts


@pytest.mark.parametrize("chosen", [None, "mimalloc"])
def test_the_first_index_moves_arrow_off_mimalloc_unless_the_process_chose_a_pool(chosen):
    """choose_arrow_pool: a process on Arrow's default mimalloc pool reads its first index with the system
    allocator (the same answer; an array made before still reads); one whose ARROW_DEFAULT_MEMORY_POOL names a
    pool keeps it."""
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, "tests")
        import pyarrow as pa
        from _warehouse_fixtures import WAREHOUSE
        from puffin_explorer import Warehouse
        before = pa.default_memory_pool().backend_name
        made = pa.array(list(range(100_000)))
        t = Warehouse(str(WAREHOUSE)).table("shop.orders")
        n = len(t.index())
        print(before, pa.default_memory_pool().backend_name, n, made.sum().as_py())
    """)
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    before, after, n, total = run.stdout.split()
    assert (n, total) == ("16", str(sum(range(100_000))))  # 8 data files and 8 DVs
    import pyarrow as pa

    # the wheels' default: mimalloc from pyarrow 18 (apache/arrow#43254), jemalloc before it on Linux, which the
    # first index leaves alone (the slow page faults this switch avoids were measured with mimalloc)
    default = "mimalloc" if int(pa.__version__.split(".")[0]) >= 18 else "jemalloc"
    assert before == (chosen or default)
    assert after == (chosen or ("system" if default == "mimalloc" else default))


def test_partition_labels_are_made_once_per_partition_and_index():
    """Each distinct partition is labelled once; most of the table's partitions: all of them, kept for the next
    analysis of the index; a null or unknown code gets the missing label."""
    import pyarrow as pa

    from puffin_explorer.iceberg.columns import partition_labels, partition_texts, strings
    from puffin_explorer.iceberg.relations import record_texts

    ix = _orders().index()
    seen = []

    def label(p):
        seen.append(p["customer_id_bucket"])
        return f"b{p['customer_id_bucket']}"

    few = partition_labels(ix, pa.array([3, None, 3, 99, -1], pa.int32()), label, "none")
    assert few.to_pylist() == ["b3", "none", "b3", "none", "none"] and seen == [3]
    every = partition_labels(ix, ix.table.column("partition"), label, "none")
    assert every.to_pylist() == [f"b{c}" for c in _col(ix, "partition")] and seen == [3, 0, 1, 2, 3]
    again = partition_labels(ix, pa.array([2, 2, None], pa.int32()), label, None)
    assert again.to_pylist() == ["b2", "b2", None] and seen == [3, 0, 1, 2, 3]  # kept: labelled no more
    assert record_texts(ix, pa.array([1, None], pa.int32())).to_pylist() == ["{'customer_id_bucket': 1}", None]
    texts = partition_texts(ix, ix.table.slice(0, 5))
    assert list(texts) == ["customer_id_bucket=0", "customer_id_bucket=1", "customer_id_bucket=2",
                           "customer_id_bucket=3", "customer_id_bucket=0"]
    assert texts.dtype == strings(ix.table.column("file_path")).dtype  # as the paths: Arrow's str on pandas 3


def test_a_partition_record_has_one_registry_key_whichever_decoder_read_it():
    """DuckDB's rows are keyed column-wise, fastavro's record by record: the same record gets the same key (so
    the same code), and no two different records share one (names, kinds, nulls and lengths all count)."""
    import datetime

    import pyarrow as pa

    from puffin_explorer.iceberg.partition_registry import _struct_keys

    records = [{"id_bucket": 3, "day": datetime.date(2024, 1, 31), "region": "eu:1", "hot": True},
               {"id_bucket": None, "day": None, "region": None, "hot": None},
               {"id_bucket": -12, "day": datetime.date(1970, 1, 1), "region": "é", "hot": False},
               {"id_bucket": 31, "day": datetime.date(2024, 1, 3), "region": "1", "hot": True},
               None]
    arr = pa.array(records, pa.struct([("id_bucket", pa.int32()), ("day", pa.date32()), ("region", pa.string()),
                                       ("hot", pa.bool_())]))
    keys = _struct_keys(arr).to_pylist()
    assert keys[:4] == [registry_key(r) for r in records[:4]]
    assert len(set(keys)) == 5 and registry_key(None) == ("", "None")
    assert registry_key({"a": 1}) != registry_key({"b": 1}) != registry_key({"b": "1"}) != registry_key({"b": True})
    assert registry_key({"a": 1.5}) == (("a", 1.5),)  # another kind of value: the record's items
    assert _struct_keys(pa.array([{"a": b"x"}])) is None  # a binary field: registered value by value


def _orders_with_spec_field(tmp_path, name: str, transform: str) -> Table:
    root = copy_warehouse(tmp_path)
    meta = root / "shop" / "orders" / "metadata" / "v7.metadata.json"
    doc = json.loads(meta.read_text())
    doc["partition-specs"][0]["fields"][0].update(name=name, transform=transform)
    meta.write_text(json.dumps(doc))
    return _orders(root)


def test_partition_names_are_checked_once_per_set_of_names(tmp_path):
    """Every partition record of shop.orders has the field customer_id_bucket: under a spec naming it (identity,
    so no bucket to check) the records are clean without a look at each; under a spec naming another field,
    each distinct partition is one finding, named at its first entry."""
    same = _orders_with_spec_field(tmp_path / "same", "customer_id_bucket", "identity")
    assert same.index().findings == []
    other = _orders_with_spec_field(tmp_path / "other", "customer_bucket", "identity")
    ix = other.index()
    found = sorted((f.code, f.message) for f in ix.findings)
    assert found == [("iceberg.entry-partition-mismatch",
                      f"da354e0d-4a95-484a-b518-c198966d2374-m1.avro entry {i}: partition fields "
                      "['customer_id_bucket'] but spec 0 has ['customer_bucket']") for i in range(4)]
    assert len(ix) == len(_orders().index())
    assert sorted((f.code, f.message) for f in other.index(metrics=True).findings) == found  # decoded again: once


def test_the_registry_numbers_each_records_field_names_whichever_decoder_registers_it():
    """A code per distinct record and, beside it, the number of its set of field names: the columns'
    records (names from the struct type), a null record (no names), a Python record and a value that is
    no record (-1)."""
    import pyarrow as pa

    registry = PartitionRegistry()
    arr = pa.array([{"a": 1, "b": "x"}, None, {"a": 2, "b": "y"}, {"a": 1, "b": "x"}],
                   pa.struct([("a", pa.int64()), ("b", pa.string())]))
    assert registry.codes_of(arr).to_pylist() == [0, 1, 2, 0]
    assert [registry.code_of({"b": "z"}), registry.code_of(5), registry.code_of({"a": 2, "b": "y"})] \
        == [3, 4, 2]
    assert list(registry.partition_shapes) == [0, 1, 0, 2, -1]
    assert registry.shapes == [("a", "b"), (), ("b",)]


def test_every_partitions_label_made_column_wise_is_the_text_python_makes():
    """The registry keeps the records it registered from an Arrow column as Arrow too, and the analyses' labels
    of every partition are made from them column-wise: the same texts as Python's, a string repr would escape
    (quotes, a tab) and a record registered by value labelled in Python."""
    import datetime

    import pyarrow as pa

    from puffin_explorer.iceberg.columns import partition_labels, partition_text
    from puffin_explorer.iceberg.relations import record_text

    registry = PartitionRegistry()
    records = [{"i": 1, "s": "a", "b": True, "d": datetime.date(2024, 1, 31)},
               {"i": None, "s": "x'y", "b": None, "d": None},
               {"i": -7, "s": "tab\t", "b": False, "d": datetime.date(1, 1, 1)}]
    kind = pa.struct([("i", pa.int64()), ("s", pa.string()), ("b", pa.bool_()), ("d", pa.date32())])
    assert registry.codes_of(pa.array(records, kind)).to_pylist() == [0, 1, 2]
    assert registry._register(registry_key({"f": 1.5}), {"f": 1.5}) == 3
    assert [(start, len(col)) for start, col in registry.partitions.columns] == [(0, 3)]
    index = index_module.EntryIndex(None, index_module._schema(False).empty_table(), [], registry.partitions)
    codes = pa.array([3, 2, 1, 0, None], pa.int32())
    assert partition_labels(index, codes, partition_text, "-").to_pylist() == [
        "f=1.5", "i=-7/s=tab\t/b=false/d=0001-01-01", "i=null/s=x'y/b=null/d=null",
        "i=1/s=a/b=true/d=2024-01-31", "-"]
    assert partition_labels(index, codes, record_text, None).to_pylist() == [
        "{'f': 1.5}", "{'i': -7, 's': 'tab\\t', 'b': False, 'd': datetime.date(1, 1, 1)}",
        "{'i': None, 's': \"x'y\", 'b': None, 'd': None}",
        "{'i': 1, 's': 'a', 'b': True, 'd': datetime.date(2024, 1, 31)}", None]


def test_the_registry_keeps_records_registered_from_arrow_as_arrow_and_reads_them_as_dicts():
    """Records registered from an Arrow column are kept as Arrow only (no Python dict per partition), between
    records registered by value; reading one code, a slice, many codes (``take``, repeats and any order) or
    the whole registry gives the dicts Python makes of them, and the frames' partition column shares one dict
    per distinct partition."""
    import datetime

    import pyarrow as pa

    from puffin_explorer.iceberg.columns import partitions

    registry = PartitionRegistry()
    kind = pa.struct([("d", pa.date32()), ("n", pa.int32())])
    first = [{"d": datetime.date(2024, 1, 1), "n": 1}, {"d": None, "n": 2}]
    assert registry.codes_of(pa.array(first, kind)).to_pylist() == [0, 1]
    assert registry._register(registry_key({"f": 0.5}), {"f": 0.5}) == 2
    assert registry.codes_of(pa.array([first[1], {"d": None, "n": 3}], kind)).to_pylist() == [1, 3]
    every = first + [{"f": 0.5}, {"d": None, "n": 3}]
    parts = registry.partitions
    assert len(parts) == 4 and list(parts) == every and parts == every
    assert [(start, len(col)) for start, col in parts.columns] == [(0, 2), (3, 1)]
    assert [parts[i] for i in range(4)] == every and parts[-1] == every[3] and parts[1:3] == every[1:3]
    assert parts.take([3, 0, 2, 3]) == [every[3], every[0], every[2], every[3]] and parts.take([]) == []
    with pytest.raises(IndexError):
        parts[4]
    with pytest.raises(IndexError):
        parts.take([0, 4])
    index = index_module.EntryIndex(None, pa.table({"partition": pa.array([3, None, 3, 0], pa.int32())}), [], parts)
    shown = partitions(index, index.table)
    assert shown.tolist() == [every[3], None, every[3], every[0]] and shown[0] is shown[2]
    assert index.partition_values([2, None, 9, 1]) == [every[2], None, None, every[1]]


def test_the_control_byte_pass_reads_only_the_bytes_of_the_values_a_slice_holds():
    import pyarrow as pa

    may_hold = entry_checks._may_hold_control_bytes
    paths = ["s3://b/a.parquet", "s3://b/tab\there.parquet", "s3://b/é.parquet", None, "s3://b/del\x7f.parquet"]
    for type_ in (pa.string(), pa.large_string()):
        arr = pa.array(paths, type_)
        assert may_hold(arr) and may_hold(pa.chunked_array([arr]))
        assert not may_hold(arr.slice(0, 1)) and not may_hold(arr.slice(2, 2))  # the tab and DEL lie outside
        assert may_hold(arr.slice(1, 1)) and may_hold(arr.slice(4, 1))
        assert not may_hold(pa.chunked_array([arr.slice(0, 1), arr.slice(2, 2)]))
        assert may_hold(pa.chunked_array([arr.slice(2, 2), arr.slice(4, 1)]))
        assert not may_hold(pa.array(["", None], type_)) and not may_hold(pa.chunked_array([], type_))
    assert may_hold(pa.array([1, 2]))  # not a string column: the regex decides


@pytest.mark.parametrize("first_duckdb", [True, False])
def test_a_partition_registered_column_wise_and_by_value_keeps_one_code(monkeypatch, first_duckdb):
    """DuckDB's reads register partitions column-wise (Arrow keys), the fastavro walker by value (a dict): a
    table decoded both ways, in either order, gives each partition one code."""
    monkeypatch.setattr(manifest_chunks, "DUCKDB_FROM_BYTES", 0)
    real = manifest_chunks._duckdb
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    cache = entry_cache(t.source)
    ways = [real, lambda: None] if first_duckdb else [lambda: None, real]
    monkeypatch.setattr(manifest_chunks, "_duckdb", ways[0])
    first = t.index().table
    registered = len(cache.partitions)
    assert registered >= 2 and bool(cache.partition_codes.pieces) == first_duckdb
    cache.clear()  # the decoded manifests go; the table's partition registry stays
    monkeypatch.setattr(manifest_chunks, "_duckdb", ways[1])
    again = t.index().table
    assert again.equals(first) and len(cache.partitions) == registered == len(cache.partition_codes)


@pytest.mark.parametrize("rows_per_slice", [64, 1])
def test_rows_taken_by_position_are_the_rows_arrow_takes_in_runs_or_scattered(monkeypatch, rows_per_slice):
    import numpy as np
    import pyarrow as pa

    monkeypatch.setattr(index_module, "ROWS_PER_SLICE", rows_per_slice)  # 1: every run a slice
    ix = _orders().index(metrics=True)
    n = len(ix)
    assert n == 16
    for at in ([], [0], list(range(n)), [0, 1, 2, n - 2, n - 1], list(range(0, n, 2)), [n - 1]):
        got = ix.take(np.array(at, dtype=np.int64), ["file_path", "lower_bounds", "partition"])
        want = ix.table.select(["file_path", "lower_bounds", "partition"]).take(pa.array(at, pa.int64()))
        assert got.equals(want) and got.to_pylist() == want.to_pylist()


def test_partition_keys_look_up_only_the_pieces_whose_range_meets_the_keys_and_find_every_key():
    """A lookup reads only the registered pieces whose smallest..largest key range meets the looked-up keys'; it
    must still find every registered key (pieces with interleaved ranges included) and no other."""
    import random

    import pyarrow as pa

    rng = random.Random(7)
    keys = PartitionKeys()
    truth: dict[str, int] = {}
    first = 0
    for piece in range(12):  # disjoint ranges, then interleaved ones
        width = rng.randint(1, 50)
        if piece < 6:
            texts = [f"i{piece:02d}:{n:04d}" for n in rng.sample(range(10_000), width)]
        else:
            texts = [f"i{rng.randint(0, 11):02d}:{n:04d}" for n in rng.sample(range(10_000, 20_000), width)]
        texts = [t for t in dict.fromkeys(texts) if t not in truth]
        keys.add_arrow(pa.array(texts, pa.string()), first)
        truth.update({t: first + i for i, t in enumerate(texts)})
        first += len(texts)
    registered = list(truth)
    for _ in range(200):
        asked = list(dict.fromkeys(rng.sample(registered, rng.randint(0, 20))
                                   + [f"i{rng.randint(0, 12):02d}:{rng.randint(0, 30_000):05d}x" for _ in range(3)]))
        got = keys.lookup_arrow(pa.array(asked, pa.string())).tolist()
        assert got == [truth.get(k, -1) for k in asked]


def test_take_rows_takes_chunk_by_chunk_in_any_order_as_arrow_does():
    """``take_rows`` (the index's take of scattered rows: chunk by chunk, never a concatenated column) gives what
    Arrow's ``take`` gives, for positions in any order, repeated, within one chunk or across all, and raises on a
    position past the end."""
    import numpy as np
    import pyarrow as pa

    from puffin_explorer.iceberg.index import take_rows

    rng = np.random.default_rng(7)
    schema = pa.schema([("path", pa.string()), ("n", pa.int64()),
                        ("m", pa.list_(pa.struct([("key", pa.int32()), ("value", pa.int64())])))])
    chunks = [pa.table({"path": [f"p{c}-{i}" for i in range(n)], "n": list(range(n)),
                        "m": [[{"key": i, "value": c}] for i in range(n)]}, schema=schema)
              for c, n in enumerate([5, 1, 0, 9, 3])]
    table = pa.concat_tables(chunks)
    assert table.column("path").num_chunks == 5
    for positions in ([], [0], [17], [17, 0, 5, 5, 6], list(range(18)), list(range(17, -1, -1)),
                      rng.integers(0, 18, 40).tolist(), sorted(rng.integers(0, 18, 40).tolist())):
        got = take_rows(table, np.array(positions, dtype=np.int64))
        assert got.equals(table.take(pa.array(positions, pa.int64()))), positions
    with pytest.raises(IndexError):
        take_rows(table, np.array([3, 18]))


@pytest.mark.parametrize("which", ["orders", "duckdb", "spark-prefixed"])
def test_path_codes_give_back_each_rows_normalized_path_without_keeping_a_dictionary(fixtures, which):
    """A path code names the path the index's row holds (normalized, the ``file:`` of a Spark path dropped), the
    same code for the same path; the dictionary is made from the index's own columns when asked for."""
    import numpy as np
    import pyarrow as pa

    from puffin_explorer.iceberg.columns import path_codes
    from puffin_explorer.iceberg.paths import normalize

    if which == "duckdb":
        t = Table.from_metadata(str(fixtures / DUCK_META))
    else:
        t = _orders()
    ix = t.index()
    if which == "spark-prefixed":  # the same rows spelled as Spark writes local paths
        import pyarrow.compute as pc

        from puffin_explorer.iceberg.index import EntryIndex

        tbl = ix.table
        for name in ("file_path", "referenced_data_file"):
            col = tbl.column(name)
            tbl = tbl.set_column(tbl.schema.get_field_index(name), name,
                                 pc.if_else(pc.is_valid(col), pc.binary_join_element_wise("file:", col, ""), col))
        ix = EntryIndex(ix.snapshot_id, tbl, ix.manifests, ix.partitions)
    codes = path_codes(ix)
    assert "dictionary" not in vars(codes)  # nothing but integers and the index's own columns kept
    written = [normalize(p) if p else None for p in ix.table.column("file_path").to_pylist()]
    refs = [normalize(p) if p else None for p in ix.table.column("referenced_data_file").to_pylist()]
    distinct = list(dict.fromkeys(p for p in written + refs if p is not None))
    assert codes.size == len(distinct) and codes.dictionary.to_pylist() == distinct
    assert [distinct[c] if c >= 0 else None for c in codes.files.tolist()] == written
    assert [distinct[c] if c >= 0 else None for c in codes.refs.tolist()] == refs
    rng = np.random.default_rng(7)
    some = rng.integers(0, codes.size, 25)
    assert codes.take(some).to_pylist() == [distinct[c] for c in some.tolist()]
    assert codes.take(np.zeros(0, dtype=np.int64)).to_pylist() == []
    assert codes.take(np.sort(some)).to_pylist() == [distinct[c] for c in np.sort(some).tolist()]


@pytest.mark.parametrize("name", ["shop.orders", "shop.events", "shop.legacy"])
def test_partitions_read_column_wise_are_an_arrow_column_of_the_same_records(monkeypatch, name):
    """Records DuckDB registered column-wise become an Arrow struct column (no dict per row); read cell by cell
    they are the dicts fastavro's records give, row for row, in dvs() and files() alike (records of more than one
    shape, or registered by value, stay a column of dicts)."""
    import pandas as pd

    monkeypatch.setattr(manifest_chunks, "DUCKDB_FROM_BYTES", 0)
    fast = Warehouse(str(WAREHOUSE)).table(name)
    frames = {"dvs": fast.dvs(), "files": fast.files()}
    monkeypatch.setattr(manifest_chunks, "_duckdb", lambda: None)
    slow = Warehouse(str(WAREHOUSE)).table(name)
    compared = 0
    for label, want in {"dvs": slow.dvs(), "files": slow.files()}.items():
        got = frames[label]
        assert len(got) == len(want)
        if not len(want):  # (a table without DVs)
            continue
        assert want.partition.dtype == object
        # orders' bucket records are read column-wise; legacy's unpartitioned {} and events' two specs stay dicts
        assert isinstance(got.partition.dtype, pd.ArrowDtype) == (name == "shop.orders"), (name, label)
        compared += 1
        assert list(got.partition) == list(want.partition) and all(isinstance(p, dict) for p in got.partition)
        assert got.drop(columns="partition").equals(want.drop(columns="partition"))
    assert compared == (1 if name == "shop.legacy" else 2)  # legacy has no DVs


def test_manifests_are_fetched_in_batches_bounded_by_the_entries_the_list_counts(monkeypatch):
    """A batch ends at BATCH manifests, BATCH_BYTES bytes or BATCH_ENTRIES entries, whichever comes first; a
    manifest whose counts are missing or nonsense counts for none, and a lone big one is a batch of its own."""
    monkeypatch.setattr(manifest_chunks, "BATCH", 4)
    monkeypatch.setattr(manifest_chunks, "BATCH_ENTRIES", 100)
    counts = {"added_files_count": 30, "existing_files_count": 10, "deleted_files_count": 0}

    def m(n, **kw):
        return {"manifest_path": f"m{n}", "manifest_length": 10, **counts, **kw}

    ms = [m(0), m(1), m(2, added_files_count=500), m(3), m(4, existing_files_count=None), m(5, added_files_count="x"),
          m(6), m(7), m(8), m(9)]
    got = [[x["manifest_path"] for x in b] for b in manifest_chunks._batches(ms)]
    assert got == [["m0", "m1"], ["m2"], ["m3", "m4", "m5", "m6"], ["m7", "m8"], ["m9"]]


def test_the_first_place_of_each_code_however_the_codes_are_numbered():
    import numpy as np

    from puffin_explorer.iceberg.columns import first_places

    in_order = np.array([-1, 0, 1, 0, -1, 2, 1, 3], dtype=np.int32)  # as Arrow's memo numbers them
    assert first_places(in_order, 4).tolist() == [1, 2, 5, 7]
    shuffled = np.array([2, -1, 0, 2, 3, 1, 0], dtype=np.int32)  # numbered otherwise: found by sorting
    assert first_places(shuffled, 4).tolist() == [2, 5, 0, 4]
    assert first_places(np.zeros(0, dtype=np.int32), 0).tolist() == []
