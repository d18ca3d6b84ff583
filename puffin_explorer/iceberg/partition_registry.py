"""A table's registry of distinct partition records: the ``partition`` codes of every index of the table.

A record of ints, strings, booleans and dates is keyed column-wise (:func:`registry_key`, made for a whole
column by :func:`_struct_keys`), a DuckDB read's keys looked up at once (:class:`PartitionKeys`) and the new
records of a column registered at once and kept as Arrow only (:class:`PartitionRecords`); other records are
registered by value.  :class:`PartitionRegistry` holds both, numbers the field names of each record (its
shape) and keeps what checking each (spec, record) pair found (:mod:`.entry_checks`).
"""

from __future__ import annotations

import array
from typing import Any, Iterable, Optional

from .._arrays import sorted_unique


#: The column-wise key of a null partition record (registered through :func:`registry_key` instead).
_NULL_RECORD = "\x00null"


def _record_names(names: Iterable[Any]) -> str:
    return "".join(f"{len(str(n))}:{n}" for n in names) + "|"


def registry_key(value: Any) -> Any:
    """The key of a partition record in the table's registry: for a record of names and None, boolean, integer,
    string or date values, the text :func:`_struct_keys` makes column-wise (each name and value with its length,
    values tagged by kind: no two records share one); for any other record the tuple of its items (their
    ``repr`` when not hashable); for a value that is not a record, ``("", repr)``."""
    import datetime

    if not isinstance(value, dict):
        return ("", repr(value))
    out = [_record_names(value)]
    for v in value.values():
        if v is None:
            out.append("n")
            continue
        if isinstance(v, bool):
            tag, text = "b", "true" if v else "false"
        elif isinstance(v, int):
            tag, text = "i", str(v)
        elif isinstance(v, str):
            tag, text = "s", v
        elif type(v) is datetime.date:
            tag, text = "d", v.isoformat()
        else:
            try:
                key = tuple(value.items())
                hash(key)
                return key
            except TypeError:
                return repr(sorted(value.items(), key=lambda kv: str(kv[0])))
        out.append(f"{tag}{len(text)}:{text}")
    return "".join(out)


