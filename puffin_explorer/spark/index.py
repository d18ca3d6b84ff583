"""The entry index built on Spark executors: manifests spread over tasks, the driver's decoder and checks.

The driver reads only the snapshot's manifest list and sends one row per manifest (its position in the
list, where it is, and its manifest-list record, which inheritance needs); each task reads its manifest
through this package's I/O layer and runs :func:`~puffin_explorer.iceberg.manifest_chunks.decode_manifest`, the
function the driver's :func:`~puffin_explorer.iceberg.index_build.build_index` uses.  The result is a Spark
DataFrame with the columns of :class:`~puffin_explorer.iceberg.index.EntryIndex`, except ``partition``:
the partition record as JSON text (each task has its own registry of partition codes).  The findings of
reading and checking travel in the same rows (``finding_*`` columns, entry columns null) and are merged on
the driver as the driver's index merges them (at most ``FINDINGS_PER_CODE`` per code, then a count; a
partition finding once, at the first manifest that has that partition).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from ..iceberg.columns import partition_text, record_labels
from ..iceberg.relations import record_text
from .executors import steady_imports

#: The manifests of one snapshot: one row per manifest (Spark DDL).
MANIFEST_PLAN_SCHEMA = "manifest int, location string, read_from string, record string"

_ENTRY_DDL = ("content tinyint, kind string, status tinyint, file_path string, file_format string, "
              "partition string, spec_id int, record_count bigint, file_size_in_bytes bigint, snapshot_id bigint, "
              "sequence_number bigint, file_sequence_number bigint, first_row_id bigint, "
              "referenced_data_file string, empty_referenced_data_file boolean, content_offset bigint, "
              "content_size_in_bytes bigint, equality_ids array<int>, sort_order_id int, manifest int, entry int")
_METRICS_DDL = (", column_sizes array<struct<key:int,value:bigint>>, value_counts array<struct<key:int,value:bigint>>, "
                "null_value_counts array<struct<key:int,value:bigint>>, "
                "nan_value_counts array<struct<key:int,value:bigint>>, "
                "lower_bounds array<struct<key:int,value:binary>>, upper_bounds array<struct<key:int,value:binary>>, "
                "split_offsets array<bigint>")
_FINDING_DDL = (", finding_code string, finding_severity string, finding_file string, finding_message string, "
                "finding_offset bigint, finding_count bigint, finding_key string, finding_order int")


def index_schema(metrics: bool = False) -> str:
    """Spark DDL of the executors' index rows: the entry columns, then the ``finding_*`` columns."""
    return _ENTRY_DDL + (_METRICS_DDL if metrics else "") + _FINDING_DDL


def _arrow_schema(metrics: bool):
    import pyarrow as pa

    from ..iceberg.index import _schema

    base = _schema(metrics)
    fields = [pa.field("partition", pa.string()) if f.name == "partition" else f for f in base]
    fields += [pa.field("finding_code", pa.string()), pa.field("finding_severity", pa.string()),
               pa.field("finding_file", pa.string()), pa.field("finding_message", pa.string()),
               pa.field("finding_offset", pa.int64()), pa.field("finding_count", pa.int64()),
               pa.field("finding_key", pa.string()), pa.field("finding_order", pa.int32())]
    return pa.schema(fields)


def partition_json(value: Any) -> Optional[str]:
    """A partition record as JSON text (bytes as hex), the executors' ``partition`` column."""
    if value is None:
        return None

    def plain(v: Any) -> Any:
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v).hex()
        return str(v)

    return json.dumps(value, default=plain)


def _record_json(manifest: dict[str, Any]) -> str:
    """A manifest-list record as JSON: every plain field (the partition summaries' bytes are not needed)."""
    return json.dumps({k: v for k, v in manifest.items() if v is None or isinstance(v, (int, float, str, bool))})


