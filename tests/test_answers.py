"""Every public call answers by the one rule (docs/answers.md), checked by calling it on the fixtures.

``ANSWERS`` names each public method and property of the package's public classes with the kind of its
answer and a call on a small fixture; the test fails when a class gains a public name the list does not
name, and when an answer is not of its kind.  A tabular answer of a table names where it came from in its
``attrs``; one that grows with the table also answers ``arrow=True`` with the same columns as a
``pyarrow.Table``.
"""

from __future__ import annotations

import inspect
import numbers
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import puffin_explorer as pe
from puffin_explorer.health import TableHealth
from puffin_explorer.iceberg.commits import CommitDeletes, TableSnapshot
from puffin_explorer.iceberg.overview import DeleteDebt
from puffin_explorer.regions import FindingList

from _warehouse_fixtures import FIXTURES, WAREHOUSE

NOW = "2026-11-28T00:00:00Z"
DELTA = FIXTURES / "engines/delta/kernel-rs-table-with-dv-small"

# the kinds of answer (docs/answers.md)
FRAME = "frame"  # a pandas DataFrame (of a table: attrs name its table and snapshot or version)
ARROW = "frame, or with arrow=True a pyarrow.Table"  # an answer that grows with the table
OBJECT = "an object of the package with a rich view"
PART = "a part of the model: an object of the package"
OBJECTS = "a list of objects of the package"
FINDINGS = "a FindingList"
SCALAR = "a scalar"
RECORD = "a dict of named fields (one record)"
JSON = "the JSON form of one thing (to_dict): a dict of JSON values"
LOOKUP = "a dict a caller looks keys up in"
NAMES = "a list of names"
POSITIONS = "a numpy array of row positions"
VIEW = "a view: an object with a rich view, a figure or a widget"
NONE = "nothing"


def _sid(t):
    return {"table": t.name, "snapshot_id": t.metadata.current_snapshot_id}


