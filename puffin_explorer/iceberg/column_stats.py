"""Per-column totals of the manifests' metrics (value, null and NaN counts, column sizes, bounds), one
definition for the doctor on the driver and on Spark: each share of the data files sums into a
:class:`ColumnPartial` (a Spark task's share on its executor, every file at once on the driver), partials merge,
and :func:`columns_frame` turns the merged one into the doctor's ``columns`` frame."""

from __future__ import annotations

from typing import Any

#: The metric maps of one data file, by column name (bounds decoded).
MAPS = ("values", "nulls", "nans", "sizes", "lows", "highs")
#: The index's metric columns, in the order of :data:`MAPS`.
METRIC_COLUMNS = ("value_counts", "null_value_counts", "nan_value_counts", "column_sizes", "lower_bounds",
                  "upper_bounds")


def decoded_maps(record: dict, fields: dict) -> dict:
    """One index entry's metric columns (:data:`METRIC_COLUMNS`, as the manifest stores them) as :data:`MAPS`:
    counts by column name (``#<id>`` for a column the schema lacks), bounds decoded as ``files(decode=True)``
    decodes them."""
    from .bounds import column_names as named, decode_bounds

    return {"values": named(record["value_counts"], fields), "nulls": named(record["null_value_counts"], fields),
            "nans": named(record["nan_value_counts"], fields), "sizes": named(record["column_sizes"], fields),
            "lows": decode_bounds(record["lower_bounds"], fields), "highs": decode_bounds(record["upper_bounds"], fields)}


def _missing(v: Any) -> bool:
    """What pandas' ``notna`` calls missing (None, NaN, NaT), cheaply for the plain values metrics hold."""
    if v is None:
        return True
    if isinstance(v, float):
        return v != v
    if isinstance(v, (int, str, bytes)):
        return False
    import pandas as pd

    try:
        return bool(pd.api.types.is_scalar(v) and pd.isna(v))
    except (TypeError, ValueError):
        return False


class ColumnPartial:
    """A share of the data files' column metrics (one Spark task's, or every file's on the driver): per metric map the first place (row, position) each column appears,
    sums of the counts, and per column the files with a lower bound and the smallest lower / largest upper
    bound (a column whose bounds do not compare is marked, as ``min`` raising ``TypeError`` marks it)."""

    def __init__(self) -> None:
        self.first: dict[str, dict[str, tuple]] = {k: {} for k in MAPS}
        self.sums: dict[str, dict[str, Any]] = {k: {} for k in ("values", "nulls", "nans", "sizes")}
        self.bounded: dict[str, int] = {}
        self.ext: dict[str, dict[str, Any]] = {"lows": {}, "highs": {}}
        self.broken: dict[str, set] = {"lows": set(), "highs": set()}

    def add(self, rid: int, maps: dict[str, dict]) -> None:
        """One data file's decoded metric maps (``MAPS`` keys), ``rid`` its place in the index."""
        for k in MAPS:
            for pos, (c, v) in enumerate(maps[k].items()):
                self.seen(k, c, (rid, pos))
                if k in self.sums:
                    total = self.sums[k].setdefault(c, 0)
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and not _missing(v):
                        self.sums[k][c] = total + v
                elif not _missing(v):
                    if k == "lows":
                        self.bounded[c] = self.bounded.get(c, 0) + 1
                    self.extreme(k, c, v)

    def seen(self, k: str, c: str, at: tuple) -> None:
        if c not in self.first[k] or at < self.first[k][c]:
            self.first[k][c] = at

    def extreme(self, k: str, c: str, v: Any) -> None:
        if c in self.broken[k]:
            return
        try:
            cur = self.ext[k]
            cur[c] = v if c not in cur else (min(cur[c], v) if k == "lows" else max(cur[c], v))
        except TypeError:
            self.broken[k].add(c)

    def merge(self, other: "ColumnPartial") -> None:
        for k in MAPS:
            for c, at in other.first[k].items():
                self.seen(k, c, at)
        for k in self.sums:
            for c, v in other.sums[k].items():
                self.sums[k][c] = self.sums[k].get(c, 0) + v
        for c, n in other.bounded.items():
            self.bounded[c] = self.bounded.get(c, 0) + n
        for k in ("lows", "highs"):
            self.broken[k] |= other.broken[k]
            for c, v in other.ext[k].items():
                self.extreme(k, c, v)


def columns_frame(partials: list):
    """The doctor's ``columns`` frame from :class:`ColumnPartial` s (one per Spark task, or one on the driver):
    per column values, nulls, NaNs and their rates, bytes and storage share, table-wide min / max, files with
    bounds; columns in the order they first appear."""
    import pandas as pd

    p = ColumnPartial()
    for part in partials:
        p.merge(part)
    first, sums, bounded, ext, broken = p.first, p.sums, p.bounded, p.ext, p.broken

    def order(k: str) -> list[str]:
        return sorted(first[k], key=lambda c: first[k][c])

    names = list(dict.fromkeys([*order("values"), *order("sizes"), *order("lows"), *order("nulls")]))
    total_size = float(sum(sums["sizes"].values())) if first["sizes"] else 0.0

    def total(k: str, c: str):
        return int(sums[k].get(c, 0)) if c in first[k] else None

    def extreme(k: str, c: str):
        if c not in first[k] or c in broken[k]:
            return None
        return ext[k].get(c)

    rows = []
    for c in names:
        n_values, n_nulls, n_nans, n_bytes = total("values", c), total("nulls", c), total("nans", c), \
            total("sizes", c)
        rows.append({
            "column": c, "values": n_values, "nulls": n_nulls, "nans": n_nans,
            "null_rate": (n_nulls / n_values) if n_values and n_nulls is not None else None,
            "nan_rate": (n_nans / n_values) if n_values and n_nans is not None else None,
            "bytes": n_bytes, "storage_share": (n_bytes / total_size) if n_bytes is not None and total_size else None,
            "min": extreme("lows", c), "max": extreme("highs", c),
            "files_with_bounds": int(bounded.get(c, 0)) if c in first["lows"] else 0,
        })
    return pd.DataFrame(rows, columns=["column", "values", "nulls", "nans", "null_rate", "nan_rate", "bytes",
                                       "storage_share", "min", "max", "files_with_bounds"])


__all__ = ["MAPS", "METRIC_COLUMNS", "ColumnPartial", "columns_frame", "decoded_maps"]
