"""The doctor's model, shared by the Iceberg and Delta doctors: a finding with the statements that fix
it (:class:`HealthFinding`, :class:`Action`), the answer for one table (:class:`TableHealth`), the
thresholds both formats share and the helpers both compute with (size classes, a folder listed through
the table's I/O layer, timestamps).  The format doctors are ``iceberg/health.py`` and ``delta/health.py``;
the view is ``display/health_view.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ._answers import tabular
from ._repr import RichRepr
from ._text import are, plural
from .coverage import LOWER_BOUND_METRICS, UNKNOWN, Coverage
from .regions import Severity

if TYPE_CHECKING:  # pragma: no cover - the answers' types
    import pandas as pd

MIB = 1 << 20
DAY_MS = 86_400_000

#: A Delta table's card runs the doctor (without the storage listing) up to this many live data files; above it
#: the card says to run ``health()``. Also the size up to which the Spark doctor reads a table on the driver.
CARD_HEALTH_UP_TO = 100_000
#: An Iceberg table's card runs it up to this many: its doctor sums the files' column metrics as the manifests
#: are decoded, never keeping them per file, so its memory grows with the files whatever the table's width. At
#: 1,000,000 data files with one DV each the card, Health section included, peaks at 1.7 GB (1.56 GB without it).
ICEBERG_CARD_HEALTH_UP_TO = 1_000_000
#: An undated card health is reused for this long, so the HTML and text forms of one display share it.
CARD_HEALTH_KEEP_S = 600

#: (property, Iceberg default) of every threshold the doctor reads from a table.
DEFAULTS: dict[str, Any] = {
    "write.target-file-size-bytes": 512 * MIB,
    "history.expire.max-snapshot-age-ms": 5 * DAY_MS,
    "history.expire.min-snapshots-to-keep": 1,
    "commit.manifest.target-size-bytes": 8 * MIB,
    "commit.manifest.min-count-to-merge": 100,
    "write.metadata.previous-versions-max": 100,
    "write.metadata.delete-after-commit.enabled": False,
}

#: A data file is small below this share of the target size (``rewrite_data_files``' ``min-file-size-bytes``).
SMALL_FILE_SHARE = 0.75

#: Deleted share of a table (or a data file) above which the doctor asks for a rewrite and the table card,
#: ``delete_debt()`` and ``compaction_candidates()`` suggest compaction: the one constant all of them use.
DELETED_SHARE_THRESHOLD = 0.10

#: Small files are a warning (not a note) from this share of the data files, or when compaction would
#: remove at least :data:`SMALL_FILES_WARNING_MERGES` files.
SMALL_FILES_WARNING_SHARE = 0.5
SMALL_FILES_WARNING_MERGES = 10

#: A data file merging more delete files than this at scan time is read-amplified.
DELETE_FILES_PER_DATA_FILE = 1

#: A partition is poorly clustered when, on average, more files than this overlap a value of the clustering column.
CLUSTERING_DEPTH_THRESHOLD = 2.0

METRIC_KEYS = (
    "data_files", "data_bytes", "delete_files", "delete_bytes", "dvs", "position_delete_files",
    "equality_delete_files", "records", "live_rows", "deleted_rows", "deleted_share", "snapshots",
    "snapshots_past_retention", "bytes_only_in_expired_snapshots", "oldest_snapshot_age_days",
    "newest_snapshot_age_days", "commits_per_day", "commits_last_day", "manifests", "data_manifests",
    "delete_manifests", "manifest_bytes", "small_manifests", "manifests_without_live_entries",
    "metadata_files", "metadata_files_tracked", "small_files", "small_bytes", "target_file_size",
    "small_file_size", "orphan_files", "orphan_bytes", "in_flight_files", "partitions",
    "max_delete_files_per_data_file", "data_files_with_deletes", "dangling_deletes", "statistics_commits_behind",
    "columns_without_ndv", "columns_without_bounds", "clustering_column", "clustering_depth",
    "poorly_clustered_partitions",
)


@dataclass(frozen=True)
class Action:
    """One statement that fixes a finding, for one engine (``spark``, ``trino``, ``pyiceberg``, ``delta``)."""

    engine: str
    statement: str
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"engine": self.engine, "statement": self.statement}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class HealthFinding:
    """One problem of a table: catalogued code, severity, the numbers behind it, the fixes and their effect."""

    code: str
    severity: Severity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    actions: tuple[Action, ...] = ()
    effect: dict[str, Any] = field(default_factory=dict)
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity.value, "message": self.message,
                "evidence": dict(self.evidence), "actions": [a.to_dict() for a in self.actions],
                "effect": dict(self.effect)}

    def __str__(self) -> str:
        return f"{self.severity.value} {self.code}: {self.message}"


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}
#: The order to run fixes in: rewrites first, then statistics (after the last commit that adds a snapshot),
#: then expiry and orphan removal (which add none), then properties.
FIX_ORDER = ("health.small-files", "health.deleted-share", "health.read-amplification", "health.dangling-deletes",
             "health.poor-clustering", "health.manifest-fragmentation", "health.statistics-stale",
             "health.statistics-missing",
             "health.statistics-columns-missing", "health.snapshots-past-retention", "health.delta-checkpoint-overdue",
             "health.delta-tombstones-past-retention", "health.orphan-files",
             "health.metadata-cleanup-disabled", "health.columns-without-bounds")


#: The columns of :meth:`TableHealth.checks`.
CHECK_COLUMNS = ["check", "status", "metric", "threshold", "source", "codes"]


@dataclass
class DoctorRun:
    """One run of a doctor, Iceberg's or Delta's: what every step reads (the clock in epoch ms, the table's name in
    the fix statements, the thresholds) and what the steps fill in (metrics ``m``, findings, frames).  Each
    doctor's run adds what its own steps read, as keyword fields."""

    now_ms: int
    ident: str
    th: dict[str, dict[str, Any]]
    m: dict[str, Any]
    findings: list[HealthFinding] = field(default_factory=list)
    frames: dict[str, Any] = field(default_factory=dict)