#: class -> (the fixture it is asked of (an attribute of :class:`Fixtures`), {kind: the names read plainly: a
#: property, or a method called with no argument}, {name: (kind, a call on the fixtures)} for the rest).  A call
#: of kind ARROW takes ``**kw``; a call of None is one of :data:`EXCEPTIONS`.
ANSWERS = {
    pe.Table: ("t", {
        ARROW: "data_files delete_files deleted_rows_per_file dvs entries files",
        FRAME: "manifests partition_spec puffin_files schema_fields snapshots sort_order statistics_files timeline",
        OBJECT: "delete_debt refresh snapshot",
        PART: "index io mapper metadata scope",
        FINDINGS: "card_findings findings manifest_list_findings",
        SCALAR: "card_health_up_to metadata_location name next_row_id",
        RECORD: "file_counts summary",
        LOOKUP: "fields_by_id",
        NONE: "raise_first_error",
    }, {
        "card_health": (OBJECT, lambda f: f.t.card_health(now=NOW)),
        "check": (FINDINGS, lambda f: f.t.check(progress=False)),
        "commit_deletes": (OBJECT, lambda f: f.commit),
        "delete_file_contents": (ARROW, lambda f, **kw: f.t.delete_file_contents(f.t.dvs().file_path.iloc[0], **kw)),
        "deletions": (POSITIONS, lambda f: f.t.deletions(f.t.dvs().referenced_data_file.iloc[0])),
        "files_of_kind": (FRAME, lambda f: f.t.files_of_kind(["dv"], limit=2)),
        "from_folder": (OBJECT, lambda f: pe.Table.from_folder(str(f.root / "shop/orders"))),
        "from_metadata": (OBJECT, lambda f: pe.Table.from_metadata(f.t.metadata_location)),
        "from_pyiceberg": (OBJECT, lambda f: pe.Table.from_pyiceberg(f.static)),
        "health": (OBJECT, lambda f: f.t.health(now=NOW, list_files=False)),
        "locate": (SCALAR, lambda f: f.t.locate(f.t.metadata_location)),
        "note": (NONE, lambda f: None),  # adds a finding: an action, nothing to answer
        "position_delete_counts": (FRAME, lambda f: f.legacy.position_delete_counts()),
        "puffin": (OBJECT, lambda f: f.t.puffin(f.t.dvs().file_path.iloc[0])),
        "read_dv": (OBJECT, lambda f: f.t.read_dv(f.t.dvs().referenced_data_file.iloc[0])),
        "read_dvs": (OBJECTS, lambda f: f.t.read_dvs(progress=False)),
        "read_parquet_columns": (SCALAR, None),
    }),
    pe.DeltaTable: ("d", {
        ARROW: "compaction_candidates deleted_rows_per_file dvs files",
        FRAME: "dv_files versions",
        OBJECT: "refresh",
        PART: "coverage scope",
        OBJECTS: "live_files",
        FINDINGS: "check findings",
        SCALAR: "card_health_up_to summary",
        RECORD: "metadata protocol totals",
        LOOKUP: "deletion_vectors",
        NAMES: "reader_features",
    }, {
        "card_health": (OBJECT, lambda f: f.d.card_health(now=NOW)),
        "deletions": (POSITIONS, lambda f: f.d.deletions(f.d.dvs().data_file.iloc[0])),
        "dv_file": (OBJECT, lambda f: f.dvfile),
        "dv_location": (SCALAR, lambda f: f.d.dv_location(f.d.live_files()[0].dv)),
        "health": (OBJECT, lambda f: f.d.health(now=NOW, list_files=False)),
        "locate": (SCALAR, lambda f: f.d.locate(f.d.live_files()[0].path)),
        "read_dv": (OBJECT, lambda f: f.d.read_dv(f.d.dvs().data_file.iloc[0])),
        "vanished_message": (SCALAR, lambda f: f.d.vanished_message("gone.bin", 2)),
    }),
    pe.Warehouse: ("wh", {
        FRAME: "summary tables to_pandas",
        NAMES: "namespaces table_names",
        RECORD: "storage_options",
    }, {
        "browse": (VIEW, lambda f: f.wh.browse(now=NOW)),
        "health": (FRAME, lambda f: f.wh.health(now=NOW, list_files=False)),
        "refresh": (NONE, lambda f: None),  # forgets what was listed: an action
        "table": (OBJECT, lambda f: f.wh.table("shop.orders")),
    }),
    TableSnapshot: ("snap", {
        FRAME: "changes files_added files_removed manifest_files to_pandas",
        OBJECT: "commit_deletes parent",
        SCALAR: "is_current operation",
    }, {
        "from_json": (PART, None),
        "of": (OBJECT, lambda f: TableSnapshot.of(f.t.source, f.t.metadata.snapshot())),
    }),
    CommitDeletes: ("commit", {
        FRAME: "to_pandas",
        VIEW: "chart",
        SCALAR: "total",
    }, {
        "positions": (POSITIONS, lambda f: f.commit.positions(f.t.dvs().referenced_data_file.iloc[0])),
    }),
    DeleteDebt: ("debt", {
        FRAME: "candidates per_file per_partition position_delete_files to_pandas",
        SCALAR: "candidate_count counted_deleted_rows counted_records data_files deleted_rows deleted_share partial "
                "records",
    }, {}),
    TableHealth: ("h", {
        FRAME: "checks findings_frame",
        NAMES: "actions codes plan unknown",
        SCALAR: "listed status top_problem",
        JSON: "to_dict",
    }, {
        "at_least": (OBJECTS, lambda f: f.h.at_least("info")),
        "finding": (PART, lambda f: f.h.finding(f.h.codes()[0])),
        "partial_count": (SCALAR, lambda f: f.h.partial_count("deleted_rows")),
    }),
    pe.PuffinFile: ("pf", {
        FRAME: "blob_table to_pandas",
        OBJECT: "regions",
        FINDINGS: "findings validate",
        SCALAR: "bare_dv delta_file footer_size is_valid",  # bare_dv, delta_file: None for a Puffin file
        JSON: "to_dict",
    }, {
        "blob_summaries": (RECORD, None),
        "decode_blob": (OBJECT, lambda f: f.pf.decode_blob(f.pf.blobs[1])),
        "hex": (VIEW, lambda f: f.pf.hex(0, 64)),
        "read_blob": (SCALAR, lambda f: f.pf.read_blob(f.pf.blobs[1])),
        "read_dv": (OBJECT, lambda f: f.pf.read_dv(f.pf.blobs[1].offset, f.pf.blobs[1].length)),
        "read_stored": (SCALAR, lambda f: f.pf.read_stored(f.pf.blobs[1])),
    }),
    pe.BlobMetadata: ("blob", {
        OBJECT: "decode file",
        SCALAR: "compression_codec end read read_stored readable",
        RECORD: "to_dict",
    }, {}),
    pe.DeletionVector: ("dv", {
        FRAME: "containers ranges to_pandas",
        OBJECT: "region_tree",
        OBJECTS: "regions",
        POSITIONS: "head positions",
        SCALAR: "blob_type cardinality crc_ok is_valid max_position min_position nbytes referenced_data_file run_count "
                "summary to_bytes",
        LOOKUP: "container_summary",
        VIEW: "plot",
    }, {
        "contains": (SCALAR, lambda f: f.dv.contains(0)),
        "difference": (OBJECT, lambda f: f.dv.difference(f.dv)),
        "edge_positions": (SCALAR, None),
        "from_bytes": (OBJECT, lambda f: pe.DeletionVector.from_bytes(f.dv.to_bytes())),
        "from_positions": (OBJECT, lambda f: pe.DeletionVector.from_positions([1, 2, 3])),
        "intersection": (OBJECT, lambda f: f.dv.intersection(f.dv)),
        "union": (OBJECT, lambda f: f.dv.union(f.dv)),
    }),
    pe.ThetaSketch: ("theta", {
        FRAME: "to_pandas",
        OBJECT: "region_tree",
        OBJECTS: "regions",
        SCALAR: "blob_type estimate expected_ndv is_empty is_estimation_mode is_ordered lower_bound nbytes ndv_agrees "
                "ndv_number ndv_property num_retained summary theta upper_bound",
        LOOKUP: "bounds",
    }, {
        "from_bytes": (OBJECT, lambda f: pe.ThetaSketch.from_bytes(f.stats.read_blob(f.stats.blobs[0]))),
    }),
    pe.RawBlob: ("raw", {
        OBJECTS: "regions",
        SCALAR: "blob_type nbytes size stored_size summary text",
    }, {}),
    pe.PuffinWriter: ("writer", {
        SCALAR: "footer_json to_bytes",
    }, {
        "add_blob": (RECORD, lambda f: pe.PuffinWriter().add_blob(b"x", "custom", [1])),
        "add_dv": (RECORD, lambda f: pe.PuffinWriter().add_dv([1, 5], "s3://b/f.parquet")),
        "add_raw_blob": (RECORD, lambda f: pe.PuffinWriter().add_raw_blob(b"x", "custom", [1])),
        "add_theta": (RECORD, lambda f: pe.PuffinWriter().add_theta(f.stats.read_blob(f.stats.blobs[0]), 1, 1, 1)),
        "write": (SCALAR, lambda f: pe.PuffinWriter().write(str(f.tmp / "w.puffin"))),
    }),
    pe.ParquetLayout: ("pl", {
        FRAME: "column_chunks pages row_groups",
        OBJECT: "regions",
        SCALAR: "bytes_read created_by num_rows",
        LOOKUP: "key_value_metadata",
    }, {
        "hex": (VIEW, lambda f: f.pl.hex(0, 64)),
        "overlay": (OBJECT, lambda f: f.overlay),
    }),
    pe.DeletionOverlay: ("overlay", {
        VIEW: "chart",
        SCALAR: "fully_deleted_bytes share summary",
    }, {}),
    pe.DeltaDVFile: ("dvfile", {
        OBJECT: "regions",
        FINDINGS: "file_findings findings",
        SCALAR: "is_valid summary",
        FRAME: "to_pandas",
    }, {
        "container_of": (PART, lambda f: f.dvfile.container_of(1)),
        "dv_at": (PART, lambda f: f.dvfile.dv_at(1)),
        "hex": (VIEW, lambda f: f.dvfile.hex(0, 64)),
    }),
}


