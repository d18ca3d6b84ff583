"""The input relations of :mod:`.measures` on the driver, from the entry index's columns (Arrow, no object per
file): what DuckDB runs the measures over here.  The Spark doctor builds the same relations on the executors
(``spark/health.py``); the parity test compares the answers of both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from .._arrays import sorted_unique
from .columns import normalized, partition_labels, partition_text, record_labels

if TYPE_CHECKING:  # pragma: no cover
    from .index import EntryIndex
    from .source import TableSource

#: ``files()``' kinds of the relations the index's rows go to.
KINDS = {"data": "data", "dvs": "dv", "pos": "position-deletes", "eq": "equality-deletes"}


def record_texts(index: "EntryIndex", codes) -> Any:
    """:func:`record_text` of each row's partition (null without one), an Arrow string array: each distinct
    partition's text made once (:func:`.columns.partition_labels`)."""
    return partition_labels(index, codes, record_text, None)


def record_text(value: Any) -> Any:
    """A partition record as the measures' grouping key spells it (``pkey`` is ``spec id|record_text``): Python's
    ``str`` of it, None for none.  Unlike the text a user reads (:func:`.columns.partition_text`), two records
    never share it, and its order is the order in which the doctor lists partitions."""
    return None if value is None else str(value)


def _record_text_arrow(records):
    """:func:`record_text` of each record of a struct column, column-wise (see :func:`.columns.record_labels`)."""
    return record_labels(records, "repr")


record_text.arrow = _record_text_arrow  # the same texts, column-wise


def _shown(index: "EntryIndex", rows, pair_keys: bool) -> Any:
    """The data rows' ``partition`` column: each row's :func:`.columns.partition_text` (null without a record);
    none with ``pair_keys`` (:func:`coded_relations` makes each key's text)."""
    return None if pair_keys else partition_labels(index, rows.column("partition"), partition_text, None)


def _pkey(rows, parts) -> Any:
    """``spec id|partition`` of each row (``{}`` for no partition): the grouping key of the measures."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(pc.fill_null(pc.cast(rows.column("spec_id"), pa.string()), ""),
                                       pc.fill_null(parts, "{}"), "|")


def _longs(rows, name: str, fill: Any = None) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    col = pc.cast(rows.column(name), pa.int64())
    return col if fill is None else pc.fill_null(col, fill)


#: A null spec id in :func:`_pair_keys`: one past every int32 spec id shifted to be non-negative.
_NULL_SPEC = 2 ** 32


def _pair_keys(rows, size: int) -> Any:
    """Each row's (spec id, partition code) as one int64 (numpy): equal exactly when both are, a null spec id and
    a null or unknown code (``size``: the registry's) each a value of its own (:func:`_pair_parts` reads one
    back).  What :func:`coded_relations` groups by before it makes a partition key's text, once per pair."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    spec = pc.fill_null(pc.cast(rows.column("spec_id"), pa.int64()), _NULL_SPEC - 2 ** 31)
    code = pc.fill_null(pc.cast(rows.column("partition"), pa.int64()), -1).to_numpy(zero_copy_only=False)
    code = np.where((code >= 0) & (code < size), code, -1)
    return (spec.to_numpy(zero_copy_only=False) + 2 ** 31) * (size + 1) + code + 1


def _pair_parts(keys, size: int) -> tuple[Any, Any, Any]:
    """The spec ids, whether each is null, and the partition codes (-1: none) of :func:`_pair_keys`' keys."""
    spec, code = keys // (size + 1), keys % (size + 1) - 1
    return spec - 2 ** 31, spec == _NULL_SPEC, code


