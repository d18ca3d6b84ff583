"""Input relations of the measures (``iceberg/measures.py``): a v2 table's files written out by hand, with
position deletes and equality deletes across partitions, and the relations of the reference tables."""

from __future__ import annotations

import pyarrow as pa

B = "s3://bucket/t/data"
A, BB, C, D, E = (f"{B}/p=1/a.parquet", f"{B}/p=1/b.parquet", f"{B}/p=2/c.parquet", f"{B}/p=2/d.parquet",
                  f"{B}/p=3/e.parquet")
P1, P2, P3 = "0|{'p': 1}", "0|{'p': 2}", "0|{'p': 3}"


def _deletes(rows, eq: bool):
    cols = ["did", "dpkey", "dseq", "ref", "lo", "hi"] + (["partition_empty"] if eq else [])
    return pa.table({c: [r[i] for r in rows] for i, c in enumerate(cols)})


def v2_relations(everywhere: bool = False) -> dict:
    """Five data files in three partitions (e has a DV), five position-delete files (loose, scoped to a file,
    scoped by ``file_path`` bounds, superseded by a DV, after the data), two equality-delete files (partitioned,
    or with ``everywhere`` unpartitioned, so they apply to every partition), rows named per data file."""
    data = pa.table({"rid": [0, 1, 2, 3, 4], "key": [A, BB, C, D, E], "raw": [A, BB, C, D, E],
                     "pkey": [P1, P1, P2, P2, P3], "seq": [1, 2, 1, 3, 5]})
    dvs = pa.table({"ref_key": [E, f"{B}/p=3/gone.parquet", None], "record_count": [7, 4, 2]})
    pos = _deletes([(0, P1, 2, "", "", ""),  # loose in p=1: a (1 <= 2) and b (2 <= 2)
                    (1, P2, 2, C, "", ""),  # scoped to c
                    (2, P2, 2, "", f"{B}/p=2/d", D),  # bounds admit d, whose sequence number 3 is above 2
                    (3, P3, 9, "", "", ""),  # e has a DV: superseded
                    (4, P1, 5, "", BB, BB)], eq=False)  # bounds that are one path: b only
    part = not everywhere
    eq = _deletes([(0, P1 if part else "0|{}", 2, "", "", "", everywhere),
                   (1, P2 if part else "0|{}", 4, "", "", "", everywhere)], eq=True)
    pos_rows = pa.table({"key": [A, E, f"{B}/p=3/gone.parquet"], "rows": [10, 3, 5], "files": [1, 1, 1]})
    return {"data": data, "dvs": dvs, "pos": pos, "eq": eq, "pos_rows": pos_rows}


#: What each measure answers on :func:`v2_relations` (rows sorted).
V2_EXPECTED = {
    "position_deletes_applied": [(0, 0), (1, 0), (1, 4), (2, 1)],
    "equality_deletes_applied": [(0, 0), (2, 1), (3, 1)],
    "deleted_rows": [(A, 0, 0, 10, 1, 0, 10), (BB, 0, 0, 0, 0, 0, 0), (C, 0, 0, 0, 0, 0, 0), (D, 0, 0, 0, 0, 0, 0),
                     (E, 7, 1, 3, 1, 3, 7)],
}
V2_EVERYWHERE_EQUALITY = [(0, 0), (0, 1), (1, 1), (2, 0), (2, 1), (3, 1)]


def rows(table) -> list[tuple]:
    """A measure's answer (Arrow table or Spark DataFrame) as sorted tuples."""
    if hasattr(table, "collect"):
        return sorted(tuple(r) for r in table.collect())
    return sorted(tuple(r.values()) for r in table.to_pylist())
