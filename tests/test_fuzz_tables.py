"""The table fuzzer (tests/fuzz/fuzz_tables.py) as part of the suite: a fixed-seed batch over the real
fixture tables must end with no crash, no escaped PuffinError, no stall and no memory failure; and the
harness itself -- its cases, the copies it writes, its mutators and its verdicts -- does what it says."""

from __future__ import annotations

import io
import json
import os
import random
import sys
from pathlib import Path

import fastavro
import pytest

from puffin_explorer.errors import InvalidFileError, NotFoundError

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import fuzz_pool  # noqa: E402
import fuzz_tables as tf  # noqa: E402

#: The suite's batch: fixed seed, sized to take about a minute on two busy cores (a case is a few dozen user
#: operations, about 2 s of CPU with charts drawn in one case of ten: 80 cases took 136 s beside the rest of
#: ``make test``). The long runs, tens of thousands of cases, are `tests/fuzz/fuzz_tables.py --cases N`
#: (docs/errors.md).
SUITE_CASES = 48
#: CPU seconds per case before it counts as a stall: far above what any case needs (the long run uses 2 s),
#: so a busy machine cannot make the test fail.
SUITE_TIME_LIMIT = 10.0

pytestmark = pytest.mark.skipif(not (tf.FIXTURES / "warehouse").is_dir(), reason="reference fixtures missing")


@pytest.fixture(scope="module")
def bases():
    return tf.load_bases()


@pytest.mark.long
def test_fixed_seed_run_has_no_crash_escape_stall_or_memory_failure():
    rep = tf.run_pool(SUITE_CASES, seed=1, workers=2, time_limit=SUITE_TIME_LIMIT, chart_every=10)
    assert rep.cases == SUITE_CASES
    classes = tf.classes_markdown(rep, seed=1, title="failure classes of the suite's batch")
    assert {k: rep.counts[k] for k in ("crash", "escape", "stall", "memory")} == \
        {"crash": 0, "escape": 0, "stall": 0, "memory": 0}, classes
    assert rep.counts["ok"] > SUITE_CASES // 3  # the cases reach the paths after opening


def test_bases_are_the_fixture_tables(bases):
    names = [b.name for b in bases]
    assert {"warehouse:shop.orders", "warehouse:shop.events", "warehouse:shop.legacy", "duckdb:dv_single",
            "delta:kernel-rs-table-with-dv-small", "delta:delta-spark-table-with-dv-large"} <= set(names)
    orders = next(b for b in bases if b.name == "warehouse:shop.orders")
    kinds = {rel: kind for rel, kind, _ in orders.files}
    assert kinds["shop/orders/metadata/v7.metadata.json"] == "metadata-current"
    assert kinds["shop/orders/metadata/v1.metadata.json"] == "metadata"
    assert sum(k == "manifest-list" for k in kinds.values()) == 5
    assert sum(k == "manifest" for k in kinds.values()) == 9
    small = next(b for b in bases if b.name == "delta:kernel-rs-table-with-dv-small")
    assert sorted((rel, kind) for rel, kind, _ in small.files) == [
        ("_delta_log/00000000000000000000.json", "commit"), ("_delta_log/00000000000000000001.json", "commit"),
        ("deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin", "delta-dv")]
    if any(b.name == "delta:checkpointed" for b in bases):
        cp = next(b for b in bases if b.name == "delta:checkpointed")
        assert {kind for _, kind, _ in cp.files} >= {"checkpoint", "last-checkpoint", "commit", "delta-dv"}


def test_cases_are_deterministic_and_damage_one_file(bases):
    a, b = tf.make_case(bases, 7, 123), tf.make_case(bases, 7, 123)
    assert (a.base.name, a.rel, a.mutators, a.data) == (b.base.name, b.rel, b.mutators, b.data)
    cases = [tf.make_case(bases, 7, i) for i in range(40)]
    assert len({(c.base.name, c.rel, c.mutators) for c in cases}) > 30
    for c in cases:
        original = (c.base.root / c.rel).read_bytes()
        assert c.data is None or c.data != original or "records-shuffle" in c.mutators, (c.rel, c.mutators)