def manifest_plan(table: Any, snapshot_id: Optional[int] = None, content: Optional[str] = None):
    """Arrow table (:data:`MANIFEST_PLAN_SCHEMA`) of the snapshot's manifests (``content`` ``"data"`` /
    ``"deletes"`` or all), and the manifest-list records themselves; only the manifest list is read."""
    import pyarrow as pa

    from ..iceberg.entry_cache import listed_once, of_content
    from .arrow import executor_location

    snap = table.snapshot(snapshot_id)
    manifests = of_content(table.manifest_records(snap.snapshot_id), content)
    keep = listed_once(manifests)[0]  # a manifest listed again is read once, as the driver's index does
    locations = [table.locate(manifests[i].get("manifest_path") or "") for i in keep]
    return pa.table({
        "manifest": pa.array(keep, pa.int32()),
        "location": pa.array(locations, pa.string()),
        "read_from": pa.array([executor_location(loc) for loc in locations], pa.string()),
        "record": pa.array([_record_json(manifests[i]) for i in keep], pa.string()),
    }), manifests


#: Between the grouping key and the shown text in a ``keyed`` partition column (a ``record_text`` never holds it: a
#: string's ``repr`` escapes it).
KEY_END = "\x1f"


def keyed_text(value: Any) -> Optional[str]:
    """A partition record as the Spark doctor's rows carry it: its grouping key (the relations' ``record_text``),
    :data:`KEY_END`, then the text a user reads (:func:`~puffin_explorer.iceberg.columns.partition_text`); None
    for none.  :func:`split_keyed` parts them again."""
    return None if value is None else f"{record_text(value)}{KEY_END}{partition_text(value)}"


def _keyed_text_arrow(records):
    """:func:`keyed_text` of each record of a struct column, column-wise (a null: a record Python labels)."""
    import pyarrow.compute as pc

    key, shown = record_labels(records, "repr"), record_labels(records, "text")
    return None if key is None or shown is None else pc.binary_join_element_wise(key, shown, KEY_END)


keyed_text.arrow = _keyed_text_arrow  # the same texts, column-wise


def split_keyed(column):
    """A ``keyed`` partition column (:func:`keyed_text`) as its (grouping key, shown text) Arrow string arrays; a
    value without :data:`KEY_END` is both its key and its text."""
    import pyarrow.compute as pc

    key = pc.replace_substring_regex(column, pattern=f"(?s){KEY_END}.*", replacement="", max_replacements=1)
    shown = pc.replace_substring_regex(column, pattern=f"^[^{KEY_END}]*{KEY_END}", replacement="", max_replacements=1)
    return key, shown


#: How the ``partition`` column spells a partition record: ``json`` (:func:`partition_json`) or ``keyed``
#: (:func:`keyed_text`: the measures' grouping key and the text shown, for the doctor).
PARTITION_TEXT = {"json": partition_json, "keyed": keyed_text}


def decode_manifests(storage_options: Optional[dict], partition_specs: dict, metrics: bool = False,
                     partitions: str = "json"):
    """mapInArrow function: manifest plan rows → the index rows of each manifest and its finding rows;
    ``partitions`` says how the ``partition`` column spells each record (see :data:`PARTITION_TEXT`)."""
    specs = {int(k): v for k, v in (partition_specs or {}).items()}
    text = PARTITION_TEXT[partitions]

    def run(batches):
        steady_imports()
        from ..io import FileIO

        io = FileIO(storage_options)
        duck = _manifest_reader()
        for batch in batches:
            for row in batch.to_pylist():
                yield from _manifest_rows(io, row, specs, metrics, text, duck)

    return run


_READER: list = []  # this worker process's DuckDB manifest reader (or None), made at its first manifest


def _manifest_reader():
    """The DuckDB manifest reader of this process, started once (about 0.3 s) and closed at its exit: a
    Python worker decodes manifest after manifest, task after task, as the driver's index does."""
    if not _READER:
        import atexit

        from ..iceberg.duckdb_manifests import _duckdb

        duck = _duckdb()
        if duck is not None:
            atexit.register(duck.close)
        _READER.append(duck)
    return _READER[0]


def _slow_decode(location: str, size: int) -> tuple:
    """The raw finding of a manifest an executor decoded with fastavro
    (:func:`~..iceberg.duckdb_manifests.slow_reason`)."""
    from ..iceberg.duckdb_manifests import SLOW_DECODE, slow_reason
    from ..iceberg.paths import basename
    from ..regions import Severity

    return (SLOW_DECODE, Severity.INFO, location, f"{basename(location)} ({size:,} B) was decoded by fastavro on an "
            f"executor, about four times slower than DuckDB's read_avro: {slow_reason()}", None)


