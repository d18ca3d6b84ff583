"""The table doctor as Spark jobs: :func:`health` returns the :class:`~puffin_explorer.health.TableHealth`
``Table.health()`` returns, with the work that grows with the table done by Spark.

The flow, thresholds and finding builders are the driver doctor's (:func:`~puffin_explorer.iceberg.health.doctor`);
only its reads differ (:class:`SparkReads`):

- the current snapshot's live files come from the entry index built on the executors
  (:func:`~.index.build_index_on_executors`, manifests spread over a few tasks per core) as the relations of
  :mod:`~puffin_explorer.iceberg.measures`, whose SQL (which delete files apply to which data file, deleted rows,
  the sums per partition, per size class and per table, dangling deletes) Spark SQL runs as the driver's DuckDB
  does; clustering depth per partition and column metrics are the driver's functions run per partition
  (``applyInPandas``) and per task (``mapInArrow``, one partial each, merged here); the driver collects only the
  answers: totals, one row per size class, per partition and per column;
- every snapshot's file set: each distinct manifest of any snapshot decoded once on the executors, joined to
  the (small) snapshot → manifest lists; the bytes only expired snapshots hold are a Spark anti-join;
- the listing of the table location: the top-level folders listed here, each folder listed in a task through
  this package's I/O layer, anti-joined against the referenced files in Spark.

A table whose manifests list at most ``CARD_HEALTH_UP_TO`` entries is read on the driver instead (``index_on="auto"``,
:func:`driver_holds`): at that size the Spark jobs cost more than the reads.

What the driver holds per file or partition is bounded: ``frames["amplification"]`` keeps the
:data:`AMPLIFICATION_ROWS` data files merging the most delete files (``partition`` as text),
``frames["partitions"]`` the first :data:`~puffin_explorer.iceberg.health_aggregates.PARTITION_ROWS` partitions by
key, ``frames["orphans"]`` and
``frames["expired_only"]`` the first :data:`FRAME_ROWS` by location, and ``frames["listing"]`` is the listing
as a Spark DataFrame.  Metrics, findings, actions and effects are exactly the driver doctor's.
"""

from __future__ import annotations

import pickle
from typing import Any, Mapping, Optional

from ..errors import UnsupportedTableError
from ..iceberg.health import FRAME_ROWS
from ..iceberg.health_aggregates import AMPLIFICATION_ROWS
from .errors import spark_errors
from .health_rows import (CLUSTER_SCHEMA, COUNTS_SCHEMA, HEALTH_ROWS_SCHEMA, LISTING_SCHEMA, ROWS_PER_KEY_PARTITION,
                          SET_SCHEMA, clustering_group, data_relation, delete_relation, files_by_key, health_rows,
                          list_folders, located_entries, no_rows, position_delete_counts)