def test_a_case_copy_replaces_one_file_and_links_the_data(bases, tmp_path):
    orders = next(b for b in bases if b.name == "warehouse:shop.orders")
    rel = "shop/orders/metadata/v7.metadata.json"
    case = tf.Case(0, orders, rel, "test", b"{}")
    folder = tf.materialize(case, str(tmp_path))
    try:
        assert (folder / rel).read_bytes() == b"{}"
        assert (orders.root / rel).read_bytes() != b"{}"  # the fixture itself is untouched
        copied = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        original = sorted(p.relative_to(orders.root).as_posix() for p in orders.root.rglob("*") if p.is_file())
        assert copied == original
        data = next(p for p in (folder / "shop/orders/data").rglob("*.parquet"))
        source = orders.root / data.relative_to(folder)
        assert data.is_symlink() or os.stat(data).st_ino == os.stat(source).st_ino
        assert case.table_dir == folder / "shop/orders"
    finally:
        import shutil

        shutil.rmtree(folder)
    removed = tf.Case(1, orders, rel, "remove", None)
    folder = tf.materialize(removed, str(tmp_path))
    assert not (folder / rel).exists() and (folder / "shop/orders/metadata/v6.metadata.json").is_file()


def _avro(data: bytes):
    r = fastavro.reader(io.BytesIO(data))
    return r.writer_schema, {k: v for k, v in r.metadata.items() if not k.startswith("avro.")}, list(r)


def test_avro_mutations_keep_the_file_schema_and_metadata(bases):
    orders = next(b for b in bases if b.name == "warehouse:shop.orders")
    rel = next(r for r, kind, _ in orders.files if kind == "manifest")
    original = (orders.root / rel).read_bytes()
    schema, meta, records = _avro(original)
    assert {"schema", "partition-spec", "content"} <= set(meta)
    ctx = tf.CaseContext(orders, rel)
    changed_fields = 0
    for i in range(40):
        name, data = tf.m_avro(random.Random(i), original, ctx)
        if not name.startswith("avro-") or name.startswith(("avro-records", "avro-meta")):
            continue
        schema2, meta2, records2 = _avro(data)  # still a valid Avro file for fastavro
        assert schema2 == schema and meta2 == meta and len(records2) == len(records)
        assert records2 != records, name
        changed_fields += 1
    assert changed_fields > 20
    name, data = next((n, d) for n, d in (tf.m_avro(random.Random(i), original, ctx) for i in range(200))
                      if n.startswith("avro-meta"))
    key = name[len("avro-meta-"):]
    _, meta3, records3 = _avro(data)
    assert meta3[key] != meta[key] and records3 == records


def test_dangling_ids_point_nowhere():
    doc = {"current-snapshot-id": 5, "snapshots": [{"snapshot-id": 5, "parent-snapshot-id": 4}, {"snapshot-id": 4}],
           "current-schema-id": 0, "schemas": [{"schema-id": 0}]}
    used = set(tf._ints_in(doc))
    for i in range(20):
        new = tf._dangling(random.Random(i), doc, 5)
        assert isinstance(new, int) and new not in used
    assert tf._dangling(random.Random(0), doc, "s3://b/t/metadata/snap-1.avro") != "s3://b/t/metadata/snap-1.avro"


def test_json_mutations_write_what_they_say():
    doc = {"format-version": 2, "snapshots": [{"snapshot-id": 1}], "properties": {"a": "b"}}
    seen = set()
    for i in range(200):
        op, text = tf.mutate_json_doc(random.Random(i), json.loads(json.dumps(doc)))
        seen.add(op)
        if op == "nest":
            assert "[" * 100 in text or '{"a":' * 100 in text
        elif op in ("type", "drop", "number", "dangle", "huge-array", "huge-string"):
            assert text != json.dumps(doc)
    assert {"type", "drop", "number", "dangle", "huge-array", "huge-string", "nest", "shape"} <= seen


def test_verdicts_documented_escape_and_crash():
    run = tf.TableRun()
    assert run.step("open", lambda: (_ for _ in ()).throw(NotFoundError("gone")), tf._documented_open()) is None
    assert run.documented == ["open: NotFoundError"]
    with pytest.raises(fuzz_pool.Outcome) as escaped:
        run.step("files", lambda: (_ for _ in ()).throw(InvalidFileError("bad", None, "x")))
    assert escaped.value.kind == "escape" and escaped.value.detail.startswith("InvalidFileError")
    with pytest.raises(fuzz_pool.Outcome) as crashed:
        run.step("files", lambda: {}["missing"])
    assert crashed.value.kind == "crash" and crashed.value.step == "files"
    assert run.group(lambda: run.step("check", lambda: 1 / 0)) is None
    assert [f.kind for f in run.failures] == ["crash"] and run.failures[0].detail.startswith("ZeroDivisionError")


