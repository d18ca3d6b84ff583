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
    100 B, read amplification above one delete file, compaction above a deleted share of 5%, size classes below
    50 B, to 1,000 B and above."""
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
    gone = f"{B}/p=3/gone.parquet"  # named by two position-delete files (2 + 3 rows)
    pos_counts = pa.table({"file_path": [f"{B}/pd0.parquet", f"{B}/pd3.parquet", f"{B}/pd3.parquet",
                                         f"{B}/pd4.parquet"],
                           "key": [A, E, gone, gone], "rows": [10, 3, 2, 3]})
    return {"data": data, "dvs": dvs, "pos": pos, "eq": eq, "pos_counts": pos_counts,
            "params": M.params(small_size=100, many=1, target=400), "debt_params": M.debt_params(0.05),
            "size_classes": M.size_classes([0, 50, 1_000, 2 ** 63 - 1]), **storage_relations()}


T = "s3://bucket/t"
OLD, M1, STRAY, YOUNG, NOSIZE = (f"{B}/old.parquet", f"{T}/metadata/m1.avro", f"{B}/stray.parquet",
                                 f"{B}/young.parquet", f"{B}/nosize.parquet")
V1, V2, V3, V9 = (f"{T}/metadata/v1.metadata.json", f"{T}/metadata/v2.metadata.json",
                  f"{T}/metadata/v3.metadata.json", f"{T}/metadata/v9.metadata.json.gz")
HINT, HIDDEN = f"{T}/metadata/version-hint.text", f"{T}/_tmp/x.parquet"


def storage_relations() -> dict:
    """Three snapshots (1 and 2 past retention, 3 kept; old.parquet in 1 and 2 with two sizes, a in all three),
    a listing with a stray file, a young one (in flight), one whose size and time are unknown, a hidden one, four
    metadata files (v2 the one opened, v1 tracked, v3 newer and untracked, v9 older and untracked) and the
    version hint; files written before 4,000 ms are old enough to be orphans."""
    sets = [(1, A, 10), (1, M1, 100), (1, OLD, 50), (1, f"{T}/metadata/snap-1.avro", 7),
            (2, A, 10), (2, OLD, 55), (2, f"{T}/metadata/snap-2.avro", 8),
            (3, A, 10), (3, BB, 20), (3, f"{T}/metadata/snap-3.avro", 9)]
    listed = [(A, 10, 1_000, False), (BB, 20, 1_000, False), (OLD, 55, 1_000, False), (STRAY, 30, 1_000, False),
              (YOUNG, 40, 5_000, False), (NOSIZE, None, None, False), (HIDDEN, 5, 1_000, True),
              (V1, 3, 1_000, False), (V2, 3, 2_000, False), (V3, 3, 3_000, False), (V9, 3, 1_500, False),
              (HINT, 1, 1_000, False)]
    return {"snapshot_files": pa.table({c: [r[i] for r in sets] for i, c in enumerate(("sid", "location", "size"))}),
            "retention": M.retention([3], [1, 2]),
            "listing": pa.table({c: [r[i] for r in listed]
                                 for i, c in enumerate(("location", "size", "mtime_ms", "hidden"))},
                                schema=M.arrow_schema("listing")),
            "referenced": M.locations([V1, V2, HINT]), "metadata_log": M.metadata_log([V1], V2),
            "orphan_params": M.orphan_params(4_000)}


#: What each measure answers on :func:`v2_relations` (rows sorted).
V2_EXPECTED = {
    "position_deletes_applied": [(0, 0), (1, 0), (1, 4), (2, 1)],
    "equality_deletes_applied": [(0, 0), (2, 1), (3, 1)],
    "pos_rows": [(A, 10, 1), (E, 3, 1), (f"{B}/p=3/gone.parquet", 5, 2)],
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
    # a's share is 10%, above 5%: a candidate; e's 1.4% is not
    "partition_deletes": [(P1, 2, 300, 10, 1), (P2, 2, 700, 0, 0), (P3, 1, 500, 7, 0)],
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
    # old.parquet (its larger size), m1.avro and the manifest lists of 1 and 2: no kept snapshot holds them
    "expired_only": sorted([(OLD, 55), (M1, 100), (f"{T}/metadata/snap-1.avro", 7), (f"{T}/metadata/snap-2.avro", 8)]),
    "expired_only_totals": [(4, 170)],
    "metadata_listed": [(V1,), (V2,), (V3,), (V9,)],
    "metadata_files": [(4,)],
    "newer_metadata": [(V3,)],
    "unreferenced": sorted([(STRAY,), (YOUNG,), (NOSIZE,), (V3,), (V9,)]),
    "orphans": sorted([(STRAY, 30, 1_000, False), (NOSIZE, None, None, False), (V3, 3, 3_000, False),
                       (V9, 3, 1_500, False)]),
    "orphan_totals": [(4, 36, 1)],
})
V2_EVERYWHERE_EQUALITY = [(0, 0), (0, 1), (1, 1), (2, 0), (2, 1), (3, 1)]


def rows(table) -> list[tuple]:
    """A measure's answer (Arrow table or Spark DataFrame) as sorted tuples."""
    if hasattr(table, "collect"):
        return sorted(tuple(r) for r in table.collect())
    return sorted(tuple(r.values()) for r in table.to_pylist())
