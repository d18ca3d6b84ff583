"""Write small Delta Lake tables with deletion vectors, for tests and benchmarks.

The log is written here (JSON commits, no engine needed): version 0 adds the
data files, version 1 replaces each deleted-from file's add action with one that
carries a DV descriptor.  DVs go into ``deletion_vector_<uuid>.bin`` files
(``storage="u"``, optionally under a random ``prefix`` folder), the same files
named by absolute path (``"p"``), or inline in the log (``"i"``).  DV bytes are
written by the project's Iceberg DV serializer: a Delta DV in a file is the same
framing (big-endian size, magic, portable Roaring, big-endian CRC).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Mapping, Optional, Sequence

SCHEMA = {"type": "struct", "fields": [{"name": "value", "type": "long", "nullable": True, "metadata": {}}]}


def _commit(root: str, version: int, actions: list[dict]) -> None:
    log = os.path.join(root, "_delta_log")
    os.makedirs(log, exist_ok=True)
    with open(os.path.join(log, f"{version:020d}.json"), "w") as fh:
        for a in actions:
            fh.write(json.dumps(a, separators=(",", ":")) + "\n")


def write_delta_table(root: str, row_counts: Sequence[int], deletes: Mapping[int, Sequence[int]],
                      storage: str = "u", dvs_per_file: int = 100, prefix: str = "",
                      seed_uuid: Optional[int] = None) -> dict:
    """Write a table of ``len(row_counts)`` data files (column ``value`` = a running row number) and
    DVs deleting ``deletes[i]`` positions of file ``i``.  Returns ``{data_file_path: positions}``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from puffin_explorer.delta import z85
    from puffin_explorer.format.dv_serialize import serialize_positions

    rng = uuid.UUID(int=seed_uuid) if seed_uuid is not None else None
    os.makedirs(root, exist_ok=True)
    adds, start = [], 0
    for i, n in enumerate(row_counts):
        name = f"part-{i:05d}-{uuid.UUID(int=(rng.int + i) if rng else uuid.uuid4().int)}-c000.snappy.parquet"
        pq.write_table(pa.table({"value": np.arange(start, start + n, dtype=np.int64)}), os.path.join(root, name))
        stats = {"numRecords": n, "minValues": {"value": start}, "maxValues": {"value": start + n - 1},
                 "nullCount": {"value": 0}}
        adds.append({"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(root, name)),
                     "modificationTime": 1700000000000, "dataChange": True, "stats": json.dumps(stats)})
        start += n
    _commit(root, 0, [
        {"commitInfo": {"timestamp": 1700000000000, "operation": "WRITE", "operationParameters": {"mode": "ErrorIfExists"}}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors"]}},
        {"metaData": {"id": "test-table", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(SCHEMA), "partitionColumns": [],
                      "configuration": {"delta.enableDeletionVectors": "true"}, "createdTime": 1700000000000}},
    ] + [{"add": a} for a in adds])

    actions: list[dict] = [{"commitInfo": {"timestamp": 1700000001000, "operation": "DELETE",
                                           "operationParameters": {"predicate": "[]"}}}]
    expected = {}
    order = sorted(deletes)
    for chunk_start in range(0, len(order), max(1, dvs_per_file)):
        chunk = order[chunk_start:chunk_start + dvs_per_file]
        file_uuid = uuid.UUID(int=(rng.int + 10_000_000 + chunk_start) if rng else uuid.uuid4().int)
        body = bytearray(b"\x01")
        descs = {}
        for i in chunk:
            blob = serialize_positions(deletes[i])
            descs[i] = (len(body), len(blob) - 8, blob)
            body += blob
        if storage in ("u", "p"):
            folder = os.path.join(root, prefix) if prefix else root
            os.makedirs(folder, exist_ok=True)
            dv_path = os.path.join(folder, f"deletion_vector_{file_uuid}.bin")
            with open(dv_path, "wb") as fh:
                fh.write(bytes(body))
        for i in chunk:
            offset, size, blob = descs[i]
            if storage == "u":
                dv = {"storageType": "u", "pathOrInlineDv": prefix + z85.encode_uuid(file_uuid), "offset": offset}
            elif storage == "p":
                dv = {"storageType": "p", "pathOrInlineDv": "file://" + os.path.abspath(dv_path), "offset": offset}
            else:
                dv = {"storageType": "i", "pathOrInlineDv": z85.encode(blob[4:-4])}
            dv.update(sizeInBytes=size, cardinality=len(set(deletes[i])))
            old = adds[i]
            actions.append({"remove": {"path": old["path"], "deletionTimestamp": 1700000001000, "dataChange": True,
                                       "extendedFileMetadata": True, "partitionValues": {}, "size": old["size"]}})
            actions.append({"add": {**old, "dataChange": True, "deletionVector": dv}})
            expected[old["path"]] = sorted(set(int(p) for p in deletes[i]))
    if deletes:
        _commit(root, 1, actions)
    return expected