def _struct_keys(arr) -> Any:
    """:func:`registry_key` of each record of a struct column, made column-wise; None for a column with a field
    of another kind (or not a struct of fields)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_struct(arr.type) or not arr.type.num_fields:
        return None
    parts: list[Any] = [_record_names(f.name for f in arr.type)]
    for i, f in enumerate(arr.type):
        t = f.type
        tag = "i" if pa.types.is_integer(t) else "s" if pa.types.is_string(t) or pa.types.is_large_string(t) else \
            "b" if pa.types.is_boolean(t) else "d" if pa.types.is_date32(t) else None
        if tag is None:
            return None
        text = pc.struct_field(arr, [i]).cast(pa.string())
        parts.append(pc.fill_null(pc.binary_join_element_wise(tag, pc.utf8_length(text).cast(pa.string()), ":", text,
                                                              ""), "n"))
    key = pc.binary_join_element_wise(*parts, "")
    return pc.if_else(arr.is_null(), _NULL_RECORD, key) if arr.null_count else key


class PartitionRecords:
    """The registry's distinct partition records, by code: a read-only sequence.  Records registered from an Arrow
    column stay Arrow (``columns``: (first code, struct array) pieces, which also let a label of every partition
    be made column-wise, :func:`.columns.partition_labels`) and become Python dicts only when read; a record
    registered by value is kept as that value.  Reading many codes at once: :meth:`take`."""

    def __init__(self) -> None:
        self._starts: list[int] = []  # the first code of each piece
        self._pieces: list[Any] = []  # a list of values, or a struct array
        self._length = 0

    @property
    def columns(self) -> list[tuple[int, Any]]:
        return [(start, piece) for start, piece in zip(self._starts, self._pieces) if not isinstance(piece, list)]

    def append(self, value: Any) -> None:
        if not self._pieces or not isinstance(self._pieces[-1], list):
            self._starts.append(self._length)
            self._pieces.append([])
        self._pieces[-1].append(value)
        self._length += 1

    def extend_arrow(self, records: Any) -> None:
        """Register the records of a struct array under the next codes, kept as Arrow."""
        self._starts.append(self._length)
        self._pieces.append(records)
        self._length += len(records)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, code: Any) -> Any:
        if isinstance(code, slice):
            return self.take(range(*code.indices(self._length)))
        code = int(code)
        return self.take([code + self._length if code < 0 else code])[0]

    def __iter__(self):
        for piece in self._pieces:
            yield from piece if isinstance(piece, list) else piece.to_pylist()

    def __eq__(self, other: Any) -> bool:
        return list(self) == list(other) if isinstance(other, (list, PartitionRecords)) else NotImplemented

    def __repr__(self) -> str:
        return f"PartitionRecords({len(self)} records)"

    def take_arrow(self, codes: Any) -> Any:
        """The records of ``codes`` (valid codes, any order, repeats allowed) as one Arrow struct array, when
        every code is a record registered column-wise and those pieces share one type; else None."""
        import numpy as np
        import pyarrow as pa

        codes = np.asarray(codes, dtype=np.int64)
        if not len(codes) or codes.min() < 0 or codes.max() >= self._length:
            return None
        piece_of = np.searchsorted(np.asarray(self._starts, dtype=np.int64), codes, side="right") - 1
        used = sorted_unique(piece_of).tolist()
        pieces = [self._pieces[k] for k in used]
        if any(isinstance(p, list) for p in pieces) or len({p.type for p in pieces}) != 1 or \
                not pa.types.is_struct(pieces[0].type):
            return None
        if len(used) == 1:
            return pieces[0].take(pa.array(codes - self._starts[used[0]]))
        whole = pa.concat_arrays(pieces)  # the pieces used, one after the other: codes renumbered into it
        shift = np.zeros(len(self._pieces), dtype=np.int64)
        at = 0
        for k, p in zip(used, pieces):
            shift[k] = at - self._starts[k]
            at += len(p)
        return whole.take(pa.array(codes + shift[piece_of]))

    def take(self, codes: Any) -> list:
        """The records of ``codes`` (valid codes, any order, repeats allowed), one Python value per code, made
        column-wise from each Arrow piece."""
        import numpy as np
        import pyarrow as pa

        codes = np.asarray(codes, dtype=np.int64)
        out: list[Any] = [None] * len(codes)
        if not len(codes):
            return out
        if codes.min() < 0 or codes.max() >= self._length:
            raise IndexError(f"partition codes outside 0..{self._length - 1}")
        piece_of = np.searchsorted(np.asarray(self._starts, dtype=np.int64), codes, side="right") - 1
        for k in sorted_unique(piece_of).tolist():
            where = np.flatnonzero(piece_of == k)
            piece, at = self._pieces[k], codes[where] - self._starts[k]
            values = [piece[i] for i in at.tolist()] if isinstance(piece, list) else \
                piece.take(pa.array(at)).to_pylist()
            for w, v in zip(where.tolist(), values):
                out[w] = v
        return out


class PartitionKeys:
    """The registry keys of a table's partition codes.  Keys of records registered column-wise stay Arrow
    (pieces of consecutive codes, looked up column-wise: no Python string per partition); keys of records
    registered by value are a dict, which takes the Arrow pieces' keys too the first time a text key misses."""

    def __init__(self) -> None:
        self.by_value: dict[Any, int] = {}
        self.pieces: list[tuple[int, Any]] = []  # (first code, Arrow string array of keys)
        self._ranges: list[tuple[Any, Any]] = []  # each piece's smallest and largest key: a lookup skips the others
        self._synced = 0  # pieces[:_synced] are in by_value too
        self._texts_by_value = 0  # text keys registered by value: a column's lookup asks the dict for them

    def __len__(self) -> int:
        return len(self.by_value) + sum(len(keys) for _, keys in self.pieces[self._synced:])

    def get(self, key: Any) -> Optional[int]:
        code = self.by_value.get(key)
        if code is None and isinstance(key, str) and self._synced < len(self.pieces):
            for first, keys in self.pieces[self._synced:]:  # once: a by-value lookup of a column-wise table
                self.by_value.update(zip(keys.to_pylist(), range(first, first + len(keys))))
            self._synced = len(self.pieces)
            code = self.by_value.get(key)
        return code

    def add(self, key: Any, code: int) -> None:
        self.by_value[key] = code
        self._texts_by_value += isinstance(key, str)

    def add_arrow(self, keys: Any, first: int) -> None:
        """Register distinct, new text keys (an Arrow string array) as the codes ``first``, ``first + 1``, …"""
        import pyarrow as pa
        import pyarrow.compute as pc

        keys = keys.cast(pa.string())
        bounds = pc.min_max(keys)
        self.pieces.append((first, keys))
        self._ranges.append((bounds["min"].as_py(), bounds["max"].as_py()))

    def lookup_arrow(self, keys: Any):
        """The codes of distinct text keys (an Arrow string array) as a numpy array, -1 for a key not registered:
        one ``index_in`` of the registry's Arrow keys against them, then the dict for keys registered by value."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        found = np.full(len(keys), -1, dtype=np.int64)
        bounds = pc.min_max(keys) if len(keys) else None
        lo, hi = (bounds["min"].as_py(), bounds["max"].as_py()) if bounds is not None else (None, None)
        # only the pieces whose range of keys meets these keys' (manifests of a growing table rarely share one)
        pieces = [p for p, (a, b) in zip(self.pieces, self._ranges)
                  if a is None or not (b < lo or a > hi)] if lo is not None else []
        if pieces:
            registered = pa.chunked_array([k for _, k in pieces], pa.string())
            at = pc.fill_null(pc.index_in(registered, value_set=keys), -1).to_numpy()
            hit = np.flatnonzero(at >= 0)
            starts = np.cumsum([0] + [len(k) for _, k in pieces])
            piece = np.searchsorted(starts, hit, side="right") - 1
            firsts = np.array([first for first, _ in pieces], dtype=np.int64)
            found[at[hit]] = firsts[piece] + (hit - starts[piece])
        if self._texts_by_value:
            missing = np.flatnonzero(found < 0)
            for i, key in zip(missing.tolist(), keys.take(pa.array(missing)).to_pylist()):
                code = self.by_value.get(key)
                if code is not None:
                    found[i] = code
        return found


class PartitionRegistry:
    """One table's distinct partition records by code (``partitions``) and their keys (``partition_codes``),
    so that partition codes mean the same in every index of the table; the field names of each record,
    numbered (``partition_shapes``, ``shapes``: a spec's names are checked once per set of names); and what
    checking each (spec, record) pair found (``partitions_checked``, ``partitions_clean``)."""

    def __init__(self) -> None:
        self.partitions = PartitionRecords()
        self.partition_codes = PartitionKeys()
        self.partitions_checked: dict[tuple[int, int], list] = {}  # (spec id, partition code) -> its findings
        self.partitions_clean: dict[int, bytearray] = {}  # spec id -> a byte per partition code: 1 checked, clean
        # the field names of each partition record, numbered: a spec's names are checked once per set of names
        self.partition_shapes = array.array("i")  # partition code -> number of its names; -1: not a record
        self.shapes: list[tuple] = []
        self._shape_numbers: dict[tuple, int] = {}

    def shape_of(self, value: Any) -> int:
        """The number of the field names of partition record ``value`` (-1: not a record)."""
        if value is None:
            return self.shape_number(())
        return self.shape_number(tuple(value)) if isinstance(value, dict) else -1

    def shape_number(self, names: tuple) -> int:
        number = self._shape_numbers.get(names)
        if number is None:
            number = self._shape_numbers[names] = len(self.shapes)
            self.shapes.append(names)
        return number

    def code_of(self, value: Any) -> int:
        """The code of the partition record ``value``, registered if new."""
        return self._register(registry_key(value), value)

    def _register(self, key: Any, value: Any, shape: Optional[int] = None) -> int:
        """The code of the partition record ``value`` under its registry ``key``, registered if new (``shape``:
        the number of its field names, when the caller knows it)."""
        code = self.partition_codes.get(key)
        if code is None:
            code = len(self.partitions)
            self.partition_codes.add(key, code)
            self.partitions.append(value)
            self.partition_shapes.append(self.shape_of(value) if shape is None else shape)
        return code

    def _register_new(self, keys: Any, records: Any, shape: int) -> int:
        """Register records whose keys (an Arrow string array) are distinct and not registered yet, at once, as
        :meth:`_register` would one by one; records and keys stay Arrow (no Python object per partition).
        Returns the first of their consecutive codes."""
        first = len(self.partitions)
        self.partitions.extend_arrow(records)
        self.partition_shapes.extend(array.array("i", [shape]) * len(keys))
        self.partition_codes.add_arrow(keys, first)
        return first

    def codes_of(self, column):
        """The codes of a partition column (call it once per DuckDB read: a lookup costs a pass over the
        registry's keys).  A record of names and integer, string, boolean or date values gets its
        :func:`registry_key` made column-wise, looked up and registered in Arrow; a null record, and any other
        kind of column, one Python record per distinct value."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        keys = _struct_keys(arr)
        if keys is None:  # another kind of record: dictionary-encoded by text, registered value by value
            texts = pc.cast(arr, pa.string()) if not pa.types.is_struct(arr.type) else \
                pa.array([repr(v) for v in arr.to_pylist()], pa.string())
            enc = texts.dictionary_encode()
            idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            _, first = np.unique(idx, return_index=True)
            found = np.array([self._register(registry_key(value), value)
                              for value in arr.take(pa.array(first)).to_pylist()], dtype=np.int64)
            return pa.array(found.astype(np.int32)[idx], pa.int32())
        enc = keys.dictionary_encode()
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        distinct = enc.dictionary
        found = self.partition_codes.lookup_arrow(distinct)
        new = np.flatnonzero(found < 0)
        if new.size:  # records the table has not had yet
            _, first = np.unique(idx, return_index=True)  # the first row of each dictionary entry, in order
            records = arr.take(pa.array(first[new]))
            shape = self.shape_number(tuple(dict.fromkeys(f.name for f in arr.type)))
            if records.null_count:  # a null record is keyed by value: one by one, in order
                texts = distinct.take(pa.array(new)).to_pylist()
                for i, key, value in zip(new.tolist(), texts, records.to_pylist()):
                    found[i] = self._register(key, value, shape) if value is not None else \
                        self._register(registry_key(value), value)
            else:
                found[new] = self._register_new(distinct.take(pa.array(new)), records, shape) + \
                    np.arange(new.size)
        return pa.array(found.astype(np.int32)[idx], pa.int32())
