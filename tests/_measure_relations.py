"""Input relations of the measures (``iceberg/measures.py``): a v2 table's files written out by hand, with
position deletes and equality deletes across partitions, and the relations of the reference tables."""

from __future__ import annotations

import pyarrow as pa

from puffin_explorer.iceberg import measures as M

B = "s3://bucket/t/data"
A, BB, C, D, E = (f"{B}/p=1/a.parquet", f"{B}/p=1/b.parquet", f"{B}/p=2/c.parquet", f"{B}/p=2/d.parquet",
                  f"{B}/p=3/e.parquet")
P1, P2, P3 = "0|{'p': 1}", "0|{'p': 2}", "0|{'p': 3}"


def _deletes(rows, eq: bool):
    cols = ["did", "dpkey", "dseq", "ref", "lo", "hi", "file_size_in_bytes"] + (["partition_empty"] if eq else [])
    table = {c: [r[i] for r in rows] for i, c in enumerate(cols)}
    table["ref"] = [r or None for r in table["ref"]]  # no scope: null
    return pa.table(table)


def v2_relations(everywhere: bool = False) -> dict:
    """Five data files in three partitions (e has a DV), five position-delete files (loose, scoped to a file,
    scoped by ``file_path`` bounds, superseded by a DV, after the data), two equality-delete files (partitioned,
    or with ``everywhere`` unpartitioned, so they apply to every partition), rows named per data file; three DVs
    in two Puffin files (x holds e's and one of a data file gone, y one naming no data file); small files below
    100 B, read amplification above one delete file, size classes below 50 B, to 1,000 B and above."""
    data = pa.table({"rid": [0, 1, 2, 3, 4], "key": [A, BB, C, D, E], "raw": [A, BB, C, D, E],
                     "pkey": [P1, P1, P2, P2, P3],
                     "seq": [1, 2, 1, 3, 5], "record_count": [100, 200, 300, 400, 500],
                     "file_size_in_bytes": [10, 20, 300, 400, 5_000]})
    dvs = pa.table({"ref_key": [E, f"{B}/p=3/gone.parquet", None], "record_count": [7, 4, 2],
                    "file_path": [f"{B}/x.puffin", f"{B}/x.puffin", f"{B}/y.puffin"],
                    "file_size_in_bytes": [1_000, 1_000, 50]})
    pos = _deletes([(0, P1, 2, "", "", "", 11),  # loose in p=1: a (1 <= 2) and b (2 <= 2)
                    (1, P2, 2, C, "", "", 12),  # scoped to c
                    (2, P2, 2, "", f"{B}/p=2/d", D, 13),  # bounds admit d, whose sequence number 3 is above 2
                    (3, P3, 9, "", "", "", 14),  # e has a DV: superseded
                    (4, P1, 5, "", BB, BB, 15)], eq=False)  # bounds that are one path: b only
    part = not everywhere
    eq = _deletes([(0, P1 if part else "0|{}", 2, "", "", "", 21, everywhere),
                   (1, P2 if part else "0|{}", 4, "", "", "", 22, everywhere)], eq=True)
    pos_rows = pa.table({"key": [A, E, f"{B}/p=3/gone.parquet"], "rows": [10, 3, 5], "files": [1, 1, 1]})
    return {"data": data, "dvs": dvs, "pos": pos, "eq": eq, "pos_rows": pos_rows,
            "params": M.params(small_size=100, many=1, target=400),
            "size_classes": M.size_classes([0, 50, 1_000, 2 ** 63 - 1])}


#: What each measure answers on :func:`v2_relations` (rows sorted).
V2_EXPECTED = {
    "position_deletes_applied": [(0, 0), (1, 0), (1, 4), (2, 1)],
    "equality_deletes_applied": [(0, 0), (2, 1), (3, 1)],
    "deleted_rows": [(A, 0, 0, 10, 1, 0, 10), (BB, 0, 0, 0, 0, 0, 0), (C, 0, 0, 0, 0, 0, 0), (D, 0, 0, 0, 0, 0, 0),
                     (E, 7, 1, 3, 1, 3, 7)],
}
V2_EXPECTED.update({
    # a: DV 0, position 1, equality 1, 10 rows deleted; b: two position-delete files; c: one of each kind but DV;
    # d: equality only; e: its DV (the position-delete file for p=3 is superseded)
    "data_file_deletes": [(0, P1, 100, 10, 0, 1, 1, 2, 10), (1, P1, 200, 20, 0, 2, 0, 2, 0),
                          (2, P2, 300, 300, 0, 1, 1, 2, 0), (3, P2, 400, 400, 0, 0, 1, 1, 0),
                          (4, P3, 500, 5_000, 1, 0, 0, 1, 7)],
    "file_totals": [(5, 5_730, 1_500, 17, 5, 2, 1.6, 5_000, 1_500, 17, 3, 600, 2, 30)],
    "partition_totals": [(P1, 2, 300, 10, 30, 4, 2, 30, 300), (P2, 2, 700, 0, 700, 3, 0, 0, 0),
                         (P3, 1, 500, 7, 5_000, 1, 0, 0, 0)],
    # 3 partitions, median 700 B; p=3 the largest; only p=1 has two small files (30 B: one file of the 400 B target)
    "partition_summary": [(3, 700.0, P3, 5_000, 500, 1, 1, 2, 1, 30, 300, 2)],
    "size_histogram": [(0, 2, 30), (1, 2, 700), (2, 1, 5_000)],
    # 3 DVs in 2 Puffin files (1,050 B), 5 position-delete files (65 B), 2 equality-delete files (43 B)
    "delete_totals": [(3, 2, 5, 2, 9, 1_158)],
    # DVs of gone.parquet and of no file; position-delete files 2 (d's sequence number is above) and 3 (superseded);
    # only y.puffin holds nothing but dangling DVs
    "dangling_deletes": [(2, 2, 0, 3, 77)],
})
V2_EVERYWHERE_EQUALITY = [(0, 0), (0, 1), (1, 1), (2, 0), (2, 1), (3, 1)]


def rows(table) -> list[tuple]:
    """A measure's answer (Arrow table or Spark DataFrame) as sorted tuples."""
    if hasattr(table, "collect"):
        return sorted(tuple(r) for r in table.collect())
    return sorted(tuple(r.values()) for r in table.to_pylist())