def executors_decoder(spark) -> str:
    """Which manifest decoder the executors' Python workers use, asked of one worker by one task:
    :func:`~..iceberg.duckdb_manifests.decoder_label` in the worker."""
    import pyarrow as pa

    def ask(batches):
        from ..iceberg.duckdb_manifests import decoder_label

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"decoder": [decoder_label()]})

    return spark.range(1).mapInArrow(ask, "decoder string").first()[0]


def _manifest_rows(io, row: dict, specs: dict, metrics: bool, text=partition_json, duck=None) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..errors import SourceError
    from ..iceberg.columns import every_label
    from ..iceberg.entry_cache import EntryCache
    from ..iceberg.entry_checks import FINDINGS_PER_CODE
    from ..iceberg.manifest_chunks import decode_manifest
    from ..iceberg.paths import basename
    from ..regions import Severity

    schema = _arrow_schema(metrics)
    manifest, loc = json.loads(row["record"]), row["location"]
    try:
        data = io.read(row["read_from"])
    except SourceError as exc:
        raw, chunk, keys = [("iceberg.manifest-unreadable", Severity.ERROR, loc, f"{basename(loc)}: {exc}", None)], \
            None, {}
    else:
        cache = EntryCache()
        chunk, raw = decode_manifest(data, manifest, loc, metrics, specs, cache, duck)
        if duck is None:  # this worker could not start DuckDB's reader: the slow path, said per manifest
            raw.append(_slow_decode(loc, len(data)))
        keys = {}  # a partition finding → its (spec, partition) key, to report it once per table
        for (spec_id, code), found in cache.partitions_checked.items():
            for f in found:
                keys[id(f)] = f"{spec_id}:{partition_json(cache.partitions[code])}"
    if chunk is not None and chunk.num_rows:
        # every partition of this manifest's registry labelled once (column-wise where ``text`` can), a null after
        labels = every_label(cache.partitions, text)
        codes = pc.fill_null(pc.cast(chunk.column("partition"), pa.int64()), len(labels) - 1)
        cols = {}
        for f in schema:
            if f.name == "partition":
                cols[f.name] = labels.take(codes)
            elif f.name == "manifest":
                cols[f.name] = pa.array([row["manifest"]] * chunk.num_rows, pa.int32())
            elif f.name.startswith("finding_"):
                cols[f.name] = pa.nulls(chunk.num_rows, f.type)
            else:
                cols[f.name] = chunk.column(f.name)
        yield pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema).combine_chunks().to_batches()[0]
    found_rows, seen, extra = [], {}, {}
    for f in raw:
        code = f[0]
        seen[code] = seen.get(code, 0) + 1
        if f[3] and seen[code] <= FINDINGS_PER_CODE:
            found_rows.append((f, 1))
        else:  # the driver would only count it: one row with the count
            extra.setdefault(code, [f, 0])[1] += 1
    found_rows += [(f, n) for f, n in extra.values()]
    if found_rows:
        n = len(found_rows)
        cols = {f.name: pa.nulls(n, f.type) for f in schema}
        cols["manifest"] = pa.array([row["manifest"]] * n, pa.int32())
        cols["finding_code"] = pa.array([f[0] for f, _ in found_rows], pa.string())
        cols["finding_severity"] = pa.array([f[1].value for f, _ in found_rows], pa.string())
        cols["finding_file"] = pa.array([f[2] for f, _ in found_rows], pa.string())
        cols["finding_message"] = pa.array([f[3] if c == 1 else "" for f, c in found_rows], pa.string())
        cols["finding_offset"] = pa.array([f[4] for f, _ in found_rows], pa.int64())
        cols["finding_count"] = pa.array([c for _, c in found_rows], pa.int64())
        cols["finding_key"] = pa.array([keys.get(id(f)) for f, _ in found_rows], pa.string())
        cols["finding_order"] = pa.array(range(n), pa.int32())
        yield pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


