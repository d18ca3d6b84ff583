"""Every public call answers by the one rule (docs/answers.md), checked by calling it on the fixtures.

``ANSWERS`` names each public method and property of the package's public classes with the kind of its
answer and a call on a small fixture; the test fails when a class gains a public name the list does not
name, and when an answer is not of its kind.  A tabular answer of a table names where it came from in its
``attrs``; one that grows with the table also answers ``arrow=True`` with the same columns as a
``pyarrow.Table``.
"""

from __future__ import annotations

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


#: class -> public name -> (kind, call on the fixtures of :func:`fx`).  Calls of ARROW take ``**kw``.
ANSWERS = {
    pe.Table: {
        "card_findings": (FINDINGS, lambda f: f.t.card_findings()),
        "card_health": (OBJECT, lambda f: f.t.card_health(now=NOW)),
        "card_health_up_to": (SCALAR, lambda f: f.t.card_health_up_to),
        "check": (FINDINGS, lambda f: f.t.check(progress=False)),
        "commit_deletes": (OBJECT, lambda f: f.commit),
        "data_files": (ARROW, lambda f, **kw: f.t.data_files(**kw)),
        "delete_debt": (OBJECT, lambda f: f.t.delete_debt()),
        "delete_file_contents": (ARROW, lambda f, **kw: f.t.delete_file_contents(f.t.dvs().file_path.iloc[0], **kw)),
        "delete_files": (ARROW, lambda f, **kw: f.t.delete_files(**kw)),
        "deleted_rows_per_file": (ARROW, lambda f, **kw: f.t.deleted_rows_per_file(**kw)),
        "deletions": (POSITIONS, lambda f: f.t.deletions(f.t.dvs().referenced_data_file.iloc[0])),
        "dvs": (ARROW, lambda f, **kw: f.t.dvs(**kw)),
        "entries": (ARROW, lambda f, **kw: f.t.entries(**kw)),
        "fields_by_id": (LOOKUP, lambda f: f.t.fields_by_id()),
        "file_counts": (RECORD, lambda f: f.t.file_counts()),
        "files": (ARROW, lambda f, **kw: f.t.files(**kw)),
        "files_of_kind": (FRAME, lambda f: f.t.files_of_kind(["dv"], limit=2)),
        "findings": (FINDINGS, lambda f: f.t.findings),
        "from_folder": (OBJECT, lambda f: pe.Table.from_folder(str(f.root / "shop/orders"))),
        "from_metadata": (OBJECT, lambda f: pe.Table.from_metadata(f.t.metadata_location)),
        "from_pyiceberg": (OBJECT, lambda f: pe.Table.from_pyiceberg(f.static)),
        "health": (OBJECT, lambda f: f.t.health(now=NOW, list_files=False)),
        "index": (PART, lambda f: f.t.index()),
        "io": (PART, lambda f: f.t.io),
        "locate": (SCALAR, lambda f: f.t.locate(f.t.metadata_location)),
        "manifest_list_findings": (FINDINGS, lambda f: f.t.manifest_list_findings()),
        "manifests": (FRAME, lambda f: f.t.manifests()),
        "mapper": (PART, lambda f: f.t.mapper),
        "metadata": (PART, lambda f: f.t.metadata),
        "metadata_location": (SCALAR, lambda f: f.t.metadata_location),
        "name": (SCALAR, lambda f: f.t.name),
        "next_row_id": (SCALAR, lambda f: f.t.next_row_id),
        "note": (NONE, lambda f: None),  # adds a finding: an action, nothing to answer
        "partition_spec": (FRAME, lambda f: f.t.partition_spec()),
        "position_delete_counts": (FRAME, lambda f: f.legacy.position_delete_counts()),
        "puffin": (OBJECT, lambda f: f.t.puffin(f.t.dvs().file_path.iloc[0])),
        "puffin_files": (FRAME, lambda f: f.t.puffin_files()),
        "raise_first_error": (NONE, lambda f: f.t.raise_first_error()),
        "read_dv": (OBJECT, lambda f: f.t.read_dv(f.t.dvs().referenced_data_file.iloc[0])),
        "read_dvs": (OBJECTS, lambda f: f.t.read_dvs(progress=False)),
        "read_parquet_columns": (SCALAR, None),  # a pyarrow.Table of a file's own columns: see below
        "refresh": (OBJECT, lambda f: f.t.refresh()),
        "schema_fields": (FRAME, lambda f: f.t.schema_fields()),
        "scope": (PART, lambda f: f.t.scope),
        "snapshot": (OBJECT, lambda f: f.t.snapshot()),
        "snapshots": (FRAME, lambda f: f.t.snapshots()),
        "sort_order": (FRAME, lambda f: f.t.sort_order()),
        "statistics_files": (FRAME, lambda f: f.t.statistics_files()),
        "summary": (RECORD, lambda f: f.t.summary()),
        "timeline": (FRAME, lambda f: f.t.timeline()),
    },
    pe.DeltaTable: {
        "card_health": (OBJECT, lambda f: f.d.card_health(now=NOW)),
        "card_health_up_to": (SCALAR, lambda f: f.d.card_health_up_to),
        "check": (FINDINGS, lambda f: f.d.check()),
        "compaction_candidates": (ARROW, lambda f, **kw: f.d.compaction_candidates(**kw)),
        "coverage": (PART, lambda f: f.d.coverage),
        "deleted_rows_per_file": (ARROW, lambda f, **kw: f.d.deleted_rows_per_file(**kw)),
        "deletion_vectors": (LOOKUP, lambda f: f.d.deletion_vectors()),
        "deletions": (POSITIONS, lambda f: f.d.deletions(f.d.dvs().data_file.iloc[0])),
        "dv_file": (OBJECT, lambda f: f.d.dv_file(f.d.dv_files().dv_file.iloc[0])),
        "dv_files": (FRAME, lambda f: f.d.dv_files()),
        "dv_location": (SCALAR, lambda f: f.d.dv_location(f.d.live_files()[0].dv)),
        "dvs": (ARROW, lambda f, **kw: f.d.dvs(**kw)),
        "files": (ARROW, lambda f, **kw: f.d.files(**kw)),
        "findings": (FINDINGS, lambda f: f.d.findings),
        "health": (OBJECT, lambda f: f.d.health(now=NOW, list_files=False)),
        "live_files": (OBJECTS, lambda f: f.d.live_files()),
        "locate": (SCALAR, lambda f: f.d.locate(f.d.live_files()[0].path)),
        "metadata": (RECORD, lambda f: f.d.metadata),
        "protocol": (RECORD, lambda f: f.d.protocol),
        "read_dv": (OBJECT, lambda f: f.d.read_dv(f.d.dvs().data_file.iloc[0])),
        "reader_features": (NAMES, lambda f: f.d.reader_features),
        "refresh": (OBJECT, lambda f: f.d.refresh()),
        "scope": (PART, lambda f: f.d.scope),
        "summary": (SCALAR, lambda f: f.d.summary()),
        "totals": (RECORD, lambda f: f.d.totals()),
        "vanished_message": (SCALAR, lambda f: f.d.vanished_message("gone.bin", 2)),
        "versions": (FRAME, lambda f: f.d.versions()),
    },
    pe.Warehouse: {
        "browse": (VIEW, lambda f: f.wh.browse(now=NOW)),
        "health": (FRAME, lambda f: f.wh.health(now=NOW, list_files=False)),
        "namespaces": (NAMES, lambda f: f.wh.namespaces()),
        "refresh": (NONE, lambda f: None),  # forgets what was listed: an action
        "storage_options": (RECORD, lambda f: f.wh.storage_options),
        "summary": (FRAME, lambda f: f.wh.summary()),
        "table": (OBJECT, lambda f: f.wh.table("shop.orders")),
        "table_names": (NAMES, lambda f: f.wh.table_names()),
        "tables": (FRAME, lambda f: f.wh.tables()),
        "to_pandas": (FRAME, lambda f: f.wh.to_pandas()),
    },
    TableSnapshot: {
        "changes": (FRAME, lambda f: f.snap.changes()),
        "commit_deletes": (OBJECT, lambda f: f.snap.commit_deletes()),
        "files_added": (FRAME, lambda f: f.snap.files_added()),
        "files_removed": (FRAME, lambda f: f.snap.files_removed()),
        "from_json": (PART, None),  # the metadata's own reader (a Snapshot of a JSON object)
        "is_current": (SCALAR, lambda f: f.snap.is_current),
        "manifest_files": (FRAME, lambda f: f.snap.manifest_files()),
        "of": (OBJECT, lambda f: TableSnapshot.of(f.t.source, f.t.metadata.snapshot())),
        "operation": (SCALAR, lambda f: f.snap.operation),
        "parent": (OBJECT, lambda f: f.snap.parent),
        "to_pandas": (FRAME, lambda f: f.snap.to_pandas()),
    },
    CommitDeletes: {
        "chart": (VIEW, lambda f: f.commit.chart()),
        "positions": (POSITIONS, lambda f: f.commit.positions(f.t.dvs().referenced_data_file.iloc[0])),
        "to_pandas": (FRAME, lambda f: f.commit.to_pandas()),
        "total": (SCALAR, lambda f: f.commit.total),
    },
    DeleteDebt: {
        "candidate_count": (SCALAR, lambda f: f.debt.candidate_count),
        "candidates": (FRAME, lambda f: f.debt.candidates()),
        "counted_deleted_rows": (SCALAR, lambda f: f.debt.counted_deleted_rows),
        "counted_records": (SCALAR, lambda f: f.debt.counted_records),
        "data_files": (SCALAR, lambda f: f.debt.data_files),
        "deleted_rows": (SCALAR, lambda f: f.debt.deleted_rows),
        "deleted_share": (SCALAR, lambda f: f.debt.deleted_share),
        "partial": (SCALAR, lambda f: f.debt.partial),
        "per_file": (FRAME, lambda f: f.debt.per_file),
        "per_partition": (FRAME, lambda f: f.debt.per_partition()),
        "position_delete_files": (FRAME, lambda f: f.debt.position_delete_files()),
        "records": (SCALAR, lambda f: f.debt.records),
        "to_pandas": (FRAME, lambda f: f.debt.to_pandas()),
    },
    TableHealth: {
        "actions": (NAMES, lambda f: f.h.actions()),
        "at_least": (OBJECTS, lambda f: f.h.at_least("info")),
        "checks": (FRAME, lambda f: f.h.checks()),
        "codes": (NAMES, lambda f: f.h.codes()),
        "finding": (PART, lambda f: f.h.finding(f.h.codes()[0])),
        "findings_frame": (FRAME, lambda f: f.h.findings_frame()),
        "listed": (SCALAR, lambda f: f.h.listed),
        "partial_count": (SCALAR, lambda f: f.h.partial_count("deleted_rows")),
        "plan": (NAMES, lambda f: f.h.plan()),
        "status": (SCALAR, lambda f: f.h.status),
        "to_dict": (JSON, lambda f: f.h.to_dict()),
        "top_problem": (SCALAR, lambda f: f.h.top_problem),
        "unknown": (NAMES, lambda f: f.h.unknown()),
    },
    pe.PuffinFile: {
        "bare_dv": (SCALAR, lambda f: f.pf.bare_dv),  # None: a Puffin file, not a DV alone
        "blob_summaries": (RECORD, None),  # the rows the file's view draws: see EXCEPTIONS
        "blob_table": (FRAME, lambda f: f.pf.blob_table()),
        "decode_blob": (OBJECT, lambda f: f.pf.decode_blob(f.pf.blobs[1])),
        "delta_file": (SCALAR, lambda f: f.pf.delta_file),  # None: not a Delta DV file
        "findings": (FINDINGS, lambda f: f.pf.findings),
        "footer_size": (SCALAR, lambda f: f.pf.footer_size),
        "hex": (VIEW, lambda f: f.pf.hex(0, 64)),
        "is_valid": (SCALAR, lambda f: f.pf.is_valid),
        "read_blob": (SCALAR, lambda f: f.pf.read_blob(f.pf.blobs[1])),
        "read_dv": (OBJECT, lambda f: f.pf.read_dv(f.pf.blobs[1].offset, f.pf.blobs[1].length)),
        "read_stored": (SCALAR, lambda f: f.pf.read_stored(f.pf.blobs[1])),
        "regions": (OBJECT, lambda f: f.pf.regions()),
        "to_dict": (JSON, lambda f: f.pf.to_dict()),
        "to_pandas": (FRAME, lambda f: f.pf.to_pandas()),
        "validate": (FINDINGS, lambda f: f.pf.validate()),
    },
    pe.BlobMetadata: {
        "compression_codec": (SCALAR, lambda f: f.pf.blobs[1].compression_codec),
        "decode": (OBJECT, lambda f: f.pf.blobs[1].decode()),
        "end": (SCALAR, lambda f: f.pf.blobs[1].end),
        "file": (OBJECT, lambda f: f.pf.blobs[1].file),
        "read": (SCALAR, lambda f: f.pf.blobs[1].read()),
        "read_stored": (SCALAR, lambda f: f.pf.blobs[1].read_stored()),
        "readable": (SCALAR, lambda f: f.pf.blobs[1].readable),
        "to_dict": (RECORD, lambda f: f.pf.blobs[1].to_dict()),
    },
    pe.DeletionVector: {
        "blob_type": (SCALAR, lambda f: f.dv.blob_type),
        "cardinality": (SCALAR, lambda f: f.dv.cardinality),
        "container_summary": (LOOKUP, lambda f: f.dv.container_summary()),
        "containers": (FRAME, lambda f: f.dv.containers()),
        "contains": (SCALAR, lambda f: f.dv.contains(0)),
        "crc_ok": (SCALAR, lambda f: f.dv.crc_ok),
        "difference": (OBJECT, lambda f: f.dv.difference(f.dv)),
        "edge_positions": (SCALAR, None),  # a pair of short lists (first and last positions): see EXCEPTIONS
        "from_bytes": (OBJECT, lambda f: pe.DeletionVector.from_bytes(f.dv.to_bytes())),
        "from_positions": (OBJECT, lambda f: pe.DeletionVector.from_positions([1, 2, 3])),
        "head": (POSITIONS, lambda f: f.dv.head()),
        "intersection": (OBJECT, lambda f: f.dv.intersection(f.dv)),
        "is_valid": (SCALAR, lambda f: f.dv.is_valid),
        "max_position": (SCALAR, lambda f: f.dv.max_position),
        "min_position": (SCALAR, lambda f: f.dv.min_position),
        "nbytes": (SCALAR, lambda f: f.dv.nbytes),
        "plot": (VIEW, lambda f: f.dv.plot()),
        "positions": (POSITIONS, lambda f: f.dv.positions()),
        "ranges": (FRAME, lambda f: f.dv.ranges()),
        "referenced_data_file": (SCALAR, lambda f: f.dv.referenced_data_file),
        "region_tree": (OBJECT, lambda f: f.dv.region_tree()),
        "regions": (OBJECTS, lambda f: f.dv.regions()),
        "run_count": (SCALAR, lambda f: f.dv.run_count()),
        "summary": (SCALAR, lambda f: f.dv.summary()),
        "to_bytes": (SCALAR, lambda f: f.dv.to_bytes()),
        "to_pandas": (FRAME, lambda f: f.dv.to_pandas()),
        "union": (OBJECT, lambda f: f.dv.union(f.dv)),
    },
    pe.ThetaSketch: {
        "blob_type": (SCALAR, lambda f: f.theta.blob_type),
        "bounds": (LOOKUP, lambda f: f.theta.bounds()),
        "estimate": (SCALAR, lambda f: f.theta.estimate),
        "expected_ndv": (SCALAR, lambda f: f.theta.expected_ndv),
        "from_bytes": (OBJECT, lambda f: pe.ThetaSketch.from_bytes(f.stats.read_blob(f.stats.blobs[0]))),
        "is_empty": (SCALAR, lambda f: f.theta.is_empty),
        "is_estimation_mode": (SCALAR, lambda f: f.theta.is_estimation_mode),
        "is_ordered": (SCALAR, lambda f: f.theta.is_ordered),
        "lower_bound": (SCALAR, lambda f: f.theta.lower_bound()),
        "nbytes": (SCALAR, lambda f: f.theta.nbytes),
        "ndv_agrees": (SCALAR, lambda f: f.theta.ndv_agrees),
        "ndv_number": (SCALAR, lambda f: f.theta.ndv_number),
        "ndv_property": (SCALAR, lambda f: f.theta.ndv_property),
        "num_retained": (SCALAR, lambda f: f.theta.num_retained),
        "region_tree": (OBJECT, lambda f: f.theta.region_tree()),
        "regions": (OBJECTS, lambda f: f.theta.regions()),
        "summary": (SCALAR, lambda f: f.theta.summary()),
        "theta": (SCALAR, lambda f: f.theta.theta),
        "to_pandas": (FRAME, lambda f: f.theta.to_pandas()),
        "upper_bound": (SCALAR, lambda f: f.theta.upper_bound()),
    },
    pe.RawBlob: {
        "blob_type": (SCALAR, lambda f: f.raw.blob_type),
        "nbytes": (SCALAR, lambda f: f.raw.nbytes),
        "regions": (OBJECTS, lambda f: f.raw.regions()),
        "size": (SCALAR, lambda f: f.raw.size),
        "stored_size": (SCALAR, lambda f: f.raw.stored_size),
        "summary": (SCALAR, lambda f: f.raw.summary()),
        "text": (SCALAR, lambda f: f.raw.text),
    },
    pe.PuffinWriter: {
        "add_blob": (RECORD, lambda f: pe.PuffinWriter().add_blob(b"x", "custom", [1])),
        "add_dv": (RECORD, lambda f: pe.PuffinWriter().add_dv([1, 5], "s3://b/f.parquet")),
        "add_raw_blob": (RECORD, lambda f: pe.PuffinWriter().add_raw_blob(b"x", "custom", [1])),
        "add_theta": (RECORD, lambda f: pe.PuffinWriter().add_theta(f.stats.read_blob(f.stats.blobs[0]), 1, 1, 1)),
        "footer_json": (SCALAR, lambda f: pe.PuffinWriter().footer_json()),
        "to_bytes": (SCALAR, lambda f: pe.PuffinWriter().to_bytes()),
        "write": (SCALAR, lambda f: pe.PuffinWriter().write(str(f.tmp / "w.puffin"))),
    },
    pe.ParquetLayout: {
        "bytes_read": (SCALAR, lambda f: f.pl.bytes_read),
        "column_chunks": (FRAME, lambda f: f.pl.column_chunks()),
        "created_by": (SCALAR, lambda f: f.pl.created_by),
        "hex": (VIEW, lambda f: f.pl.hex(0, 64)),
        "key_value_metadata": (LOOKUP, lambda f: f.pl.key_value_metadata),
        "num_rows": (SCALAR, lambda f: f.pl.num_rows),
        "overlay": (OBJECT, lambda f: f.pl.overlay([0, 1, 2])),
        "pages": (FRAME, lambda f: f.pl.pages()),
        "regions": (OBJECT, lambda f: f.pl.regions()),
        "row_groups": (FRAME, lambda f: f.pl.row_groups()),
    },
    pe.DeletionOverlay: {
        "chart": (VIEW, lambda f: f.pl.overlay([0, 1, 2]).chart()),
        "fully_deleted_bytes": (SCALAR, lambda f: f.pl.overlay([0, 1, 2]).fully_deleted_bytes),
        "share": (SCALAR, lambda f: f.pl.overlay([0, 1, 2]).share),
        "summary": (SCALAR, lambda f: f.pl.overlay([0, 1, 2]).summary()),
    },
    pe.DeltaDVFile: {
        "container_of": (PART, lambda f: f.dvfile.container_of(1)),
        "dv_at": (PART, lambda f: f.dvfile.dv_at(1)),
        "file_findings": (FINDINGS, lambda f: f.dvfile.file_findings),
        "findings": (FINDINGS, lambda f: f.dvfile.findings),
        "hex": (VIEW, lambda f: f.dvfile.hex(0, 64)),
        "is_valid": (SCALAR, lambda f: f.dvfile.is_valid),
        "regions": (OBJECT, lambda f: f.dvfile.regions()),
        "summary": (SCALAR, lambda f: f.dvfile.summary()),
        "to_pandas": (FRAME, lambda f: f.dvfile.to_pandas()),
    },
}

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

    for cls, answers in ANSWERS.items():
        assert set(answers) == _public(cls), cls.__name__
    assert set(EXPORTS) == set(pe.__all__)
    assert set(SPARK) == set(pes.__all__)
    assert all(name in ANSWERS[cls] for cls, name in EXCEPTIONS)


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
        self.dv = self.pf.blobs[1].decode()
        self.stats = pe.PuffinFile("resources/stats-theta.puffin")
        self.theta = self.stats.blobs[0].decode()
        w = pe.PuffinWriter()
        w.add_raw_blob(b"custom payload", "custom-blob", [1])
        self.raw = pe.PuffinFile(w.to_bytes()).blobs[0].decode()
        self.pl = pe.ParquetLayout("resources/spark-orders-data.parquet")


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
    for name, (kind, call) in ANSWERS[cls].items():
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
