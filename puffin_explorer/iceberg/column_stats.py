"""Per-column totals of the manifests' metrics (value, null and NaN counts, column sizes, bounds), one
definition for the doctor on the driver and on Spark: each share of the data files sums into a
:class:`ColumnPartial` (a Spark task's share on its executor, every file at once on the driver), partials merge,
and :func:`columns_frame` turns the merged one into the doctor's ``columns`` frame."""

from __future__ import annotations

from typing import Any

from .._arrays import sorted_unique

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

    def add_arrow(self, rids: Any, metrics: Any, fields: dict) -> None:
        """Data files' metric columns at once (``metrics``: an Arrow table of :data:`METRIC_COLUMNS` as the index
        holds them; ``rids``: each row's place in the index), with the same result as :meth:`add` of each row's
        :func:`decoded_maps` in order: counts summed and bounds compared in Arrow and numpy, only the extreme
        bound of a column decoded.  A column whose bounds do not decode by type alone (decimals, bytes that do
        not fit, dates past year 9999) is decoded value by value, and a batch where a file names a column twice
        goes row by row, so damaged metadata gives what :meth:`add` gives."""
        import numpy as np

        rids = np.asarray(rids, dtype=np.int64)
        flat = {k: _Flat(metrics.column(col)) for k, col in zip(MAPS, METRIC_COLUMNS)}
        names: dict[Any, str] = {}
        for k in MAPS:
            for key in flat[k].distinct_keys:
                if key not in names:
                    names[key] = _field_name(fields, key)
        if len(set(names.values())) != len(names) or any(f.repeats() for f in flat.values()):
            for i, record in zip(rids.tolist(), metrics.to_pylist()):  # a column named twice: row by row
                self.add(i, decoded_maps(record, fields))
            return
        for k in MAPS:
            f = flat[k]
            if not f.size:
                continue
            for key, first, members in f.groups(rids):
                c = names[key]
                self.seen(k, c, first)
                if k in self.sums:
                    self.sums[k][c] = self.sums[k].get(c, 0) + f.total(members)
                    continue
                type_name = fields.get(key, (None, None))[1] if isinstance(key, int) else None
                got = _extreme_bound(type_name, f.values, members, low=k == "lows")
                if got is None:  # decoded one by one, exactly as add() does
                    for v in _decoded(type_name, f.values, members):
                        if not _missing(v):
                            if k == "lows":
                                self.bounded[c] = self.bounded.get(c, 0) + 1
                            self.extreme(k, c, v)
                    continue
                present, value = got
                if k == "lows" and present:
                    self.bounded[c] = self.bounded.get(c, 0) + present
                if present:
                    self.extreme(k, c, value)

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


def _field_name(fields: dict, key: Any) -> str:
    from .bounds import field_of

    return field_of(fields, key)[0]


class _Flat:
    """One metric map column flattened: each (key, value) pair with its row and its place in the row's map."""

    def __init__(self, column: Any) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        lists = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        pairs = pc.list_flatten(lists)
        self.size = len(pairs)
        self.rows = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
        lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy().astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.places = np.arange(self.size, dtype=np.int64) - starts[self.rows]
        keys = pairs.field("key")
        self.null_keys = keys.null_count > 0
        self.keys = pc.fill_null(keys, 0).to_numpy().astype(np.int64) if self.size else np.zeros(0, np.int64)
        self.key_null = keys.is_null().to_numpy(zero_copy_only=False) if self.null_keys else None
        self.values = pairs.field("value")
        if self.null_keys:  # a null key is its own column ("#None"): a code no int32 key takes
            self.keys = np.where(self.key_null, np.int64(1) << 40, self.keys)
        self.distinct_keys = [None if k == 1 << 40 else int(k) for k in sorted_unique(self.keys)]

    def repeats(self) -> bool:
        """Whether a row's map names one key twice."""
        import numpy as np

        if self.size < 2:
            return False
        order = np.lexsort((self.keys, self.rows))
        rows, keys = self.rows[order], self.keys[order]
        return bool(((rows[1:] == rows[:-1]) & (keys[1:] == keys[:-1])).any())

    def groups(self, rids: Any):
        """``(key, (rid, place) where it first appears, indices of its pairs in row order)`` per column."""
        import numpy as np

        order = np.argsort(self.keys, kind="stable")  # row order kept within a column
        keys = self.keys[order]
        cuts = np.flatnonzero(np.diff(keys)) + 1
        for members in np.split(order, cuts):
            at = rids[self.rows[members]]
            i = np.lexsort((self.places[members], at))[0]
            code = int(self.keys[members[0]])
            yield (None if code == 1 << 40 else code), (int(at[i]), int(self.places[members[i]])), members

    def total(self, members: Any) -> int:
        """The sum of the counts at ``members`` (nulls skipped), exact past a long."""
        import pyarrow as pa

        got = self.values.take(pa.array(members)).drop_null().to_numpy()
        if not len(got):
            return 0
        if max(-int(got.min()), int(got.max())) < (1 << 62) // len(got):
            return int(got.sum())
        return sum(int(v) for v in got.tolist())


_FIXED_INTS = {"int": (4,), "long": (4, 8), "date": (4,), "time": (8,), "timestamp": (8,), "timestamptz": (8,),
               "timestamp_ns": (8,), "timestamptz_ns": (8,)}
_FLOATS = {"float": (4,), "double": (4, 8)}
_BYTES_ORDERED = {"string", "binary", "uuid"}


