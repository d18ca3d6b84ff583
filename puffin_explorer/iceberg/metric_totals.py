"""The doctor's column metrics of a snapshot's live files, summed as its manifests are decoded.

The metrics (value, null and NaN counts, column sizes, bounds) are most of what a manifest entry holds: an index
that keeps them for a million files holds about 80 bytes per file and column more than one without.  The doctor
needs them summed, never per file, so :class:`MetricTotals` takes them a batch of manifests at a time
(:func:`~.index_build.build_index`'s ``metric_sink``, or :func:`~.index_build.stream_metrics` over an index built
before) and keeps only their sums (:class:`~.column_stats.ColumnPartial`), the clustering column's bounds per
data file when one is asked for, and the ``file_path`` bounds of position and equality delete files (the path
scope of one without ``referenced_data_file``).  The Spark doctor sums the same way per task."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .column_stats import METRIC_COLUMNS, ColumnPartial, column_bounds

if TYPE_CHECKING:  # pragma: no cover
    from .index import EntryIndex
    from .source import TableSource

#: Delete files scoped by their ``file_path`` bounds when they name no data file.
SCOPED_KINDS = ("position-deletes", "equality-deletes")
#: Data files whose metrics are summed at a time: summing flattens a batch's metric maps (several int64 arrays per
#: map entry), so this bounds that memory at any table width.
ROWS_PER_BATCH = 20_000
#: Manifest ordinals are spaced this far apart in the row numbers :class:`ColumnPartial` orders columns by.
_ORDINAL_SHIFT = 32


class MetricTotals:
    """One snapshot's column metrics summed (``partial``), the clustering ``column``'s lower and upper bound per
    live data file in index order (``lows``, ``highs``; only when a column is given) and the decoded bounds maps of
    the live position and equality delete files (``scope_bounds``: kind -> (lowers, uppers) in index order; none
    from an index with metrics, whose bounds :func:`~.relations.index_relations` reads itself).
    Fill it with :meth:`add` per batch of ``(ordinal, chunk)`` and close with :meth:`finish`, or at once from an
    index with metrics (:meth:`from_index`)."""

    def __init__(self, fields: dict, column: Optional[str] = None) -> None:
        self.fields = fields
        self.column = column
        self.partial = ColumnPartial()
        self.handed: set[int] = set()
        self.lows: Optional[list] = None
        self.highs: Optional[list] = None
        self.scope_bounds: dict[str, tuple[list, list]] = {}
        self._bounds: dict[int, tuple[list, list]] = {}  # ordinal -> the clustering column's bounds of its data
        self._scopes: dict[int, dict[str, tuple[list, list]]] = {}  # ordinal -> kind -> bounds maps of its deletes

    def add(self, handed: list) -> None:
        """A batch of decoded manifests, ``(ordinal, chunk with metrics)`` each: their live data files' metrics
        summed (``ROWS_PER_BATCH`` files at a time, whatever the manifests' sizes), the bounds this keeps taken."""
        import numpy as np
        import pyarrow as pa

        from .bounds import decode_bounds
        from .index import EntryIndex

        parts, rids = [], []
        for ordinal, chunk in handed:
            self.handed.add(ordinal)
            view = EntryIndex(None, chunk, [], None)
            at = np.flatnonzero(view.mask(["data"]))
            if len(at):
                rows = view.take(at, list(METRIC_COLUMNS))
                parts.append(rows)
                rids.append((ordinal << _ORDINAL_SHIFT) + np.arange(len(at), dtype=np.int64))
                if self.column is not None:
                    self._bounds[ordinal] = (column_bounds(rows.column("lower_bounds"), self.fields, self.column),
                                             column_bounds(rows.column("upper_bounds"), self.fields, self.column))
            for kind in SCOPED_KINDS:
                scoped = np.flatnonzero(view.mask([kind]))
                if len(scoped):
                    b = view.take(scoped, ["lower_bounds", "upper_bounds"])
                    self._scopes.setdefault(ordinal, {})[kind] = (
                        [decode_bounds(v, self.fields) for v in b.column("lower_bounds").to_pylist()],
                        [decode_bounds(v, self.fields) for v in b.column("upper_bounds").to_pylist()])
        if parts:  # flattened ROWS_PER_BATCH rows at a time (several int64 arrays per map entry)
            rows, rids = pa.concat_tables(parts), np.concatenate(rids)
            for start in range(0, len(rids), ROWS_PER_BATCH):
                self.partial.add_arrow(rids[start:start + ROWS_PER_BATCH], rows.slice(start, ROWS_PER_BATCH),
                                       self.fields)

    def finish(self, index: "EntryIndex") -> "MetricTotals":
        """The kept bounds put in index order; a manifest never handed over (unreadable the second time) gives
        its files no bounds, as files without metrics."""
        import numpy as np

        ordinal = index.ints("manifest", -1)

        def per_ordinal(mask) -> list[tuple[int, int]]:
            counts = np.bincount(ordinal[mask & (ordinal >= 0)], minlength=len(index.manifests))
            return [(i, int(n)) for i, n in enumerate(counts.tolist()) if n]

        if self.column is not None:
            self.lows, self.highs = [], []
            for i, n in per_ordinal(index.mask(["data"])):
                lo, hi = self._bounds.get(i, ([None] * n, [None] * n))
                self.lows += lo
                self.highs += hi
        for kind in SCOPED_KINDS:
            lowers: list = []
            uppers: list = []
            for i, n in per_ordinal(index.mask([kind])):
                lo, hi = self._scopes.get(i, {}).get(kind, ([{}] * n, [{}] * n))
                lowers += lo
                uppers += hi
            self.scope_bounds[kind] = (lowers, uppers)
        self._bounds, self._scopes = {}, {}
        return self

    @classmethod
    def from_index(cls, index: "EntryIndex", fields: dict, column: Optional[str] = None) -> "MetricTotals":
        """The totals of an index that holds its metrics (``metrics=True``), ``ROWS_PER_BATCH`` rows at a time."""
        import numpy as np

        totals = cls(fields, column)
        at = np.flatnonzero(index.mask(["data"]))
        lows: list = []
        highs: list = []
        for start in range(0, len(at), ROWS_PER_BATCH):  # a batch's metrics copied at a time, never all of them
            part = index.take(at[start:start + ROWS_PER_BATCH], list(METRIC_COLUMNS))
            totals.partial.add_arrow(np.arange(start, start + part.num_rows), part, fields)
            if column is not None:
                lows += column_bounds(part.column("lower_bounds"), fields, column)
                highs += column_bounds(part.column("upper_bounds"), fields, column)
        if column is not None:
            totals.lows, totals.highs = lows, highs
        return totals  # no scope_bounds: index_relations reads them from this index's own metrics


def metric_totals(source: "TableSource", column: Optional[str] = None,
                  progress: Optional[bool] = None) -> tuple["EntryIndex", MetricTotals, list[tuple]]:
    """The current snapshot's index (the one without metrics every analysis shares) and its :class:`MetricTotals`:
    summed while that index is built, or by reading the manifests again when it was built before (an index with
    metrics built before is read instead).  Also the raw findings of manifests whose metrics could not be read."""
    from .entry_cache import entry_cache
    from .index_build import build_index, stream_metrics

    fields = source.fields_by_id()
    current = source.metadata.current_snapshot_id
    with_metrics = entry_cache(source).indexes.get((current, None, True)) if current is not None else None
    if with_metrics is not None:
        return with_metrics, MetricTotals.from_index(with_metrics, fields, column), []
    totals = MetricTotals(fields, column)
    index = build_index(source, metric_sink=totals.add, progress=progress)
    unread = stream_metrics(source, index, totals.add, skip=totals.handed, progress=progress)
    return index, totals.finish(index), unread


__all__ = ["MetricTotals", "metric_totals"]