def test_the_command_line_is_run_in_process_and_judged(bases, monkeypatch, capsys):
    orders = next(b for b in bases if b.name == "warehouse:shop.orders")
    run = tf.TableRun()
    tf.run_cli(run, ["table", str(orders.root / orders.table), "summary"])  # a healthy table: exit 0
    tf.run_cli(run, ["table", "/nonexistent/table", "files"])  # exit 2 with a message: allowed
    assert run.failures == []
    import puffin_explorer.cli.table as table_cli

    monkeypatch.setattr(table_cli, "run", lambda args, shared: {}["a bug"])
    with pytest.raises(fuzz_pool.Outcome) as crashed:
        tf.run_cli(run, ["table", str(orders.root / orders.table), "files"])
    assert crashed.value.kind == "crash" and crashed.value.detail.startswith("KeyError")
    assert capsys.readouterr().out == ""  # the command's output went to the harness, not the terminal


def test_failure_classes_group_by_type_and_frame():
    recs = [{"case": 3, "outcome": "crash", "step": "check", "base": "b1", "file": "m/x.avro", "mutators": "m1",
             "detail": "KeyError at iceberg/table.py:139 snapshot: 'orders: no current snapshot'",
             "more": [["crash", "cli table files", "KeyError at iceberg/table.py:139 snapshot: 'x'"],
                      ["escape", "files", "InvalidFileError at iceberg/manifests.py:66 _avro_records: "
                                          "/tmp/tablefuzz-3-ab_c/shop/m.avro: 12 bytes"]]},
            {"case": 8, "outcome": "crash", "step": "check", "base": "b2", "file": "v.json", "mutators": "m2",
             "detail": "KeyError at iceberg/table.py:139 snapshot: 'events: no current snapshot'"},
            {"case": 9, "outcome": "stall", "step": "", "base": "b2", "file": "v.json", "mutators": "m3",
             "detail": "over 2.0 s of CPU (interrupted at iceberg/checks.py:10 walk)"}]
    classes = tf.failure_classes(recs)
    assert [(c["outcome"], c["type"], c["where"], c["cases"], c["count"]) for c in classes] == [
        ("crash", "KeyError", "iceberg/table.py:139 snapshot", [3, 8], 3),
        ("escape", "InvalidFileError", "iceberg/manifests.py:66 _avro_records", [3], 1),
        ("stall", "CPU limit", "iceberg/checks.py:10 walk", [9], 1)]
    assert classes[1]["shape"] == "<case>/shop/m.avro: N bytes"
    rep = fuzz_pool.Report(tf.OUTCOMES)
    for r in recs:
        rep.add(r)
    text = tf.classes_markdown(rep, seed=4)
    assert "## 1. crash: KeyError at iceberg/table.py:139 snapshot" in text
    assert "`python tests/fuzz/fuzz_tables.py --seed 4 --replay-case 3`" in text


def test_boundary_numbers_and_control_characters_reach_avro_and_json(bases):
    orders = next(b for b in bases if b.name == "warehouse:shop.orders")
    rel = next(r for r, kind, _ in orders.files if kind == "manifest-list")
    original = (orders.root / rel).read_bytes()
    seen = set()
    for i in range(60):
        name, data = tf.m_avro_values(random.Random(i), original, tf.CaseContext(orders, rel))
        _, _, records = _avro(data)
        values = [v for r in records for v in r.values()]
        if name.startswith("avro-boundary"):
            assert any(isinstance(v, int) and v in tf.BOUNDARY_INTS for v in values), name
            seen.add("boundary")
        elif name.startswith("avro-control"):
            assert any(isinstance(v, str) and any(c in v for c in tf.CONTROL_CHARS) for v in values), name
            seen.add("control")
    assert seen == {"boundary", "control"}
    doc = {"snapshots": [{"snapshot-id": 1, "manifest-list": "s3://b/t/metadata/snap-1.avro"}]}
    ops = {}
    for i in range(300):
        op, text = tf.mutate_json_doc(random.Random(i), json.loads(json.dumps(doc)))
        if op in ("boundary", "control"):
            ops.setdefault(op, json.loads(text))
    assert ops["boundary"]["snapshots"][0]["snapshot-id"] in tf.BOUNDARY_INTS
    assert any(c in ops["control"]["snapshots"][0]["manifest-list"] for c in tf.CONTROL_CHARS)
    # the suite's batch (seed 1) holds cases of each
    names = " ".join(tf.make_case(bases, 1, i).mutators for i in range(SUITE_CASES))
    assert all(k in names for k in ("avro-boundary", "avro-control", "json-boundary", "json-control"))