class TableHealth(RichRepr):
    """The doctor's answer for one table: ``metrics`` (numbers), ``findings`` (problems with their fixes),
    ``status`` (``ok`` / ``warning`` / ``error``) and the frames behind them (``size_histogram``,
    ``partitions`` (the first 10,000 by key; ``metrics["partitions"]`` counts them all), ``snapshots``,
    ``manifests``, ``columns``, ``orphans``; ``amplification``: the 1,000 data
    files merging the most delete files; ``expired_only``: the first 10,000 files by location that only
    expiring snapshots hold)."""

    def __init__(self, table: str, metrics: dict[str, Any], findings: list[HealthFinding],
                 thresholds: dict[str, dict[str, Any]], frames: dict[str, Any], now_ms: int,
                 catalog: str) -> None:
        self.table = table
        self.metrics = metrics
        self.findings = sorted(findings, key=lambda f: (-_RANK[f.severity], f.code))
        self.thresholds = thresholds
        self.frames = frames
        self.now_ms = now_ms
        self.catalog = catalog

    @property
    def status(self) -> str:
        """``error`` / ``warning`` when a finding has that severity, else ``ok`` (info findings are notes)."""
        worst = max((_RANK[f.severity] for f in self.findings), default=0)
        return {2: "error", 1: "warning"}.get(worst, "ok")

    @property
    def top_problem(self) -> str:
        """The message of the worst warning or error finding ('' when the status is ok)."""
        for f in self.findings:
            if f.severity in (Severity.ERROR, Severity.WARNING):
                return f.message
        return ""

    def finding(self, code: str) -> Optional[HealthFinding]:
        """The finding with ``code``, or None."""
        return next((f for f in self.findings if f.code == code), None)

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def unknown(self) -> list[str]:
        """The metric keys whose value is None because files they depend on could not be read (the
        ``health.count-unknown`` finding's evidence); never zero for them."""
        f = self.finding(COUNT_UNKNOWN)
        return list(f.evidence.get("unknown", ())) if f is not None else []

    def partial_count(self, key: str) -> str:
        """The labelled partial count of an unknown metric (``≥ 27,924: 3 of 4 manifests read``), '' for none."""
        f = self.finding(COUNT_UNKNOWN)
        n = (f.evidence.get("at_least") or {}).get(key) if f is not None else None
        return "" if n is None else f"≥ {int(n):,}: {f.evidence.get('covers')}"

    def actions(self, engine: str = "spark") -> list[str]:
        """Every statement of one engine, in finding order."""
        return [a.statement for f in self.findings for a in f.actions if a.engine == engine]

    def plan(self, engine: str = "spark", severity: str = "warning") -> list[str]:
        """The statements of one engine that fix every finding at or above ``severity``, in the order to run
        them (:data:`FIX_ORDER`: rewrites, then statistics, then expiry and orphan removal), each once."""
        order = {c: i for i, c in enumerate(FIX_ORDER)}
        out: list[str] = []
        for f in sorted(self.at_least(severity), key=lambda f: order.get(f.code, len(order))):
            for a in f.actions:
                if a.engine == engine and a.statement not in out:
                    out.append(a.statement)
        return out

    def at_least(self, severity: str) -> list[HealthFinding]:
        """Findings at or above ``severity`` (``info``, ``warning`` or ``error``)."""
        rank = _RANK[Severity(severity)]
        return [f for f in self.findings if _RANK[f.severity] >= rank]

    def __getattr__(self, name: str) -> Any:
        frames = self.__dict__.get("frames") or {}
        if name in frames:
            return frames[name]
        raise AttributeError(name)

    @property
    def listed(self) -> bool:
        """Whether the storage listing ran (``list_files=True``): without it there is no orphan check."""
        return "listing" in self.frames

    def checks(self) -> "pd.DataFrame":
        """One row per check: ``check``, ``status`` (``ok`` / ``info`` / ``warning`` / ``error``, or
        ``not run``), ``metric``, ``threshold``, ``source`` (where the threshold comes from) and ``codes``
        (the findings that set the status).  A table card's health section shows these rows."""
        import pandas as pd

        rows = self._check_rows()
        if "delta.targetFileSize" in self.thresholds:  # a Delta table: its own retention, checkpoints and no manifests
            rows = rows[:2] + self._delta_check_rows()
        return tabular(pd.DataFrame([self._check_row(*row) for row in rows], columns=CHECK_COLUMNS),
                       table=self.table)

    def _check_rows(self) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
        """``(check, metric, threshold, source, codes)`` of each of an Iceberg table's checks, in the order shown:
        one case per check, kept as one table so that the rows read side by side."""
        m = self.metrics
        age = self._threshold("history.expire.max-snapshot-age-ms")
        keep = self._threshold("history.expire.min-snapshots-to-keep")
        mtarget = self._threshold("commit.manifest.target-size-bytes")
        merge = self._threshold("commit.manifest.min-count-to-merge")
        versions = self._threshold("write.metadata.previous-versions-max")
        cleanup = self._threshold("write.metadata.delete-after-commit.enabled")
        small = self._threshold("small-file-size")
        orphan = self._threshold("orphan-older-than")
        depth = m.get("clustering_depth")
        return [
            ("small files", self._known(("small_files", "data_files"), f"{_count(m.get('small_files'))} of "
                                        f"{_counted(m.get('data_files'), 'data file')}"),
             f"below {_size(small['value'])}", small["source"], ("health.small-files", "health.partition-skew")),
            ("deleted rows", self._known(("deleted_rows", "records"),
                                         f"{float(m.get('deleted_share') or 0.0):.1%} ({_count(m.get('deleted_rows'))} "
                                         f"of {_counted(m.get('records'), 'row')})"),
             f"above {DELETED_SHARE_THRESHOLD:.0%}", "doctor default", ("health.deleted-share",)),
            ("delete files per data file", self._known(("max_delete_files_per_data_file",),
                                                       f"at most {_count(m.get('max_delete_files_per_data_file'))}"),
             f"above {DELETE_FILES_PER_DATA_FILE}", "doctor default",
             ("health.read-amplification", "health.dangling-deletes")),
            ("clustering", "no sort order" if m.get("clustering_column") is None else
             self._known(("clustering_depth",),
                         "–" if depth is None else f"depth {float(depth):.2f} on {m.get('clustering_column')}"),
             f"above {CLUSTERING_DEPTH_THRESHOLD:g}", "doctor default", ("health.poor-clustering",)),
            ("snapshot retention", f"{_count(m.get('snapshots_past_retention'))} of "
                                   f"{_counted(m.get('snapshots'), 'snapshot')} past retention",
             f"older than {plural(int(age['value']) / DAY_MS, 'day', sep='')}, keep {_count(keep['value'])}",
             f"{age['source']}; {keep['source']}", ("health.snapshots-past-retention",)),
            ("manifests", f"{_count(m.get('small_manifests'))} of {_count(m.get('manifests'))} below target",
             f"{_size(mtarget['value'])}, merge from {_count(merge['value'])}",
             f"{mtarget['source']}; {merge['source']}",
             ("health.manifest-fragmentation", "health.snapshot-unreadable")),
            ("metadata files", f"{_count(m.get('metadata_files'))} ({_count(m.get('metadata_files_tracked'))} tracked)",
             f"keep {_count(versions['value'])}, delete after commit {'on' if cleanup['value'] else 'off'}",
             f"{versions['source']}; {cleanup['source']}",
             ("health.metadata-cleanup-disabled", "health.not-current-metadata")),
            ("statistics", "none" if m.get("statistics_commits_behind") is None and self.finding(
                "health.statistics-missing") else f"{_counted(m.get('statistics_commits_behind'), 'commit')} behind",
             "current snapshot", "doctor default",
             ("health.statistics-missing", "health.statistics-stale", "health.statistics-columns-missing",
              "health.columns-without-bounds")),
            ("orphan files", self._orphan_metric(), f"older than {orphan['value']}", orphan["source"],
             ("health.orphan-files",)),
        ]

    def _delta_check_rows(self) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
        """The rows of a Delta table's own checks, shown after the first two: its retention, checkpoints, orphans."""
        m = self.metrics
        keep_ms = self._threshold("delta.deletedFileRetentionDuration")
        interval = self._threshold("delta.checkpointInterval")
        days = plural(int(keep_ms['value']) / DAY_MS, 'day', sep='')
        return [
            ("tombstones", f"{_count(m.get('tombstones_past_retention'))} of "
                           f"{_counted(m.get('tombstones'), 'removed file')} past retention",
             f"older than {days}", keep_ms["source"], ("health.delta-tombstones-past-retention",)),
            ("checkpoints", f"{_counted(m.get('commits_since_checkpoint'), 'commit')} since the last checkpoint",
             f"above {_count(interval['value'])}", interval["source"], ("health.delta-checkpoint-overdue",)),
            ("orphan files", self._orphan_metric(), f"older than {days}", keep_ms["source"], ("health.orphan-files",)),
        ]

    def _check_row(self, check: str, metric: str, threshold: str, source: str, codes: tuple) -> dict[str, Any]:
        """One row of :meth:`checks`: its status from the findings it names (the count-unknown one too when the
        check could not be measured)."""
        if metric.startswith(UNKNOWN):  # the check could not be measured: the warning that says so sets it
            codes = (*codes, COUNT_UNKNOWN)
        found = [f for f in self.findings if f.code in codes]
        if check == "orphan files" and not self.listed:
            status = "not run"
        elif found:
            status = max(found, key=lambda f: _RANK[f.severity]).severity.value
        else:
            status = "ok"
        source = "; ".join(dict.fromkeys(source.split("; ")))  # "default; default" -> "default"
        return {"check": check, "status": status, "metric": metric, "threshold": threshold, "source": source,
                "codes": [f.code for f in found]}

    def _known(self, keys: tuple, text: str) -> str:
        """``text``, or :data:`UNKNOWN` (and the partial count, labelled) when a metric it shows is unknown."""
        unknown = set(self.unknown())
        gone = [k for k in keys if k in unknown]
        if not gone:
            return text
        partial = self.partial_count(gone[0])
        return f"{UNKNOWN}; {partial}" if partial else UNKNOWN

    def _threshold(self, key: str) -> dict[str, Any]:
        """The threshold ``key`` as the doctor used it, or its default."""
        return self.thresholds.get(key) or {"value": DEFAULTS.get(key), "property": key, "source": "default"}

    def _orphan_metric(self) -> str:
        """The orphan row's metric: files (bytes), or that the storage was not listed."""
        if not self.listed:
            return "not listed: run t.health()"
        return f"{_count(self.metrics.get('orphan_files'))} ({_size(self.metrics.get('orphan_bytes'))})"

    def to_dict(self) -> dict[str, Any]:
        """The command line's JSON object for this table (see the documentation's "JSON contract" page)."""
        return {"table": self.table, "status": self.status, "metrics": dict(self.metrics),
                "findings": [f.to_dict() for f in self.findings]}

    def findings_frame(self) -> "pd.DataFrame":
        """One row per finding: code, severity, message and how many fixing actions it has."""
        import pandas as pd

        return tabular(pd.DataFrame({"code": [f.code for f in self.findings],
                                     "severity": [f.severity.value for f in self.findings],
                                     "message": [f.message for f in self.findings],
                                     "actions": pd.array([len(f.actions) for f in self.findings], dtype="int64")},
                                    columns=["code", "severity", "message", "actions"]), table=self.table)

    def __repr__(self) -> str:
        return f"TableHealth({self.table!r}, status={self.status!r}, findings={len(self.findings)})"