def _calls(cls) -> dict:
    """Every public name of ``cls`` in :data:`ANSWERS`: name -> (kind, call on the fixtures)."""
    subject, plain, special = ANSWERS[cls]
    out = {}
    for kind, names in plain.items():
        for name in names.split():
            out[name] = (kind, _plain_call(subject, name))
    out.update(special)
    return out


def _plain_call(subject: str, name: str):
    """The call of a name read plainly: the property's value, or the method called with ``**kw`` alone."""
    def call(f, **kw):
        value = getattr(getattr(f, subject), name)
        return value(**kw) if inspect.ismethod(value) else value
    return call


#: The answers that break the rule today, each with its reason (shrink this list; never grow it).
EXCEPTIONS = {
    (pe.PuffinFile, "blob_summaries"): "a list of dicts: the rows the Puffin file's view draws (to_pandas() is "
                                       "the table of them); format/ is being split, its change waits for that",
    (pe.DeletionVector, "edge_positions"): "a pair of short lists, the first and last positions a view prints",
    (pe.Table, "read_parquet_columns"): "a pyarrow.Table of a Parquet file's own columns, as pyarrow reads them",
    (TableSnapshot, "from_json"): "the metadata's Snapshot reader, inherited",
}

#: The module-level names ``puffin_explorer`` exports, and what each is.
EXPORTS = {
    "PuffinFile": "class", "BlobMetadata": "class", "DeletionVector": "class", "ThetaSketch": "class",
    "RawBlob": "class", "PuffinWriter": "class", "Table": "class", "Warehouse": "class", "ParquetLayout": "class",
    "DeletionOverlay": "class", "DeltaTable": "class", "DeltaDVFile": "class", "FindingList": "class",
    "Region": "class", "Finding": "class", "Severity": "class", "RenderOptions": "class",
    "PuffinError": "error", "InvalidFileError": "error", "BlobDecodeError": "error", "SourceError": "error",
    "UnsupportedCodecError": "error",
    "read_dv": OBJECT, "register_decoder": NONE, "register_view": NONE, "view": VIEW, "show_versions": NONE,
}