@dataclass
class ExecutorIndex:
    """A snapshot's entry index as a Spark DataFrame built on the executors.

    ``rows`` holds index rows and finding rows; :attr:`entries` the index rows (the
    :class:`~puffin_explorer.iceberg.index.EntryIndex` columns, ``partition`` as JSON text), and
    :meth:`findings` collects the (few) finding rows.  Both run the decode: persist ``rows`` to decode once.
    """

    snapshot_id: Optional[int]
    rows: Any  # pyspark DataFrame
    manifests: list[dict[str, Any]]
    metrics: bool = False

    @property
    def entries(self):
        """DataFrame of the index rows (no finding columns)."""
        from pyspark.sql import functions as F

        return self.rows.where(F.col("finding_code").isNull()).drop(*[c for c in self.rows.columns
                                                                       if c.startswith("finding_")])

    def findings(self) -> list:
        """The findings of reading and checking every manifest, merged as the driver's index merges them."""
        from pyspark.sql import functions as F

        from .._text import plural
        from ..iceberg.entry_checks import FINDINGS_PER_CODE, _finding
        from ..regions import Severity

        got = (self.rows.where(F.col("finding_code").isNotNull())
               .select("manifest", "finding_order", "finding_code", "finding_severity", "finding_file",
                       "finding_message", "finding_offset", "finding_count", "finding_key")
               .collect())
        got.sort(key=lambda r: (r[0], r[1]))
        out, seen, severities, claimed = [], {}, {}, {}
        for manifest, _, code, severity, file, message, offset, count, key in got:
            if key is not None and claimed.setdefault(key, manifest) != manifest:
                continue  # this partition was reported at the first manifest that has it
            sev = Severity(severity)
            severities.setdefault(code, sev)
            seen[code] = seen.get(code, 0) + count
            if count == 1 and message and seen[code] <= FINDINGS_PER_CODE:
                out.append(_finding(code, sev, file, message, offset))
        for code, n in seen.items():
            if n > FINDINGS_PER_CODE:
                out.append(_finding(code, severities[code], "",
                                    f"{plural(n - FINDINGS_PER_CODE, f'more {code} finding')} like the ones above"))
        return out


#: Manifest plans are spread over at most this many tasks per core the session runs at once.
MANIFEST_TASKS_PER_CORE = 4


def manifest_tasks(spark, frame, manifests: int):
    """A manifest plan frame spread over the tasks that decode it: a task per manifest up to
    :data:`MANIFEST_TASKS_PER_CORE` tasks per core, then several manifests per task.

    A Python task has a fixed cost before its function runs: on Python 3.11 about 0.3 s here, as PySpark's
    worker calls ``importlib.invalidate_caches()`` for every task and Python 3.11's zip importer then reads
    ``pyspark.zip``'s whole directory again.  A task per manifest made that cost grow with the manifests (2,000
    manifests: 2,000 tasks) where a few tasks per core pay it a few times."""
    from .arrow import parallelism

    tasks = min(manifests, parallelism(spark) * MANIFEST_TASKS_PER_CORE)
    return frame.repartition(tasks) if tasks > 1 else frame


def build_index_on_executors(spark, table: Any, snapshot_id: Optional[int] = None, content: Optional[str] = None,
                             metrics: bool = False, storage_options: Optional[dict] = None,
                             partitions: str = "json") -> ExecutorIndex:
    """The entry index of a snapshot (current by default; ``content`` ``"data"`` / ``"deletes"`` manifests
    only) built on the executors (:func:`manifest_tasks`).  ``table`` is a :class:`~puffin_explorer.iceberg.source.TableSource`;
    ``partitions="keyed"`` spells the ``partition`` column as :func:`keyed_text` instead of JSON."""
    from ..io.scope import with_scope
    from .arrow import to_spark

    plan, manifests = manifest_plan(table, snapshot_id, content)
    options = with_scope(storage_options if storage_options is not None else table.io.storage_options,
                         table.io.scope)  # the executors read only the table's scope
    frame = manifest_tasks(spark, to_spark(spark, plan, MANIFEST_PLAN_SCHEMA), plan.num_rows)
    fn = decode_manifests(dict(options), table.metadata.partition_specs, metrics, partitions)
    rows = frame.mapInArrow(fn, index_schema(metrics))
    return ExecutorIndex(table.snapshot(snapshot_id).snapshot_id, rows, manifests, metrics)