def health(spark, table: Any, *, now: Any = None, older_than: Any = None, catalog: Optional[str] = None,
           name: Optional[str] = None, list_files: bool = True, cluster_by: Optional[str] = None,
           storage_options: Optional[dict[str, Any]] = None, relocate: Optional[Mapping[str, str]] = None,
           index_on: str = "auto"):
    """The table doctor of ``table`` (a Table, a metadata location or folder, or a catalog table name) with the
    reads that grow with the table run on Spark: the same :class:`~puffin_explorer.health.TableHealth` as
    ``Table.health(now=..., ...)`` (parameters as there), so ``to_dict()`` and the view are the same;
    ``frames["listing"]`` is a Spark DataFrame.

    ``index_on="auto"`` reads a table whose manifests list at most ``CARD_HEALTH_UP_TO`` entries (every snapshot's,
    counted from the manifest lists) on the driver, as ``Table.health()`` does: at that size Spark's jobs cost more
    than the reads (seconds against a fraction of one); larger tables, and manifest lists without file counts, on
    the executors.  ``"executors"`` or ``"driver"`` chooses.
    A catalog name ``cat.ns.t`` is opened at its current metadata file; ``catalog`` and ``name`` then default
    to ``cat`` and ``ns.t``.  See the module docstring for what the driver keeps per file (bounded frames)."""
    from ..iceberg.health import doctor, table_health
    from ..iceberg.paths import TableIO
    from ..iceberg.source import TableSource
    from ..io.scope import with_scope
    from .planner import plan_table
    from .tables import current_metadata_location

    with spark_errors():
        plan = plan_table(table, storage_options, relocate, index_on=index_on)  # index_on checked there
        if plan is None:
            parts = str(table).split(".")
            opened = TableSource.open(current_metadata_location(spark, table), TableIO(storage_options))
            if len(parts) >= 3:
                catalog = catalog or parts[0]
                name = name or ".".join(parts[1:])
            options = with_scope(storage_options or opened.io.storage_options, opened.io.scope)
        elif not plan.iceberg:
            raise UnsupportedTableError(f"{plan.table.name} is a Delta table: its doctor is DeltaTable.health() (a Delta log "
                             "has no manifests to spread over tasks)")
        else:
            opened, options = plan.table, plan.storage_options
        if index_on == "driver" or (index_on == "auto" and driver_holds(opened)):
            found = table_health(opened, now=now, older_than=older_than, catalog=catalog or "spark_catalog",
                                 name=name, list_files=list_files, cluster_by=cluster_by)
            if "listing" in found.frames:
                found.frames["listing"] = _spark_listing(spark, found.frames["listing"])
            return found
        reads = SparkReads(spark, opened, options)
        try:
            return doctor(opened, reads, now=now, older_than=older_than, catalog=catalog or "spark_catalog",
                          name=name, list_files=list_files, cluster_by=cluster_by)
        finally:
            reads.release()


def driver_holds(source: Any) -> bool:
    """Whether the doctor of ``source`` is read on the driver under ``index_on="auto"``: the distinct manifests of
    its snapshots list at most ``CARD_HEALTH_UP_TO`` entries (added, existing and deleted: what the doctor
    decodes), each manifest list read and every manifest counting its files."""
    from ..errors import PuffinError
    from ..health import CARD_HEALTH_UP_TO
    from ..iceberg.entry_cache import EntryCache
    from ..iceberg.manifests import manifest_counts

    seen: set = set()
    entries = 0
    for snap in source.metadata.snapshots:
        try:
            listed = source.manifest_records(snap.snapshot_id)
        except PuffinError:  # a list the doctor cannot read: it says so, with either reads
            continue
        for m in listed:
            key = EntryCache.manifest_key(m)
            if key in seen:
                continue
            seen.add(key)
            counted = manifest_counts(m)
            if counted is None or counted < 0:
                return False
            entries += counted
            if entries > CARD_HEALTH_UP_TO:
                return False
    return True


def _spark_listing(spark, listing):
    """The driver's listing (pandas) as the Spark DataFrame the doctor on Spark gives."""
    import pyarrow as pa

    from .planner import to_spark

    return to_spark(spark, pa.Table.from_pandas(listing, preserve_index=False), LISTING_SCHEMA)