#: ``puffin_explorer.spark``'s public functions: a tabular answer there is a Spark DataFrame (it grows with the
#: table and stays on the cluster), except the few rows of metadata read on the driver (a pandas DataFrame).
SPARK_DATAFRAME = "a Spark DataFrame"
SPARK = {
    "session": PART, "add_catalog": NONE, "runtime_jar": SCALAR, "check_java": SCALAR, "check_runtime_jar": SCALAR,
    "ship_package": NONE, "puffin_inventory": SPARK_DATAFRAME, "dv_positions": SPARK_DATAFRAME,
    "dv_facts": SPARK_DATAFRAME, "dv_metadata": SPARK_DATAFRAME, "deleted_rows": SPARK_DATAFRAME,
    "deletion_report": SPARK_DATAFRAME, "check": SPARK_DATAFRAME, "resolve_data_file": SCALAR, "plan": RECORD,
    "plan_table": PART, "TablePlan": "class", "spark_errors": "context manager", "spark_error": "error",
    "SparkJobError": "error", "SparkSetupError": "error", "metadata_table": SPARK_DATAFRAME,
    "read_table": SPARK_DATAFRAME, "current_metadata_location": SCALAR, "statistics_files": FRAME,
    "health": OBJECT,
}


def _public(cls) -> set[str]:
    """The public names a class defines or inherits from a class of the package (the rich-repr hooks aside)."""
    out = set()
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if owner.__module__.startswith("puffin_explorer") and owner.__name__ != "RichRepr":
            out.add(name)
    return out


def test_every_public_name_has_its_answer_listed():
    """A new public method or property fails here until ``ANSWERS`` names its answer's kind; so does a new export
    of the package or of ``puffin_explorer.spark``."""
    from puffin_explorer import spark as pes

    for cls in ANSWERS:
        assert set(_calls(cls)) == _public(cls), cls.__name__
    assert set(EXPORTS) == set(pe.__all__)
    assert set(SPARK) == set(pes.__all__)
    assert all(_calls(cls)[name][1] is None for cls, name in EXCEPTIONS)


class Fixtures:
    """The small fixture tables and files every call is made on (opened once)."""

    def __init__(self, tmp) -> None:
        from pyiceberg.table import StaticTable

        self.tmp = tmp
        self.root = tmp / "warehouse"  # a warehouse of shop.orders alone: its doctor runs once
        shutil.copytree(WAREHOUSE / "shop/orders", self.root / "shop/orders")
        self.wh = pe.Warehouse(str(self.root))
        self.t = self.wh.table("shop.orders")
        self.legacy = pe.Table.from_folder(str(WAREHOUSE / "shop/legacy"), name="shop.legacy")
        self.static = StaticTable.from_metadata(self.t.metadata_location)
        self.snap = self.t.snapshot()
        self.commit = self.t.commit_deletes()
        self.debt = self.t.delete_debt()
        self.h = self.t.health(now=NOW, list_files=False)
        self.d = pe.DeltaTable(str(DELTA))
        self.dvfile = self.d.dv_file(self.d.dv_files().dv_file.iloc[0])
        self.pf = pe.PuffinFile("resources/multi-dv.puffin")
        self.blob = self.pf.blobs[1]
        self.dv = self.blob.decode()
        self.stats = pe.PuffinFile("resources/stats-theta.puffin")
        self.theta = self.stats.blobs[0].decode()
        w = pe.PuffinWriter()
        w.add_raw_blob(b"custom payload", "custom-blob", [1])
        self.raw = pe.PuffinFile(w.to_bytes()).blobs[0].decode()
        self.writer = w
        self.pl = pe.ParquetLayout("resources/spark-orders-data.parquet")
        self.overlay = self.pl.overlay([0, 1, 2])


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return Fixtures(tmp_path_factory.mktemp("answers"))