def index_relations(source: "TableSource", index: "EntryIndex", names=tuple(KINDS),
                    coded_paths: bool = False, scope_bounds: Optional[dict] = None,
                    pair_keys: bool = False) -> dict[str, Any]:
    """``data``, ``dvs``, ``pos`` and ``eq`` of the index's live files, or those of them in ``names`` (``rid`` /
    ``did``: a row's place among its kind's live rows, in index order).  The path scope of a position- or
    equality-delete file comes from its ``referenced_data_file`` and its ``file_path`` bounds (decoded only for
    those rows; an index without metrics has none unless ``scope_bounds`` gives them: kind -> (lower, upper)
    bounds maps of its live rows, as :class:`~.metric_totals.MetricTotals` keeps them).  ``coded_paths``:
    ``data.key`` and ``dvs.ref_key`` as the index's :func:`~.columns.path_codes` (no path copied or hashed again),
    ``pos.ref`` / ``eq.ref`` coded the same way (a path no row has gets a code of its own) and ``dvs.file_path`` as
    codes of its own: what :func:`coded` makes of the string relations, with the same answers.  ``pair_keys``:
    ``pkey`` / ``dpkey`` as :func:`_pair_keys` and no ``data.partition``, no text made per row
    (:func:`coded_relations` ranks them)."""
    import numpy as np

    from .columns import path_codes

    codes = path_codes(index) if coded_paths else None
    out: dict[str, Any] = {}
    for name, kind in KINDS.items():
        if name not in names:
            continue
        at = np.flatnonzero(index.mask([kind]))
        rows = index.take(at, _COLUMNS)
        if name == "data":
            out[name] = _data_relation(index, rows, at, codes, pair_keys)
        elif name == "dvs":
            out[name] = _dv_relation(rows, at, codes)
        else:
            out[name] = _delete_relation(source, index, name, rows, codes, scope_bounds, pair_keys)
    return out


#: The index columns the relations are made of.
_COLUMNS = ["file_path", "spec_id", "partition", "sequence_number", "record_count", "file_size_in_bytes",
            "referenced_data_file"]


def _partition_keys(index: "EntryIndex", rows, pair_keys: bool) -> Any:
    """Each row's partition key: :func:`_pair_keys` with ``pair_keys``, else its :func:`record_texts`."""
    import pyarrow as pa

    if pair_keys:
        return pa.array(_pair_keys(rows, len(index.partitions)), pa.int64())
    return record_texts(index, rows.column("partition"))


def _data_relation(index: "EntryIndex", rows, at, codes, pair_keys: bool) -> Any:
    """``data``: the live data files (``key``: the normalized path, or its code in ``codes``)."""
    import numpy as np
    import pyarrow as pa

    from .columns import coded_array

    parts = _partition_keys(index, rows, pair_keys)
    key = coded_array(codes.files[at]) if codes is not None else normalized(rows.column("file_path"))
    table = {"rid": pa.array(np.arange(rows.num_rows), pa.int64()), "key": key, "raw": rows.column("file_path"),
             "pkey": parts if pair_keys else _pkey(rows, parts), "partition": _shown(index, rows, pair_keys),
             "seq": _longs(rows, "sequence_number", 0), "record_count": _longs(rows, "record_count"),
             "file_size_in_bytes": _longs(rows, "file_size_in_bytes")}
    if pair_keys:  # coded_relations makes each key's text from the pairs
        del table["partition"]
    return pa.table(table)


