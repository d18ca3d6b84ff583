"""Parquet files written by pyarrow for the layout tests: several row groups, dictionary
pages, page indexes, bloom filters, several codecs, data page v2 and nested columns."""

from __future__ import annotations

from pathlib import Path

N_ROWS = 5000
ROW_GROUP_ROWS = 1000
ROWS_PER_PAGE = 300
CODECS = {"id": "zstd", "name": "snappy", "score": "gzip", "flag": "none", "day": "lz4",
          "tags.list.element": "brotli"}


def sample_table():
    import pyarrow as pa

    ids = list(range(N_ROWS))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"name-{i % 37}" for i in ids], pa.string()),
        "score": pa.array([None if i % 11 == 0 else i * 0.5 for i in ids], pa.float64()),
        "flag": pa.array([i % 3 == 0 for i in ids], pa.bool_()),
        "day": pa.array([i % 400 for i in ids], pa.date32()),
        "tags": pa.array([[f"t{i % 5}"] * (i % 3) for i in ids], pa.list_(pa.string())),
    })


def write_sample(path: Path, *, data_page_version: str = "1.0", page_index: bool = True,
                 bloom: bool = False) -> Path:
    """Write the sample table: 5 row groups of 1000 rows, pages of at most 300 rows."""
    import pyarrow.parquet as pq

    pq.write_table(
        sample_table(), path, row_group_size=ROW_GROUP_ROWS, compression=CODECS,
        use_dictionary=["name", "day", "tags"], write_page_index=page_index,
        data_page_version=data_page_version, max_rows_per_page=ROWS_PER_PAGE,
        write_page_checksum=True,
        bloom_filter_options={"id": {"ndv": N_ROWS, "fpp": 0.05}} if bloom else None,
    )
    return path