def _origin(cls, got, f) -> dict:
    """What a tabular answer's ``attrs`` must name: its table and snapshot or version (none for a file's)."""
    if cls in (pe.Table, TableSnapshot, CommitDeletes, DeleteDebt):
        return _sid(f.t) if got.attrs.get("table") != "shop.legacy" else _sid(f.legacy)
    if cls is pe.DeltaTable:
        return {"table": f.d.name, "version": f.d.version}
    if cls is pe.Warehouse:
        return {"warehouse": f.wh.root}
    if cls is TableHealth:
        return {"table": f.h.table}
    return {}


def _is_package_object(got) -> bool:
    return type(got).__module__.startswith("puffin_explorer")


def _has_view(got) -> bool:
    return any(hasattr(got, name) for name in ("_repr_mimebundle_", "_repr_html_", "savefig"))


def _check(kind: str, got, cls, f) -> None:
    if kind in (FRAME, ARROW):
        assert isinstance(got, pd.DataFrame)
        for key, value in _origin(cls, got, f).items():
            assert got.attrs.get(key) == value, key
    elif kind == OBJECT:
        assert got is None or (_is_package_object(got) and _has_view(got)), type(got)
    elif kind == PART:
        assert got is None or _is_package_object(got), type(got)
    elif kind == OBJECTS:
        assert isinstance(got, list) and all(_is_package_object(x) for x in got)
    elif kind == FINDINGS:
        assert isinstance(got, FindingList)
    elif kind == SCALAR:
        assert got is None or isinstance(got, (numbers.Number, str, bytes, bool)), type(got)
    elif kind == JSON:
        assert isinstance(got, dict) and all(isinstance(k, str) for k in got)
    elif kind in (RECORD, LOOKUP):
        assert isinstance(got, dict)
        assert not any(isinstance(v, list) and v and isinstance(v[0], dict) for v in got.values())
        if kind == RECORD:
            assert all(isinstance(k, str) for k in got)
    elif kind == NAMES:
        assert isinstance(got, list) and all(isinstance(x, str) for x in got)
    elif kind == POSITIONS:
        assert isinstance(got, np.ndarray) and got.dtype.kind in "iu"
    elif kind == VIEW:
        assert _has_view(got) or type(got).__module__.startswith("ipywidgets"), type(got)
    elif kind == NONE:
        assert got is None
    else:  # pragma: no cover - a kind the rule does not have
        raise AssertionError(kind)


@pytest.mark.parametrize("cls", list(ANSWERS), ids=lambda c: c.__name__)
def test_every_answer_is_of_its_kind(fx, cls):
    """Each listed call, made on the fixtures, answers its kind; an ``ARROW`` call with ``arrow=True`` answers
    the same columns and rows as a ``pyarrow.Table`` naming its origin in the schema's metadata."""
    for name, (kind, call) in _calls(cls).items():
        if call is None:
            assert (cls, name) in EXCEPTIONS, name
            continue
        got = call(fx)
        try:
            _check(kind, got, cls, fx)
        except AssertionError as exc:
            raise AssertionError(f"{cls.__name__}.{name}: {exc}") from exc
        if kind == ARROW:
            table = call(fx, arrow=True)
            assert isinstance(table, pa.Table) and table.column_names == list(got.columns), name
            assert table.num_rows == len(got), name
            meta = table.schema.metadata
            assert meta[b"table"] == str(_origin(cls, got, fx)["table"]).encode(), name


def test_the_fixture_answers_name_their_snapshot_and_hold_the_known_rows(fx):
    """shop.orders' current snapshot: 8 data files, 4 DVs (one per bucket's rewritten files), 12 entries; the
    kernel-rs Delta table at version 1: one data file with a DV of 2 positions."""
    t, d = fx.t, fx.d
    sid = t.metadata.current_snapshot_id
    assert len(t.data_files()) == 8 and len(t.dvs()) == 4 and len(t.entries()) == 12
    assert {k: t.dvs().attrs[k] for k in ("table", "snapshot_id")} == {"table": "shop.orders", "snapshot_id": sid}
    arrow = t.dvs(arrow=True)
    assert arrow.schema.metadata[b"snapshot_id"] == str(sid).encode()
    assert t.entries().record_count.dtype == "Int64" and set(t.entries().kind) == {"data", "dv"}
    assert d.dvs().attrs == {"table": "kernel-rs-table-with-dv-small", "version": 1}
    assert d.dvs().cardinality.tolist() == [2]
    assert d.versions().version.tolist() == [0, 1] and d.dv_files().cardinality.tolist() == [2]
    counts = fx.legacy.position_delete_counts()
    assert list(counts.columns) == ["data_file", "position_deletes", "position_delete_files"]
    assert counts.position_delete_files.tolist() == [1]