def _dv_relation(rows, at, codes) -> Any:
    """``dvs``: the live DVs (no partition key), with ``codes`` their data file's path code and their DV file
    as a code of its own."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .columns import coded_array

    if codes is not None:
        ref_key = coded_array(codes.refs[at])
        files = pc.dictionary_encode(rows.column("file_path"))  # one memo: every chunk's codes agree
        file_path = pc.cast(pa.chunked_array([c.indices for c in files.chunks], pa.int32()), pa.int64()) \
            if rows.num_rows else pa.array([], pa.int64())
    else:
        ref_key, file_path = normalized(rows.column("referenced_data_file")), rows.column("file_path")
    return pa.table({"ref_key": ref_key, "record_count": _longs(rows, "record_count", 0),
                     "file_path": file_path, "file_size_in_bytes": _longs(rows, "file_size_in_bytes")})


def _delete_relation(source: "TableSource", index: "EntryIndex", name: str, rows, codes,
                     scope_bounds: Optional[dict], pair_keys: bool) -> Any:
    """``pos`` or ``eq``: the live position- or equality-delete files, each with its path scope (``ref``, ``lo``,
    ``hi``); an equality-delete file also with whether its partition is empty."""
    import numpy as np
    import pyarrow as pa

    from .measures import arrow_schema

    parts = _partition_keys(index, rows, pair_keys)
    refs, los, his = _path_scopes(source, index, KINDS[name], rows, scope_bounds)
    table = {"did": pa.array(np.arange(rows.num_rows), pa.int64()),
             "dpkey": parts if pair_keys else _pkey(rows, parts),
             "dseq": _longs(rows, "sequence_number", 0), "ref": pa.array(refs, pa.string()),  # None: any
             "lo": pa.array(los, pa.string()), "hi": pa.array(his, pa.string()),
             "file_size_in_bytes": _longs(rows, "file_size_in_bytes")}
    if name == "eq":
        partition_codes = rows.column("partition").to_pylist()
        table["partition_empty"] = pa.array([not p for p in index.partition_values(partition_codes)], pa.bool_())
    schema = arrow_schema(name)
    if pair_keys:
        schema = schema.set(schema.get_field_index("dpkey"), pa.field("dpkey", pa.int64()))
    if codes is not None:
        table["ref"] = _scope_codes(codes, refs)
        schema = schema.set(schema.get_field_index("ref"), pa.field("ref", pa.int64()))
    return pa.table(table).cast(schema)


def _path_scopes(source: "TableSource", index: "EntryIndex", kind: str, rows,
                 scope_bounds: Optional[dict]) -> tuple[list, list, list]:
    """The path scope of each delete file of ``kind`` (:func:`~.measures.path_scope`: the one path it applies
    to, else the ``file_path`` bounds), from its ``referenced_data_file`` and its bounds: ``scope_bounds``',
    else the index's metrics decoded for these rows only, else none."""
    from .bounds import decode_bounds
    from .measures import path_scope

    refs, los, his = [], [], []
    if scope_bounds is not None and kind in scope_bounds:
        lowers, uppers = scope_bounds[kind]
    elif index.metrics:  # the file_path bounds, decoded for these rows only
        bounds = index.rows(index.mask([kind]), ["lower_bounds", "upper_bounds"])
        fields = source.fields_by_id()
        lowers = [decode_bounds(v, fields) for v in bounds.column("lower_bounds").to_pylist()]
        uppers = [decode_bounds(v, fields) for v in bounds.column("upper_bounds").to_pylist()]
    else:
        lowers = uppers = [{}] * rows.num_rows
    for ref, lower, upper in zip(rows.column("referenced_data_file").to_pylist(), lowers, uppers):
        scope, lo, hi = path_scope(ref, lower.get("file_path"), upper.get("file_path"))
        refs.append(scope)
        los.append(lo)
        his.append(hi)
    return refs, los, his


def _scope_codes(codes, refs: list) -> Any:
    """Each scope's path as the index's path code (``codes``); a path no row has gets a new code past them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    at = pc.index_in(pa.array(refs, pa.string()), value_set=codes.dictionary) if any(
        r is not None for r in refs) else pa.nulls(len(refs), pa.int32())
    at = pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    unknown = [r for r, a in zip(refs, at.tolist()) if r is not None and a < 0]
    extra = {r: codes.size + i for i, r in enumerate(dict.fromkeys(unknown))}
    return pa.array([None if r is None else a if a >= 0 else extra[r] for r, a in zip(refs, at.tolist())],
                    pa.int64())


class Coded:
    """Relations with every path and partition key as an integer code (:func:`coded`), and the way back."""

    def __init__(self, relations: dict[str, Any], pkeys: Any, partitions: Any) -> None:
        self.relations = relations
        #: the ``pkey`` text of each partition code, and its ``partition`` (the text a user reads,
        #: :func:`.columns.partition_text`), by code
        self.pkeys = pkeys
        self.partitions = partitions


class PartitionCodes(NamedTuple):
    """Partition keys as integer codes that follow the order of their ``pkey`` text (``spec id|record_text``):
    each column's codes, and by code the ``pkey`` text and the ``partition`` text a user reads
    (:func:`.columns.partition_text`; null for a code no data row has a partition of)."""

    codes: list
    pkeys: Any
    partitions: Any


def partition_codes(index: "EntryIndex", at) -> PartitionCodes:
    """The partition key of each of the index's rows ``at`` as :func:`coded_relations` codes ``data.pkey``: two
    specs with one partition text are two keys, a null partition and an empty one of a spec are one; each
    distinct (spec id, partition) pair's texts made once."""
    import pyarrow as pa

    rows = index.take(at, ["spec_id", "partition"])
    return _ranked_pairs(index, [pa.array(_pair_keys(rows, len(index.partitions)), pa.int64())])