# ---- the reads ---------------------------------------------------------------------------------------
class SparkReads:
    """:class:`~puffin_explorer.iceberg.health.DriverReads`' methods as Spark jobs (see the module docstring)."""

    def __init__(self, spark, source: Any, storage_options: dict) -> None:
        self.spark = spark
        self.source = source
        self.options = dict(storage_options or {})
        self.persisted: list = []
        self.entries = None  # (manifest id, location, size) of every distinct manifest's live entries
        self.current = None  # the current snapshot's health rows (current_files), row id = plan position << 32 | entry
        self.entries_kept = False
        self.decoded_again = 0  # manifests snapshot_files decoded itself: those the current snapshot does not list
        self.membership = None  # (sid, manifest id) of the readable, complete snapshots
        self.manifest_files: list[tuple[int, str, int]] = []
        self.extra: list[tuple[int, str, int]] = []
        self.listing = None
        self.unread_delete_files = 0  # position-delete files of the current snapshot that could not be read

    def _keep(self, frame):
        """``frame`` persisted and computed once: Spark then plans every join of it with its real size.  The
        frames kept here come out of ``mapInArrow`` over a small plan (a row per manifest or folder), which Spark
        estimates at the plan's size (about 1 KB for a table of any size), so it would broadcast them; at
        10,000,000 files that broadcast exhausted a 2 GB heap.  Kept on disk (:func:`~.arrow.kept`), not in memory: the
        joins and sums over them need the memory."""
        from .arrow import kept

        frame = kept(frame)
        frame.count()
        self.persisted.append(frame)
        return frame

    def _keep_by_key(self, frame, column: str, rows: int):
        """``frame`` hash-partitioned by ``column`` (a file key) into as many partitions as ``rows`` call for (at
        most the session's shuffle partitions), then kept.  Every frame kept this way with the same ``rows``
        has the same partitioning, which Spark remembers for the kept frame: the measures' joins and sums on
        the file key then read both sides where they are, with no shuffle (at 10,000,000 files the measures
        had shuffled the same rows by key a dozen times)."""
        parts = max(1, min(int(self.spark.conf.get("spark.sql.shuffle.partitions", "200")),
                           -(-rows // ROWS_PER_KEY_PARTITION)))
        return self._keep(frame.repartition(parts, column))

    def release(self) -> None:
        for frame in self.persisted:
            frame.unpersist()
        self.persisted.clear()

    # ---- the current snapshot's files -------------------------------------------------------------
    def current_files(self, target: int, small_size: int, column: Optional[str]):
        from pyspark.sql import functions as F

        from ..iceberg.column_stats import columns_frame
        from ..iceberg.deletes import manifest_coverage
        from ..iceberg.health_aggregates import AMPLIFICATION_COLUMNS, PARTITION_ROWS, SUM_MEASURES, file_aggregates
        from ..iceberg.measures import DATA_FILE_DELETES, MEASURES
        from .measures import SparkMeasures
        from .index import MANIFEST_PLAN_SCHEMA, decode_manifests, manifest_plan, manifest_tasks
        from .planner import to_spark

        # one Python function per task from manifest to health rows: the entries with their metrics never
        # cross into the JVM and back (at 10,000,000 files the stage took about half the time without that trip)
        plan, listed = manifest_plan(self.source)
        decode = decode_manifests(self.options, self.source.metadata.partition_specs, True, "keyed")
        tasks = manifest_tasks(self.spark, to_spark(self.spark, plan, MANIFEST_PLAN_SCHEMA), plan.num_rows)
        rows = self._keep(tasks.mapInArrow(health_rows(self.source.fields_by_id(), column, decode),
                                           HEALTH_ROWS_SCHEMA))
        self.current = rows  # snapshot_files takes these manifests' live files from here, not decoding them again
        kind = F.col("kind")
        counts = {r["kind"]: r["count"] for r in rows.groupBy("kind").count().collect()}
        total = sum(counts.values())
        # the data files and DVs, the relations that grow with the table, kept apart (each measure reads only
        # their columns) and partitioned alike by the file key
        data, dv = files_by_key(rows)
        data, dv = self._keep_by_key(data, "key", total), self._keep_by_key(dv, "ref_key", total)
        pos, eq = rows.where(kind == "position-deletes"), rows.where(kind == "equality-deletes")

        relations = self._measure_relations(data, dv, pos, eq, counts, target, small_size)
        run = SparkMeasures(self.spark, relations, persist=True)
        try:
            # one row per table or size class; per partition the first PARTITION_ROWS by key (every partition
            # is summed in partition_summary): nothing here grows with the table
            answers = {name: [r.asDict() for r in run.frame(MEASURES[name]).collect()] for name in SUM_MEASURES
                       if name != "partition_totals"}
            answers["partition_totals"] = [r.asDict() for r in run.frame(MEASURES["partition_totals"])
                                           .orderBy("pkey").limit(PARTITION_ROWS).collect()]
            # the text of the partitions shown (the smallest of each one's files', as on the driver), looked up
            # for them alone rather than summed for every partition
            summary = answers["partition_summary"][0]
            shown = {r["pkey"] for r in answers["partition_totals"]} | {summary["largest_pkey"]}
            texts = self._partition_texts(data, sorted(k for k in shown if k is not None))
            for r in answers["partition_totals"]:
                r["partition"] = texts.get(r["pkey"])
            summary["largest_partition"] = texts.get(summary["largest_pkey"])
            per_file = run.frame(DATA_FILE_DELETES).select("rid", *AMPLIFICATION_COLUMNS[7:])
            top = (data.select("rid", F.coalesce("raw", "key").alias("file_path"), *AMPLIFICATION_COLUMNS[1:7])
                   .join(per_file, "rid")
                   .orderBy(F.col("delete_files").desc(), F.col("deleted_rows").desc(), "file_path")
                   .limit(AMPLIFICATION_ROWS).select(*AMPLIFICATION_COLUMNS).toPandas())
        finally:
            run.close()

        # ---- clustering and column metrics: the driver's functions, per partition and per task -----------
        clustering = None if column is None else self._clustering(rows, column)
        partials = [pickle.loads(r[0]) for r in rows.where(kind == "partial").select("partial").collect()]
        agg = file_aggregates(answers, target, small_size, columns_frame(partials), clustering, top)
        # the manifests not read whole and the position-delete files not read: the counts they feed are unknown
        broken = rows.where(kind == "finding").select(F.shiftright(F.col("rid"), 32), "finding_code").distinct() \
            .collect()
        agg.coverage = manifest_coverage(listed, sorted({int(r[0]) for r in broken}), self.unread_delete_files,
                                         int(counts.get("position-deletes") or 0), [r[1] for r in broken])
        return agg

    def _measure_relations(self, data, dv, pos, eq, counts: dict, target: int, small_size: int) -> dict:
        """The relations of :mod:`~puffin_explorer.iceberg.measures` from the kept health rows (``counts``: rows
        per kind), as DataFrames; the position-delete files read here."""
        from ..health import sum_relations
        from ..iceberg.measures import RELATIONS
        from .planner import to_spark

        relations = {"data": data_relation(data),
                     "dvs": dv.select("ref_key", "record_count", "file_path", "file_size_in_bytes"),
                     "pos": delete_relation(pos), "eq": delete_relation(eq)}
        if counts.get("position-deletes"):
            relations["pos_counts"] = self._position_delete_pairs(pos)
        # a relation with no rows (a table with DVs and no position- or equality-delete files) is given as an empty
        # local relation: Spark then drops the joins over it when it plans, instead of running them to find nothing
        for name, of_kind in (("data", "data"), ("dvs", "dv"), ("pos", "position-deletes"),
                              ("eq", "equality-deletes"), ("pos_counts", "position-deletes")):
            if not counts.get(of_kind):
                relations[name] = no_rows(self.spark, RELATIONS[name])
        for name, table in sum_relations(target, small_size).items():
            relations[name] = to_spark(self.spark, table, RELATIONS[name])
        return relations

    def _clustering(self, rows, column: str):
        """The clustering frame of the data files on ``column``: the driver's function run per partition."""
        import pandas as pd

        from pyspark.sql import functions as F

        from ..iceberg.health_clustering import clustering_frame

        got = sorted(rows.where(F.col("kind") == "data")
                     .select("pkey", "partition", "clus_lo", "clus_hi", "file_size_in_bytes", "record_count")
                     .groupBy("pkey").applyInPandas(clustering_group, CLUSTER_SCHEMA).collect(),
                     key=lambda r: r["pkey"])
        out = pd.DataFrame({
            "partition": [r["partition"] for r in got],
            "files": pd.array([r["files"] for r in got], dtype="int64"),
            "files_with_bounds": pd.array([r["files_with_bounds"] for r in got], dtype="int64"),
            "bytes": pd.array([r["bytes"] for r in got], dtype="int64"),
            "rows": pd.array([r["rows"] for r in got], dtype="int64"),
            "average_depth": pd.array([float("nan") if r["average_depth"] is None else r["average_depth"]
                                       for r in got], dtype="float64"),
            "max_depth": pd.array([r["max_depth"] for r in got], dtype="Int64")},
            index=pd.Index([r["pkey"] for r in got], name="pkey"))
        return clustering_frame(out, column)

    def _partition_texts(self, data, pkeys: list) -> dict:
        """pkey → the partition text of the data files with that key (their smallest, as the driver's), for
        ``pkeys`` alone: a broadcast of those keys against the data files, then one short sum."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        from .planner import to_spark

        if not pkeys:
            return {}
        wanted = to_spark(self.spark, pa.table({"pkey": pa.array(pkeys, pa.string())}), "pkey string")
        return {r[0]: r[1] for r in data.join(F.broadcast(wanted), "pkey").groupBy("pkey")
                .agg(F.min("partition")).collect()}

    def _position_delete_pairs(self, pos):
        """``pos_counts`` of :mod:`~puffin_explorer.iceberg.measures`: rows each live Parquet position-delete file
        names per data file, read on the executors (each file once); one that cannot be read is a finding, as on
        the driver, and its rows are not counted."""
        from pyspark.sql import functions as F

        from ..errors import NotFoundError, PuffinError
        from ..iceberg.deletes import _unreadable

        counted = self._keep(pos.select("file_path").distinct()
                             .mapInArrow(position_delete_counts(self.source.mapper, self.options),
                                         COUNTS_SCHEMA))
        failed = counted.where(F.col("error").isNotNull()).select("file_path", "error", "missing").collect()
        for r in failed:
            exc = NotFoundError(r["error"]) if r["missing"] else PuffinError(r["error"])
            _unreadable(self.source, self.source.metadata.current_snapshot_id, r["file_path"], exc)
        self.unread_delete_files = len({r["file_path"] for r in failed})
        return counted.where(F.col("error").isNull()).select("file_path", "key", "rows")

    # ---- every snapshot's files ----------------------------------------------------------------------
    def snapshot_files(self, readable: list, current: Optional[int]) -> dict[int, str]:
        """Decodes every distinct manifest of the ``readable`` snapshots once on the executors (those of the
        current snapshot were decoded by :meth:`current_files`: their rows are read again, not their bytes);
        returns, per snapshot with an unreadable or damaged manifest, the first reason (its files then count as
        none)."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        from ..iceberg.health import _MANIFEST_BROKEN
        from ..iceberg.entry_cache import EntryCache, listed_once
        from ..iceberg.paths import normalize
        from .index import MANIFEST_PLAN_SCHEMA, _record_json, decode_manifests, index_schema, manifest_tasks
        from .planner import executor_location, to_spark

        ids, records, listed = self._distinct_manifests(readable)
        # manifest id → its position in the current snapshot's plan (manifest_plan's), for those current_files decoded
        decoded_at = {}
        if self.current is not None and current is not None:
            listed_now = self.source.manifest_records(current)
            keys = {pos: EntryCache.manifest_key(listed_now[pos]) for pos in listed_once(listed_now)[0]}
            decoded_at = {ids[key]: pos for pos, key in keys.items() if key in ids}
        todo = [i for i in range(len(records)) if i not in decoded_at]
        self.decoded_again = len(todo)
        bad, parts = [], []
        if todo:
            locations = [self.source.locate(records[i].get("manifest_path") or "") for i in todo]
            plan = pa.table({"manifest": pa.array(todo, pa.int32()),
                             "location": pa.array(locations, pa.string()),
                             "read_from": pa.array([executor_location(x) for x in locations], pa.string()),
                             "record": pa.array([_record_json(records[i]) for i in todo], pa.string())})
            frame = manifest_tasks(self.spark, to_spark(self.spark, plan, MANIFEST_PLAN_SCHEMA), len(todo))
            decoded = self._keep(frame.mapInArrow(
                decode_manifests(self.options, self.source.metadata.partition_specs), index_schema(False)))
            bad += decoded.where(F.col("finding_code").isin(list(_MANIFEST_BROKEN))
                                 & (F.coalesce(F.col("finding_message"), F.lit("")) != "")) \
                .select("manifest", "finding_order", "finding_message").collect()
            parts.append(decoded.where(F.col("finding_code").isNull() & F.coalesce(F.col("status") != 2, F.lit(True)))
                         .select("manifest", "file_path", "file_size_in_bytes"))
        if decoded_at:
            ids_at = to_spark(self.spark, pa.table({"pos": pa.array(list(decoded_at.values()), pa.int64()),
                                                    "manifest": pa.array(list(decoded_at), pa.int32())}),
                              "pos bigint, manifest int")
            rows = self.current.withColumn("pos", F.shiftright(F.col("rid"), 32)).join(F.broadcast(ids_at), "pos")
            kind = F.col("kind")
            bad += rows.where(kind == "finding").select("manifest", "finding_order", "finding_message").collect()
            entry = F.coalesce(~kind.isin("finding", "partial"), F.lit(True))
            parts.append(rows.where(entry).select("manifest", "file_path", "file_size_in_bytes"))
        if parts:
            entries = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
            # kept when first read (_sets): a table with no snapshot past retention and no listing never reads it
            self.entries = entries.mapInArrow(located_entries(self.source.mapper),
                                              "manifest int, location string, size bigint")
        first_bad: dict[int, list] = {}
        for mid, order, message in bad:
            first_bad.setdefault(int(mid), []).append((int(order), message))
        broken_by: dict[int, str] = {}
        member = []
        for sid, mans in readable:
            hits = [(pos, *sorted(first_bad[mid])[0]) for pos, mid in enumerate(listed[sid]) if mid in first_bad]
            if hits:
                broken_by[sid] = sorted(hits)[0][2]
                continue
            member += [(sid, mid) for mid in dict.fromkeys(listed[sid])]
            if len(mans):
                self.manifest_files += [(sid, normalize(loc), int(n))
                                        for loc, n in zip(mans["location"], mans["manifest_length"])]
        if member:
            self.membership = to_spark(self.spark, pa.table({"sid": pa.array([s for s, _ in member], pa.int64()),
                                                             "manifest": pa.array([m for _, m in member], pa.int32())}),
                                       "sid bigint, manifest int")
        return broken_by

    def _distinct_manifests(self, readable: list) -> tuple[dict, list, dict]:
        """The distinct manifests of the ``readable`` snapshots: ``(ids, records, listed)``, ``ids`` a manifest's
        key → its id (its place in ``records``), ``listed`` a snapshot's manifest ids in its list's order."""
        from ..iceberg.entry_cache import EntryCache

        ids: dict[tuple, int] = {}
        records: list[dict] = []
        listed: dict[int, list[int]] = {}
        for sid, _ in readable:
            order = []
            for m in self.source.manifest_records(sid):
                key = EntryCache.manifest_key(m)
                if key not in ids:
                    ids[key] = len(records)
                    records.append(m)
                order.append(ids[key])
            listed[sid] = order
        return ids, records, listed

    def add_file(self, sid: int, location: str, size: int) -> None:
        self.extra.append((sid, location, size))

    def _sets(self):
        """(sid, location, size): every file each snapshot references, once per snapshot."""
        import pyarrow as pa
        from pyspark.sql import functions as F

        from .planner import to_spark

        small = self.manifest_files + self.extra
        frame = to_spark(self.spark, pa.table({"sid": pa.array([r[0] for r in small], pa.int64()),
                                               "location": pa.array([r[1] for r in small], pa.string()),
                                               "size": pa.array([r[2] for r in small], pa.int64())}), SET_SCHEMA)
        if self.membership is not None and self.entries is not None:
            if not self.entries_kept:
                self.entries, self.entries_kept = self._keep(self.entries), True
            frame = frame.unionByName(self.membership.join(self.entries, "manifest").select("sid", "location", "size"))
        return frame.groupBy("sid", "location").agg(F.max("size").alias("size"))

    # ---- the listing of the table location --------------------------------------------------------------
    def list(self, root: str):
        import pyarrow as pa

        from ..health import listing_table
        from ..iceberg.paths import join
        from ..io.errors import storage_error
        from ..io.files import listed_mtime
        from .planner import to_spark

        fs, path = self.source.io.fs(root)
        try:
            top = fs.ls(path, detail=True)
        except FileNotFoundError:
            top = []
        except Exception as exc:  # noqa: BLE001 - turned into this project's storage error
            raise storage_error(exc, root, "list") from exc
        base = path.rstrip("/")
        files, folders = [], []  # files: (name, size, modification time)
        for info in top:
            name = str(info.get("name", ""))
            if name.rstrip("/") == base:
                continue
            if info.get("type", "file") == "directory":
                folders.append(join(root, name[len(base):].lstrip("/") if name.startswith(base) else name))
            elif info.get("type", "file") == "file":
                files.append((name, info.get("size"), listed_mtime(info)))
        names, sizes, mtimes = (list(c) for c in zip(*files)) if files else ([], [], [])
        here = to_spark(self.spark, listing_table(names, sizes, mtimes, path, root), LISTING_SCHEMA)
        if folders:
            plan = to_spark(self.spark, pa.table({"folder": pa.array(folders, pa.string())}), "folder string")
            if len(folders) > 1:
                plan = plan.repartition(len(folders))
            here = here.unionByName(plan.mapInArrow(list_folders(self.options, root), LISTING_SCHEMA))
        self.listing = self._keep(here)
        return self.listing

    def listing_frame(self):
        """The listing as the doctor's ``frames["listing"]``: a Spark DataFrame."""
        return self.listing

    def listed_sizes(self, locations) -> dict[str, Any]:
        from pyspark.sql import functions as F

        wanted = sorted(set(locations))
        if not wanted:
            return {}
        return {r[0]: r[1] for r in self.listing.where(F.col("location").isin(wanted)).select("location", "size")
                .collect()}

    def _answers(self, relations: dict, *asked):
        """The measures ``asked`` (each a measure and what to make of its DataFrame) run by Spark SQL over
        ``relations`` (DataFrames, or Arrow tables of the driver's making), a measure other measures read persisted
        once; the views dropped after."""
        from ..iceberg.measures import RELATIONS
        from .arrow import to_spark
        from .measures import SparkMeasures

        frames = {name: r if hasattr(r, "createOrReplaceTempView") else to_spark(self.spark, r, RELATIONS[name])
                  for name, r in relations.items()}
        run = SparkMeasures(self.spark, frames, persist=True)
        try:
            return [make(run.frame(measure)) for measure, make in asked]
        finally:
            run.close()

    def metadata_files(self) -> int:
        from ..iceberg.measures import METADATA_FILES

        return int(self._answers({"listing": self.listing}, (METADATA_FILES, lambda f: f.first()["files"]))[0])

    def newer_metadata(self, current_loc: str, tracked: set) -> list[str]:
        from ..iceberg.measures import NEWER_METADATA, metadata_log

        relations = {"listing": self.listing, "metadata_log": metadata_log(tracked, current_loc)}
        return self._answers(relations, (NEWER_METADATA, lambda f: [r[0] for r in f.orderBy("location").collect()]))[0]

    # ---- retention and orphans -----------------------------------------------------------------------------
    def expired_only(self, keep: set, expired: list):
        from ..iceberg.measures import EXPIRED_ONLY, EXPIRED_ONLY_TOTALS, retention

        totals, frame = self._answers({"snapshot_files": self._sets(), "retention": retention(keep, expired)},
                                      (EXPIRED_ONLY_TOTALS, lambda f: f.first()),
                                      (EXPIRED_ONLY, lambda f: f.orderBy("location").limit(FRAME_ROWS).toPandas()))
        frame["size"] = frame["size"].astype("int64")
        return frame, int(totals["files"]), int(totals["bytes"])

    def orphans(self, referenced: set, cutoff_ms: int):
        from ..iceberg.measures import ORPHAN_TOTALS, ORPHANS, locations, orphan_params

        relations = {"listing": self.listing, "snapshot_files": self._sets(), "referenced": locations(referenced),
                     "orphan_params": orphan_params(cutoff_ms)}
        totals, frame = self._answers(relations, (ORPHAN_TOTALS, lambda f: f.first()),
                                      (ORPHANS, lambda f: f.orderBy("location").limit(FRAME_ROWS).toPandas()))
        return frame, int(totals["files"]), int(totals["bytes"]), int(totals["in_flight"])


__all__ = ["health", "driver_holds", "SparkReads", "AMPLIFICATION_ROWS", "FRAME_ROWS"]