def _count(v: Any) -> str:
    """A number as :meth:`TableHealth.checks` shows it: ``–`` when unknown, thousands separated."""
    return "–" if v is None else f"{v:,}" if isinstance(v, int) else str(v)


def _counted(v: Any, noun: str) -> str:
    """``v`` and ``noun`` (plural when ``v`` is not one), ``–`` when unknown."""
    return plural("–" if v is None else v, noun)


def _size(v: Any) -> str:
    """A size as :meth:`TableHealth.checks` shows it: whole quarters of a MiB in MiB, else bytes."""
    if v is None:
        return "–"
    v = int(v)
    return f"{v / MIB:g} MiB" if v >= MIB and v % (MIB // 4) == 0 else f"{v:,} B"


def ts_literal(ms: int) -> str:
    import pandas as pd

    return pd.Timestamp(int(ms), unit="ms", tz="UTC").strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def size_histogram(target: int, small: int, counted: Optional[dict[int, Any]] = None):
    """Data files and bytes per size class: fixed edges below the small-file size, then small/target.
    ``counted``: each class's ``files`` and ``bytes`` by its place (what the measures counted; a class not in it,
    or no ``counted``, holds none)."""
    import numpy as np
    import pandas as pd

    edges = sorted({0, *(e for e in (MIB, 8 * MIB, 32 * MIB, 128 * MIB) if e < small), small, target,
                    2 * target})
    edges.append(np.iinfo(np.int64).max)

    def label(lo: int, hi: int) -> str:
        def h(n: int) -> str:
            return f"{n / MIB:g} MiB" if n % MIB == 0 or n >= MIB else f"{n:,} B"
        return f">= {h(lo)}" if hi == edges[-1] else f"{h(lo)} – {h(hi)}"

    counted = counted or {}
    classes = range(len(edges) - 1)
    return pd.DataFrame({
        "size_class": [label(lo, hi) for lo, hi in zip(edges[:-1], edges[1:])],
        "min_bytes": edges[:-1], "max_bytes": edges[1:],
        **{col: pd.array([int(counted[i][col]) if i in counted else 0 for i in classes], "int64")
           for col in ("files", "bytes")},
        "small": [hi <= small for hi in edges[1:]],
    })


def sum_relations(target: int, small_size: int) -> dict[str, Any]:
    """The ``params``, ``debt_params`` and ``size_classes`` relations of the measures' sums
    (:mod:`~.iceberg.measures`, Arrow): small below ``small_size``, read amplification above
    :data:`DELETE_FILES_PER_DATA_FILE`, a compaction candidate above :data:`DELETED_SHARE_THRESHOLD`, the size
    classes of :func:`size_histogram`."""
    from .iceberg.measures import debt_params, params, size_classes

    edges = size_histogram(int(target), small_size)
    return {"params": params(small_size, DELETE_FILES_PER_DATA_FILE, int(target)),
            "debt_params": debt_params(DELETED_SHARE_THRESHOLD),
            "size_classes": size_classes([*edges["min_bytes"], edges["max_bytes"].iloc[-1]])}


def list_tree(table: Any, root: str):
    """Every file under ``root`` with size and modification time (ms), through the I/O layer ``table.io``
    (of a :class:`~puffin_explorer.Table` or a Delta snapshot)."""
    return list_folder(table.io, root)


def list_folder(io: Any, root: str, folder: Optional[str] = None, stat: bool = True):
    """Every file under ``folder`` (default ``root``) through the I/O layer ``io``, as :func:`list_tree` rows:
    ``location`` (``root`` joined with the path below it, normalized), ``size``, ``mtime_ms``, ``hidden``.
    Listing each top-level folder of ``root`` gives the rows of listing ``root`` itself (a Spark task each).
    Rows are in location order; the columns are made in Arrow: a Python string per file only as the frame's cell.
    ``stat=False``: see :func:`listing_arrow`."""
    return listing_arrow(io, root, folder, stat).to_pandas()


def listing_arrow(io: Any, root: str, folder: Optional[str] = None, stat: bool = True):
    """:func:`list_folder`'s rows as an Arrow table (no Python string per file).  ``stat=False``: a local
    file system's sizes and times are left null (:meth:`~.io.FileIO.walk_batches`), for
    :func:`fill_listing_stats` to read where they are needed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    _, root_path = io.fs(root)
    # each batch of the walk made columns before the next is walked: no Python string per file kept
    parts = [listing_table(names, sizes, mtimes, root_path, root)
             for names, sizes, mtimes in io.walk_batches(folder if folder is not None else root, stat=stat)]
    rows = pa.concat_tables(parts) if parts else listing_table([], [], [], root_path, root)
    del parts
    loc = rows.column("location")
    if len(loc) > 1 and not pc.all(pc.less_equal(loc.slice(0, len(loc) - 1), loc.slice(1))).as_py():
        rows = rows.sort_by("location")  # a local walk comes sorted; a store's listing may not
    return rows.combine_chunks()


def fill_listing_stats(io: Any, rows: Any, wanted: Any) -> Any:
    """The listing ``rows`` (:func:`listing_arrow`) with the size and time read of each row in ``wanted`` (a
    boolean mask) that has none, and without the rows of files gone since they were listed: ``(rows, kept)``,
    ``kept`` the mask of the rows kept (None when every row is)."""
    import numpy as np
    import pyarrow as pa

    need = np.asarray(wanted, dtype=bool) & rows.column("size").is_null().to_numpy(zero_copy_only=False)
    at = np.flatnonzero(need)
    if not len(at):
        return rows, None
    locations = rows.column("location").take(pa.array(at)).to_pylist()  # the few files the checks look at
    sizes, mtimes = io.stats(locations)
    size = rows.column("size").to_numpy(zero_copy_only=False).astype(np.float64)
    ms = rows.column("mtime_ms").to_numpy(zero_copy_only=False).astype(np.float64)
    size[at] = [np.nan if v is None else v for v in sizes]
    ms[at] = [np.nan if v is None else v for v in map(_mtime_ms, mtimes)]
    gone = np.zeros(len(size), dtype=bool)
    gone[at] = [v is None for v in sizes]

    def ints(values: Any) -> Any:
        return pa.array(np.nan_to_num(values).astype(np.int64), pa.int64(), mask=np.isnan(values))

    rows = rows.set_column(rows.schema.get_field_index("size"), "size", ints(size))
    rows = rows.set_column(rows.schema.get_field_index("mtime_ms"), "mtime_ms", ints(ms))
    return (rows.filter(pa.array(~gone)), ~gone) if gone.any() else (rows, None)


def listing_table(names: list, sizes: Optional[list], mtimes: Optional[list], root_path: str, root: str):
    """The listing rows of files ``names`` (the file system's spelling under ``root_path``, the spelling of
    ``root``) with their sizes and modification times (seconds, or timestamps as the store spells them; None:
    not read, nulls), as an Arrow table of :func:`list_folder`'s columns, in the order given."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .iceberg.paths import join, normalize  # here: the Iceberg and Delta tables import this module

    base = root_path.rstrip("/")
    try:
        written = pa.array(names, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # a store's names that are not str
        written = pa.array(list(map(str, names)), pa.string())
    # the path below the root (its leading slashes dropped), column-wise; a name not under it as it is
    rel = pc.if_else(pc.starts_with(written, base),
                     pc.utf8_ltrim(pc.utf8_slice_codeunits(written, len(base)), "/"), written) if len(written) else \
        written
    prefix = normalize(join(root, "x"))[:-1]  # normalize only touches the scheme and the trailing slashes
    if mtimes is None:
        ms = pa.nulls(len(names), pa.int64())
    elif set(map(type, mtimes)) <= {int, float}:  # seconds, as a local file system gives them
        ms = pa.array((np.asarray(mtimes, dtype=np.float64) * 1000).astype(np.int64), pa.int64())
    else:  # None, timestamps or text among them: one at a time
        ms = pa.array([_mtime_ms(m) for m in mtimes], pa.int64())
    return pa.table({"location": pc.binary_join_element_wise(prefix, rel, ""),
                     "size": pa.array(sizes, pa.int64()) if sizes is not None else pa.nulls(len(names), pa.int64()),
                     "mtime_ms": ms, "hidden": pc.match_substring_regex(rel, HIDDEN_PATH)})


#: What :func:`hidden_from_cleanup` says, as one regular expression over the path below the table location: a
#: name starting with ``.``, a file name starting with ``_``, a folder name starting with ``_`` without ``=``.
HIDDEN_PATH = r"(^|/)\.|(^|/)_[^/]*$|(^|/)_[^/=]*/"


def _mtime_ms(mtime: Any) -> Optional[int]:
    """A listing's modification time (seconds, or a timestamp as the store spells it) in epoch ms."""
    import pandas as pd

    if mtime is None:
        return None
    try:
        return int(float(mtime) * 1000) if isinstance(mtime, (int, float)) else \
            int(pd.Timestamp(mtime).timestamp() * 1000)
    except (TypeError, ValueError):
        return None


def hidden_from_cleanup(relative: str) -> bool:
    """Whether ``remove_orphan_files`` skips a path: a name under the table location starting with ``.``
    or ``_`` (Hadoop's ``.crc`` files, ``_SUCCESS``), except ``_name=value`` partition folders."""
    parts = relative.split("/")
    return any(p.startswith(".") or (p.startswith("_") and not (i < len(parts) - 1 and "=" in p))
               for i, p in enumerate(parts))


def epoch_ms(value: Any) -> int:
    """Epoch milliseconds of a timestamp, ``datetime``, ISO string or number (already ms)."""
    import pandas as pd

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    ts = pd.Timestamp(value)
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return int(ts.timestamp() * 1000)


def deleted_share_finding(m: dict, how_read: str, actions: tuple, effect: dict) -> "HealthFinding":
    """``health.deleted-share`` from a table's metrics: how readers get past the deletes is ``how_read``."""
    return HealthFinding(
        "health.deleted-share", Severity.WARNING,
        f"{m['deleted_share']:.1%} of the rows are deleted ({m['deleted_rows']:,} of {m['records']:,}); readers "
        f"still read them and {how_read}",
        {"deleted_rows": m["deleted_rows"], "records": m["records"], "deleted_share": round(m["deleted_share"], 4),
         "threshold": DELETED_SHARE_THRESHOLD, "source": "default (the table card's compaction threshold)",
         "dvs": m["dvs"], "delete_files": m["delete_files"]},
        actions, effect)


COUNT_UNKNOWN = "health.count-unknown"
#: The doctor's findings built on the counts of each side (dropped when those counts are not known: a rule that
#: reads a smaller number than the table's would say a wrong thing, or miss a right one).
ROWS_FINDINGS = ("health.small-files", "health.partition-skew", "health.poor-clustering",
                 "health.columns-without-bounds")
JOINED_FINDINGS = ("health.read-amplification", "health.dangling-deletes")
DELETED_FINDINGS = ("health.deleted-share",)

_NAMES = {"data_files": "data files", "records": "records", "delete_files": "delete files", "dvs": "DVs",
          "deleted_rows": "deleted rows", "live_rows": "live rows"}


def unknown_counts(m: dict, findings: list, frames: dict, cov: Coverage, what: str,
                   evidence: Optional[dict] = None) -> None:
    """An unknown count is not zero: when ``cov`` says files of the snapshot (``what``: ``snapshot 123``,
    ``version 4``) could not be read, every metric they feed is set to None in ``m``, the findings built on them
    are dropped, the frames summed from what was read are marked ``attrs["partial"]``, and one
    ``health.count-unknown`` warning names the unknown metrics, the findings that say why and, where what was read
    is a lower bound, the partial counts labelled with what they cover."""
    if cov.whole:
        return
    unknown = [k for k in cov.unknown_metrics() if k in m]
    at_least = {k: int(m[k]) for k in LOWER_BOUND_METRICS
                if k in unknown and m.get(k) is not None and cov.at_least(m[k])}
    for k in unknown:
        m[k] = None
    drop = set(ROWS_FINDINGS if not cov.rows else ())
    if not (cov.rows and cov.deletes):
        drop |= set(JOINED_FINDINGS)
    drop |= set(DELETED_FINDINGS)
    findings[:] = [f for f in findings if f.code not in drop]
    for name in ("size_histogram", "partitions", "amplification", "clustering", "columns"):  # sums of files read
        if hasattr(frames.get(name), "attrs"):
            frames[name].attrs["partial"] = True
    named = [_NAMES[k] for k in ("records", "live_rows", "deleted_rows", "data_files", "delete_files", "dvs")
             if k in unknown]
    rest = len(unknown) - len(named)
    which = ", ".join(named) + (f" and {plural(rest, 'more metric')}" if rest else "")
    why = ", ".join(cov.because) or "the findings"
    partial = "; ".join(f"{_NAMES[k]} {cov.at_least(v)}" for k, v in at_least.items())
    findings.append(HealthFinding(
        COUNT_UNKNOWN, Severity.WARNING,
        f"{which} of {what} are unknown, not zero: files they depend on could not be read ({why})"
        + (f"; partial counts: {partial}" if partial else ""),
        {"unknown": unknown, "at_least": at_least, "covers": cov.covers, "because": list(cov.because),
         **(evidence or {})},
        hint="each finding it names says which file; t.refresh() reads the newest metadata when a maintenance job "
             "removed them"))


def small_files_finding(m: dict, summary: dict, target: int, small_size: int, prop: str, source: str,
                        actions: Any) -> Optional["HealthFinding"]:
    """``health.small-files``, the one rule for every format: the partitions with two or more small files, each
    rewritten into ceil(small bytes / target) files, as the ``partition_summary`` measure sums them
    (``summary``, one row); None when that saves no file.  ``actions(summary)`` gives the statements;
    ``prop`` / ``source`` say where the target size came from."""
    partitions = int(summary["small_partitions"] or 0)
    if not partitions:
        return None
    before, after = int(summary["small_files_merged"]), int(summary["small_files_after"])
    if before - after < 1:
        return None
    share = m["small_files"] / m["data_files"] if m["data_files"] else 0.0
    sev = (Severity.WARNING if share >= SMALL_FILES_WARNING_SHARE or before - after >= SMALL_FILES_WARNING_MERGES
           else Severity.INFO)
    effect = {"data_files_before": m["data_files"], "data_files_after": m["data_files"] - before + after,
              "files_rewritten": before, "bytes_rewritten": int(summary["small_bytes_merged"]),
              "rows_read": int(summary["small_rows_merged"])}
    return HealthFinding(
        "health.small-files", sev,
        f"{m['small_files']:,} of {plural(m['data_files'], 'data file')} ({share:.0%}) {are(m['small_files'])} below "
        f"{small_size:,} B ({SMALL_FILE_SHARE:.0%} of the {target:,} B target); {before:,} of them in "
        f"{plural(partitions, 'partition')} merge into {after:,}",
        {"small_files": m["small_files"], "small_bytes": m["small_bytes"], "data_files": m["data_files"],
         "small_file_size": small_size, "target_file_size": int(target), "property": prop, "source": source,
         "partitions_to_rewrite": partitions},
        actions(summary), effect)


def card_health(table: Any, data_files: int, now: Any, kept: dict, up_to: int) -> Optional[TableHealth]:
    """The doctor run a table card shows: ``table.health(list_files=False)`` dated by ``now`` (default this
    minute), None above ``up_to`` data files (the table's ``card_health_up_to``).  The HTML and text forms of one
    display share one run: an undated one is kept in the table's ``kept`` dict for ``CARD_HEALTH_KEEP_S`` seconds."""
    import time

    if data_files > up_to:
        return None
    if now is not None:
        return table.health(now=now, list_files=False)
    last = kept.get("card-health")
    if last is not None and time.monotonic() - last[0] < CARD_HEALTH_KEEP_S:
        return last[1]
    h = table.health(now=int(time.time() // 60 * 60_000), list_files=False)
    kept["card-health"] = (time.monotonic(), h)
    return h