def _ranked_pairs(index: "EntryIndex", columns: list) -> PartitionCodes:
    """:class:`PartitionCodes` of :func:`_pair_keys` columns (the first: the data rows'): the distinct pairs
    found first, each one's ``pkey`` text made and ranked once; a code's partition text is that of a pair of it
    the data rows have, with a text (all such share it)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = [len(c) for c in columns]
    keys = np.concatenate([c.to_numpy() for c in columns]) if sum(lengths) else np.zeros(0, dtype=np.int64)
    pairs, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)  # numpy 2.0 shaped it as ``keys``
    size = len(index.partitions)
    spec, null_spec, code = _pair_parts(pairs, size)
    spec_text = pc.if_else(pa.array(null_spec), "", pc.cast(pa.array(np.where(null_spec, 0, spec)), pa.string()))
    pair_codes = pa.array(code, pa.int64(), mask=code < 0)
    part_text = partition_labels(index, pair_codes, record_text, None) if len(pairs) else pa.array([], pa.string())
    text = pc.binary_join_element_wise(spec_text, pc.fill_null(part_text, "{}"), "|")
    encoded = text.dictionary_encode()  # pairs of one text (a null partition and ``{}``) share a key
    order = pc.sort_indices(encoded.dictionary)
    rank = pc.sort_indices(order).to_numpy().astype(np.int64)  # codes follow the text's order
    texts = encoded.dictionary.take(order)
    key_of_pair = rank[encoded.indices.to_numpy()] if len(pairs) else np.zeros(0, dtype=np.int64)
    row_keys = key_of_pair[inverse]
    codes = [pa.array(k, pa.int64()) for k in np.split(row_keys, np.cumsum(lengths)[:-1])]
    in_data = sorted_unique(inverse[:lengths[0]])
    in_data = in_data[part_text.is_valid().to_numpy(zero_copy_only=False)[in_data]] if len(in_data) else in_data
    where = np.full(len(texts), -1, dtype=np.int64)
    where[key_of_pair[in_data]] = in_data
    shown = partition_labels(index, pair_codes, partition_text, None) if len(pairs) else pa.array([], pa.string())
    return PartitionCodes(codes, texts, shown.take(pa.array(where, pa.int64(), mask=where < 0)).cast(pa.string()))


def coded_relations(source: "TableSource", index: "EntryIndex", scope_bounds: Optional[dict] = None) -> Coded:
    """:func:`coded` of the index's :func:`index_relations` (paths as the index's path codes), made without a
    partition text per row: the rows' (spec id, partition code) pairs grouped first, each distinct pair's
    ``pkey`` text made and ranked once (:func:`_ranked_pairs`).  The same relations, codes and texts as
    ``coded(index_relations(..., coded_paths=True))``; at a million data files in a few partitions, integers
    instead of two million strings."""
    import pyarrow as pa

    relations = index_relations(source, index, coded_paths=True, scope_bounds=scope_bounds, pair_keys=True)
    data, pos, eq = relations["data"], relations["pos"], relations["eq"]
    ranked = _ranked_pairs(index, [data.column("pkey"), pos.column("dpkey"), eq.column("dpkey")])
    data_keys, pos_keys, eq_keys = ranked.codes
    data = _swap(data, {"pkey": data_keys})
    if not _bounded(pos, eq):  # no delete file scoped by bounds: the paths as written are never compared
        data = data.set_column(data.schema.get_field_index("raw"), "raw", pa.nulls(data.num_rows, pa.string()))
    out = dict(relations)
    out["data"] = data
    out["pos"] = _swap(pos, {"dpkey": pos_keys})
    out["eq"] = _swap(eq, {"dpkey": eq_keys})
    return Coded(out, ranked.pkeys, ranked.partitions)


def _swap(table, columns: dict):
    for name, values in columns.items():
        table = table.set_column(table.schema.get_field_index(name), name, values)
    return table


def _bounded(pos, eq) -> bool:
    """Whether a position- or equality-delete file is scoped by ``file_path`` bounds."""
    import pyarrow.compute as pc

    return any(pc.any(pc.not_equal(t.column(c), "")).as_py() for t in (pos, eq) for c in ("lo", "hi") if t.num_rows)


def coded(relations: dict[str, Any]) -> Coded:
    """The string relations of :func:`index_relations` with paths (``key``, ``ref_key``, ``ref``, a DV's
    ``file_path``) and partition keys (``pkey``, ``dpkey``) as integer codes, the same in every relation, and
    no ``data.partition`` (the answers carry partition codes; :class:`Coded` turns them back).  Partition
    codes follow the order of their text, so answers sorted by code are sorted as by text.  ``data.raw`` is kept
    only where a delete file's ``file_path`` bounds need it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    out = dict(relations)
    data, dvs, pos, eq = (relations[n] for n in ("data", "dvs", "pos", "eq"))

    def encode(columns: list, ordered: bool):
        """One dictionary over every column (one pass): each column's codes, and the dictionary (sorted and
        the codes ranked by it when ``ordered``)."""
        lengths = [len(c) for c in columns]
        chunks = [ch for c in columns for ch in (c.chunks if isinstance(c, pa.ChunkedArray) else [c])]
        together = pa.chunked_array(chunks, pa.string()).combine_chunks()  # Arrow's chunks: no Python value
        encoded = together.dictionary_encode()
        values, indices = encoded.dictionary, pc.cast(encoded.indices, pa.int64())
        if ordered:
            order = pc.sort_indices(values)
            rank = pc.cast(pc.sort_indices(order), pa.int64())  # rank[i]: the place of value i in sorted order
            values, indices = values.take(order), rank.take(indices)
        split, at = [], 0
        for n in lengths:
            split.append(indices.slice(at, n))
            at += n
        return split, values

    if pa.types.is_integer(data.column("key").type):  # coded already (index_relations' coded_paths)
        data_key, ref_key, pos_ref, eq_ref, dv_file = (data.column("key"), dvs.column("ref_key"), pos.column("ref"),
                                                       eq.column("ref"), dvs.column("file_path"))
    else:
        (data_key, ref_key, pos_ref, eq_ref, dv_file), _ = encode(
            [data.column("key"), dvs.column("ref_key"), pos.column("ref"), eq.column("ref"),
             dvs.column("file_path")], False)
    (data_pkey, pos_pkey, eq_pkey), texts = encode([data.column("pkey"), pos.column("dpkey"), eq.column("dpkey")],
                                                    True)

    data = _swap(data, {"key": data_key, "pkey": data_pkey})
    # the partition text of each code: a code's rows share their text (``pkey`` holds it), or have none where the
    # text is ``{}``: the first row with a text, found by sorting the codes (no hash of a string)
    part = data.column("partition")
    pk = pc.fill_null(data.column("pkey"), -1).to_numpy()
    order = np.lexsort((~part.is_valid().to_numpy(zero_copy_only=False), pk))  # by code, rows with a text first
    first = order[np.r_[True, np.diff(pk[order]) != 0]] if len(order) else order
    first = first[pk[first] >= 0]
    where = np.full(len(texts), len(first), dtype=np.int64)  # a code no data row has: the null after
    where[pk[first]] = np.arange(len(first))
    partitions = pa.concat_arrays([part.take(pa.array(first, pa.int64())).combine_chunks().cast(pa.string())
                                   if len(first) else pa.array([], pa.string()),
                                   pa.nulls(1, pa.string())]).take(pa.array(where))
    data = data.drop_columns(["partition"])  # its text per code is ``partitions``: no measure reads it per file
    if not _bounded(pos, eq):  # no delete file scoped by bounds: the paths as written are never compared
        data = data.set_column(data.schema.get_field_index("raw"), "raw", pa.nulls(data.num_rows, pa.string()))
    out["data"] = data
    out["dvs"] = _swap(dvs, {"ref_key": ref_key, "file_path": dv_file})
    out["pos"] = _swap(pos, {"ref": pos_ref, "dpkey": pos_pkey})
    out["eq"] = _swap(eq, {"ref": eq_ref, "dpkey": eq_pkey})
    return Coded(out, texts, partitions)


__all__ = ["KINDS", "Coded", "PartitionCodes", "coded", "coded_relations", "index_relations", "partition_codes",
           "record_text", "record_texts"]