def _range_of(type_name: str):
    """The raw values of a date or time type that decode (years 1 to 9999, a time within a day)."""
    import datetime as dt

    if type_name == "date":
        return (dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days, (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days
    if type_name == "time":
        return 0, 86_400_000_000 - 1
    if type_name in ("timestamp", "timestamptz"):
        lo = dt.datetime(1, 1, 1) - dt.datetime(1970, 1, 1)
        hi = dt.datetime(9999, 12, 31, 23, 59, 59, 999_999) - dt.datetime(1970, 1, 1)
        return lo // dt.timedelta(microseconds=1), hi // dt.timedelta(microseconds=1)
    if type_name in ("timestamp_ns", "timestamptz_ns"):
        return -(1 << 63) + 1, (1 << 63) - 1  # -2^63 is pandas' NaT
    return -(1 << 63), (1 << 63) - 1


def _numbers(values: Any, members: Any, widths: tuple, kind: str):
    """The values at ``members`` as numbers (int64 or float64), or None when a width does not fit."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    got = values.take(pa.array(members))
    lengths = pc.binary_length(got).to_numpy()
    out = np.empty(len(got), dtype=np.float64 if kind == "f" else np.int64)
    for width in widths:
        at = np.flatnonzero(lengths == width)
        if not len(at):
            continue
        part = got.take(pa.array(at))  # one width: the values lie end to end in the data buffer
        offsets = np.frombuffer(part.buffers()[1], dtype=np.int32)[part.offset:part.offset + len(part) + 1]
        data = memoryview(part.buffers()[2])[offsets[0]:offsets[-1]]
        dtype = {("i", 4): "<i4", ("i", 8): "<i8", ("f", 4): "<f4", ("f", 8): "<f8"}[kind, width]
        out[at] = np.frombuffer(data, dtype=dtype)
    if not np.isin(lengths, widths).all():
        return None
    return out


def _extreme_bound(type_name: Any, values: Any, members: Any, low: bool):
    """``(bounds present, the smallest / largest one decoded)`` of one column's bounds at ``members``, or None
    when they must be decoded one by one (a type compared only once decoded, or bytes that do not decode)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .bounds import decode_value

    t = type_name.strip().lower() if isinstance(type_name, str) else None
    got = values.take(pa.array(members))
    if got.null_count:
        return None
    if t in _FIXED_INTS or t in _FLOATS:
        kind = "i" if t in _FIXED_INTS else "f"
        numbers = _numbers(values, members, (_FIXED_INTS if kind == "i" else _FLOATS)[t], kind)
        if numbers is None:
            return None
        if kind == "i":
            lo, hi = _range_of(t)
            if len(numbers) and (numbers.min() < lo or numbers.max() > hi):
                return None
            keep = np.arange(len(numbers))
        else:
            keep = np.flatnonzero(~np.isnan(numbers))  # a NaN bound is no bound
        if not len(keep):
            return 0, None
        at = keep[np.argmin(numbers[keep]) if low else np.argmax(numbers[keep])]
        return len(keep), decode_value(type_name, got[int(at)].as_py())
    if t is None or t in _BYTES_ORDERED or t.startswith("fixed["):
        if t == "uuid" and not pc.all(pc.equal(pc.binary_length(got), 16)).as_py():
            return None
        if t == "string":
            try:
                got.cast(pa.string())
            except pa.ArrowInvalid:
                return None
        if not len(got):
            return 0, None
        extreme = pc.min_max(got)["min" if low else "max"].as_py()
        return len(got), (bytes(extreme) if type_name is None else decode_value(type_name, extreme))
    if t == "boolean":
        lengths = pc.binary_length(got)
        if not pc.all(pc.equal(lengths, 1)).as_py():
            return None
        flags = [b != b"\x00" for b in got.to_pylist()]
        return len(flags), (min(flags) if low else max(flags))
    return None


def _decoded(type_name: Any, values: Any, members: Any) -> list:
    """The bounds at ``members`` decoded one by one, as :func:`.bounds.decode_bounds` decodes them."""
    import pyarrow as pa

    return _decoded_each(values.take(pa.array(members)), [0] * len(members), {0: type_name})


def column_bounds(bounds: Any, fields: dict, column: str) -> list:
    """One column's bound per row of a bounds column (``lower_bounds`` or ``upper_bounds`` as the index holds
    it), decoded as :func:`decoded_maps` decodes it (None where a row has none): only that column is decoded."""
    import numpy as np
    import pyarrow as pa

    flat = _Flat(bounds)
    out: list = [None] * len(bounds)
    wanted = [k for k in flat.distinct_keys if _field_name(fields, k) == column]
    if not wanted:
        return out
    codes = [(1 << 40) if k is None else k for k in wanted]
    at = np.flatnonzero(np.isin(flat.keys, codes))
    type_of = {k: (fields.get(k, (None, None))[1] if isinstance(k, int) else None) for k in wanted}
    keys = flat.keys[at].tolist()
    for row, key, value in zip(flat.rows[at].tolist(), keys, _decoded_each(flat.values.take(pa.array(at)), keys,
                                                                           type_of)):
        out[row] = value  # a row naming the column twice keeps the last, as a dict does
    return out


def _decoded_each(values: Any, keys: list, type_of: dict) -> list:
    from .bounds import BoundDecodeError, decode_value

    out = []
    for key, value in zip(keys, values.to_pylist()):
        type_name = type_of[None if key == 1 << 40 else key]
        try:
            out.append(decode_value(type_name, value) if type_name is not None else bytes(value))
        except BoundDecodeError as exc:
            out.append(f"<bad bound: {bytes(value).hex()} ({exc})>")
    return out


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


__all__ = ["MAPS", "METRIC_COLUMNS", "ColumnPartial", "column_bounds", "columns_frame", "decoded_maps"]
