"""Arrow and pandas column helpers every table analysis shares: paths normalized and located column-wise,
strings and nullable integers as pandas builds them, partition records by code, integer cells that never
round or overflow.  Below every analysis (over a :class:`~.source.TableSource`), above nothing of theirs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from .._arrays import sorted_unique
from .._memory import release_freed_memory
from .paths import located_column, normalized_column as normalized

if TYPE_CHECKING:  # pragma: no cover
    from .index import EntryIndex
    from .source import TableSource


class PathCodes:
    """Every index row's normalized ``file_path`` and ``referenced_data_file`` as codes into one dictionary of
    paths (int32 numpy arrays in the index's row order, -1 for a null): two rows name the same file exactly when
    their codes are equal.  The dictionary is not kept (at a million data files it is a second copy of their
    paths, 0.12 GB): code ``k`` is the path at the place ``first[k]`` of the index's ``file_path`` column followed
    by its ``referenced_data_file`` column, made again by :meth:`take` for the codes asked for."""

    def __init__(self, files: Any, refs: Any, first: Any, table: Any, renormalize: bool) -> None:
        self.files = files
        self.refs = refs
        self.first = first  # int64: code -> place among the file paths, then the references
        self.table = table  # the index's file_path and referenced_data_file columns (no copy)
        self.renormalize = renormalize  # whether the index's paths are spelled otherwise than normalized

    @property
    def size(self) -> int:
        """How many distinct paths there are (codes ``0 .. size - 1``)."""
        return len(self.first)

    def take(self, codes: Any):
        """The normalized paths of ``codes`` (any integer array-like, each in ``0 .. size - 1``), Arrow strings in
        that order (chunked as the index is when the codes are ascending and name file paths: every data file's
        code is, so a snapshot's file set is made without a second copy of its paths)."""
        import numpy as np
        import pyarrow as pa

        from .index import take_rows, take_runs

        places = self.first[np.asarray(codes, dtype=np.int64)]
        n = self.table.num_rows
        in_files = places < n
        if in_files.all() and bool((np.diff(places) > 0).all()):  # a manifest's files: slices of the index
            out = take_runs(self.table.select(["file_path"]), places).column(0)
            return normalized(out) if self.renormalize else out
        parts = [take_rows(self.table.select(["file_path"]), places[in_files]).column(0),
                 take_rows(self.table.select(["referenced_data_file"]), places[~in_files] - n).column(0)]
        got = pa.chunked_array([c for part in parts for c in part.chunks], pa.string()).combine_chunks()
        slot = np.empty(len(places), dtype=np.int64)  # where each asked code's path stands in ``got``
        slot[np.flatnonzero(in_files)] = np.arange(int(in_files.sum()), dtype=np.int64)
        slot[np.flatnonzero(~in_files)] = np.arange(int(in_files.sum()), len(places), dtype=np.int64)
        out = got.take(pa.array(slot, pa.int64()))
        return normalized(out) if self.renormalize else out

    @property
    def dictionary(self):
        """Every distinct path in code order (an Arrow string array, made anew at each call: take it for one
        lookup and let it go)."""
        import numpy as np

        got = self.take(np.arange(self.size, dtype=np.int64))
        return got.combine_chunks() if hasattr(got, "combine_chunks") else got


def first_places(codes, size: int):
    """For each code ``0 .. size - 1`` of ``codes`` (a numpy integer array, -1 for none), the first place that holds
    it (int64).  Arrow's memo numbers values in the order it first meets them, so code k first stands where the
    codes so far reach k (one pass); numbered any other way, the codes are sorted for it."""
    import numpy as np

    codes = np.asarray(codes).astype(np.int64)
    reach = np.maximum.accumulate(codes)
    first = np.flatnonzero(codes > np.concatenate([[-1], reach[:-1]]))
    if len(first) == size and np.array_equal(codes[first], np.arange(size)):
        return first
    values, at = np.unique(codes, return_index=True)
    out = np.full(size, -1, dtype=np.int64)
    keep = (values >= 0) & (values < size)
    out[values[keep]] = at[keep]
    return out


def path_codes(index: "EntryIndex") -> PathCodes:
    """:class:`PathCodes` of an index, made in one dictionary encoding and kept on it: deleted rows per data file,
    ``check()``'s DV references and the doctor join these integers instead of hashing the paths each time."""
    known = index.derived.get("path-codes")
    if known is not None:
        return known
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    paths = index.table.select(["file_path", "referenced_data_file"])
    written = paths.column("file_path"), paths.column("referenced_data_file")
    files, refs = normalized(written[0]), normalized(written[1])
    renormalize = files is not written[0] or refs is not written[1]
    chunks = [c.cast(pa.string()) for part in (files, refs) for c in (
        part.chunks if isinstance(part, pa.ChunkedArray) else [part])]
    n = len(index)
    if not chunks or not n:
        out = PathCodes(np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int64),
                        paths, renormalize)
    else:
        encoded = pa.chunked_array(chunks, pa.string()).dictionary_encode()  # one memo: every chunk's codes agree
        codes = pc.fill_null(pa.chunked_array([c.indices for c in encoded.chunks], pa.int32()), -1).to_numpy()
        first = first_places(codes, len(encoded.chunk(encoded.num_chunks - 1).dictionary))
        out = PathCodes(codes[:n], codes[n:], first, paths, renormalize)
        del encoded, files, refs, chunks
        release_freed_memory()  # the normalized copies, the encoder's hash table and dictionary: 0.4 GB at two million rows
    index.derived["path-codes"] = out
    return out


def coded_array(codes):
    """Path codes (a numpy array, -1 for no path) as an Arrow int64 array, -1 as null: a join key."""
    import numpy as np
    import pyarrow as pa

    codes = np.asarray(codes).astype(np.int64)
    return pa.array(codes, pa.int64(), mask=codes < 0)


def last_of_each(codes, size: int):
    """For each code ``0..size-1``, the last place in ``codes`` that holds it (-1 where none does); codes of -1
    (no path) go to the slot ``size``, the array's last: ``last[codes]`` is defined for every code, -1 included."""
    import numpy as np

    codes = np.asarray(codes, dtype=np.int64)
    last = np.full(size + 1, -1, dtype=np.int64)
    np.maximum.at(last, np.where(codes < 0, size, codes), np.arange(len(codes), dtype=np.int64))
    return last


def largest_of_each(codes, values, size: int):
    """The codes ``0..size-1`` that ``codes`` holds (-1: none, left out), in code order, and the largest of
    ``values`` (int64, aligned with ``codes``) at each: arrays indexed by code, no sort and no hash."""
    import numpy as np

    codes = np.asarray(codes, dtype=np.int64)
    named = codes >= 0
    codes, values = codes[named], np.asarray(values, dtype=np.int64)[named]
    largest = np.full(size, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(largest, codes, values)
    seen = np.zeros(size, dtype=bool)
    seen[codes] = True
    present = np.flatnonzero(seen)
    return present, largest[present]


def objects(values: list):
    """A numpy object array holding ``values`` as they are (dicts and lists stay one element each)."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def nullable_ints(column):
    """An Arrow integer column as a pandas ``Int64`` array (exact above 2**53)."""
    import numpy as np
    import pandas as pd
    import pyarrow.compute as pc

    values = pc.fill_null(column, 0).to_numpy().astype(np.int64)
    mask = column.is_null().to_numpy(zero_copy_only=False)
    return pd.arrays.IntegerArray(values, mask)


def strings(column, empty_dtype=object):
    """An Arrow string column as pandas builds one from Python values: ``str`` dtype, or ``None``
    objects when every value is null."""
    import numpy as np

    if len(column) == 0:
        return np.empty(0, dtype=empty_dtype)
    if column.null_count == len(column):
        return objects([None] * len(column))
    return column.to_pandas().array


def plain(column):
    """An Arrow column as pandas would have built it from Python values (ints with nulls as float)."""
    import pyarrow as pa

    if pa.types.is_integer(column.type) and column.null_count == 0:
        return column.to_numpy().astype("int64")
    return column.to_pandas().to_numpy()


def located_array(source: "TableSource", column):
    """Where each location of an Arrow string column is now, as Arrow strings (chunked as the column is when
    nothing moved): ``TableSource.locate`` column-wise (:func:`.paths.located_column` with the source's mapper)."""
    return located_column(source.mapper, column)


def located(source: "TableSource", column):
    """:func:`located_array` as a numpy object array of Python strings (for lookups and comparisons)."""
    return located_array(source, column).to_numpy(zero_copy_only=False)


def located_strings(source: "TableSource", column):
    """:func:`located_array` as a pandas ``str`` array (no Python object per row)."""
    import numpy as np

    if len(column) == 0:
        return np.empty(0, dtype=object)
    return located_array(source, column).to_pandas().array


def partition_labels(index: "EntryIndex", codes, label: Callable[[Any], Optional[str]], missing: Optional[str]):
    """``label(record)`` of the partition of each code (an Arrow integer column of ``partition`` codes), as an
    Arrow string array; ``missing`` for a null or unknown code.  Each distinct code among ``codes`` is labelled
    once; when they are most of the table's partitions, every partition's label is made once per index and kept
    (``index.derived``), so the analyses of one index never label a partition twice."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = index.partitions
    c = pc.fill_null(pc.cast(codes, pa.int64()), -1).to_numpy(zero_copy_only=False)
    c = np.where((c >= 0) & (c < len(parts)), c, -1)
    key = ("partition_labels", label)
    every = index.derived.get(key)
    if every is None or (c >= len(every) - 1).any():
        present = sorted_unique(c[c >= 0])
        if len(present) * 2 > len(parts):  # most partitions: label them all, once for every analysis of the index
            every = index.derived[key] = every_label(parts, label)
        else:
            every = None
            some = pa.array([label(r) for r in parts.take(present)] + [None], pa.string())
            out = some.take(pa.array(np.where(c < 0, len(present), np.searchsorted(present, np.maximum(c, 0)))))
    if every is not None:
        out = every.take(pa.array(np.where(c < 0, len(every) - 1, c)))
    return out if missing is None else pc.fill_null(out, missing)


def every_label(parts, label: Callable[[Any], Optional[str]]):
    """``label`` of every partition record of the registry ``parts`` and a null after them, an Arrow string array:
    made column-wise (``label.arrow``) for the records the registry also holds as Arrow, in Python for the rest."""
    import numpy as np
    import pyarrow as pa

    n = len(parts)
    make = getattr(label, "arrow", None)
    codes, texts = [np.empty(0, dtype=np.int64)], [pa.array([], pa.string())]
    for start, records in getattr(parts, "columns", ()) if make is not None else ():
        records = records.slice(0, max(0, min(len(records), n - start)))
        made = make(records)
        if made is None:
            continue
        valid = made.is_valid().to_numpy(zero_copy_only=False)  # a null: a record Python labels
        codes.append(np.arange(start, start + len(records), dtype=np.int64)[valid])
        texts.append(made.filter(pa.array(valid)))
    done = np.concatenate(codes)
    left = np.ones(n, dtype=bool)
    left[done] = False
    rest = np.flatnonzero(left)
    texts.append(pa.array([label(r) for r in parts.take(rest)], pa.string()))
    place = np.empty(n, dtype=np.int64)
    place[np.concatenate([done, rest])] = np.arange(n, dtype=np.int64)
    return pa.concat_arrays([pa.concat_arrays(texts).take(pa.array(place)), pa.array([None], pa.string())])


#: The text of no partition (a file of an unpartitioned spec, or one without a record).
UNPARTITIONED = "(unpartitioned)"


def partition_text(value: Any) -> str:
    """A partition as every view and frame shows it: ``name=value/name=value``, as Iceberg's data paths spell it
    (a null value ``null``, a boolean ``true`` / ``false``, any other value as Python's ``str``);
    :data:`UNPARTITIONED` for none.  Not a grouping key: two records can share a text (use the record, or
    :func:`.relations.record_text`)."""
    if isinstance(value, dict):
        return "/".join(f"{k}={_value_text(v)}" for k, v in value.items()) or UNPARTITIONED
    return UNPARTITIONED if value in (None, "") else str(value)


def _value_text(value: Any) -> str:
    """One partition value in :func:`partition_text`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _partition_text_arrow(records):
    """:func:`partition_text` of each record of a struct column, column-wise (see :func:`record_labels`)."""
    return record_labels(records, "text")


partition_text.arrow = _partition_text_arrow  # the same texts, column-wise


def partition_texts(index: "EntryIndex", rows):
    """:func:`partition_text` of each selected row's partition, made once per distinct partition and kept in Arrow
    (a pandas ``str`` array: no Python string per row until one is read)."""
    return strings(partition_labels(index, rows.column("partition"), partition_text, UNPARTITIONED))


def record_labels(records, style: str):
    """Each record of the struct column ``records`` as :func:`partition_text` (``style`` ``"text"``) or Python's
    ``str(record)`` (``"repr"``) writes it, an Arrow string array; a null for a record whose text is not made here
    (a string ``repr`` would escape), None for a column with a field of another kind or names twice (a dict keeps
    one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = [f.name for f in records.type] if pa.types.is_struct(records.type) else []
    if not names or len(set(names)) != len(names):
        return None
    pieces = []
    for i, f in enumerate(records.type):
        value, t = pc.struct_field(records, [i]), f.type
        if pa.types.is_boolean(t):
            text = pc.if_else(value, "true", "false") if style == "text" else pc.if_else(value, "True", "False")
        elif pa.types.is_integer(t) or (style == "text" and (
                pa.types.is_date32(t) or pa.types.is_string(t) or pa.types.is_large_string(t))):
            text = value.cast(pa.string())
        elif pa.types.is_date32(t):  # repr: datetime.date(2024, 1, 31)
            text = pc.binary_join_element_wise("datetime.date(", pc.year(value).cast(pa.string()), ", ",
                                               pc.month(value).cast(pa.string()), ", ",
                                               pc.day(value).cast(pa.string()), ")", "")
        elif pa.types.is_string(t) or pa.types.is_large_string(t):  # repr of printable ASCII without ' or \
            value = value.cast(pa.string())
            plain = pc.fill_null(pc.match_substring_regex(value, r"^[ -&(-\[\]-~]*$"), False)
            text = pc.if_else(plain, pc.binary_join_element_wise("'", value, "'", ""),
                              pa.nulls(len(value), pa.string()))
        else:
            return None
        # a null text of a present value stays null: Python's
        text = pc.if_else(value.is_null(), "null" if style == "text" else "None", text)
        pieces.append(pc.binary_join_element_wise(f"{f.name}=" if style == "text" else f"{f.name!r}: ", text, ""))
    joined = pc.binary_join_element_wise(*pieces, "/" if style == "text" else ", ")
    return joined if style == "text" else pc.binary_join_element_wise("{", joined, "}", "")


def partitions(index: "EntryIndex", rows):
    """The partition records of the selected rows: an Arrow struct column in pandas (each cell a dict when read;
    no Python object per row: at a million DVs a dict each was 0.28 GB) when every row has a record of one shape
    read column-wise, else one shared dict per distinct partition."""
    import numpy as np
    import pandas as pd

    codes = rows.column("partition")
    c = codes.to_numpy(zero_copy_only=False)
    c = np.where(codes.is_null().to_numpy(zero_copy_only=False), -1, c).astype(np.int64)
    if len(c) and (c >= 0).all():
        records = index.partitions.take_arrow(c)
        if records is not None:
            return pd.arrays.ArrowExtensionArray(records)
    present, at = np.unique(c, return_inverse=True)  # a null (-1) first
    valid = present[present >= 0]
    return objects([None] * (len(present) - len(valid)) + index.partitions.take(valid))[at.reshape(-1)]


def int_columns(df, rows: list[dict[str, Any]], columns) -> None:
    """Set nullable-integer columns from the row values themselves (a detour through float64 would
    round snapshot ids above 2**53)."""
    import pandas as pd

    for col in columns:
        df[col] = pd.array([as_long(r.get(col)) for r in rows], dtype="Int64")


def as_long(value: Any) -> Optional[int]:
    """An integer cell: None when absent, not an integer, or beyond int64 (a damaged count never breaks a frame)."""
    if value is None or isinstance(value, float):
        return None if value is None or value != value or not value.is_integer() else long_or_none(int(value))
    try:
        return long_or_none(int(value))
    except (TypeError, ValueError):
        return None


def long_or_none(n: int) -> Optional[int]:
    """``n`` when it fits a long (int64), else None."""
    return n if -(1 << 63) <= n < (1 << 63) else None
