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


def skip_without_writer_options(needed_by: str, **options) -> None:
    """Skip the test (or fixture) calling this when the installed pyarrow's Parquet writer does not take one of
    ``options`` (keyword=value, as a test passes them): pyarrow adds writer options release by release (14 has
    no ``write_page_checksum``, 18 is the first with ``store_decimal_as_integer``, and has neither
    ``bloom_filter_options`` nor ``max_rows_per_page``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytest

    for name, value in options.items():
        try:
            pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), pa.BufferOutputStream(), **{name: value})
        except TypeError as exc:
            if f"unexpected keyword argument '{name}'" not in str(exc):
                raise
            pytest.skip(f"pyarrow {pa.__version__}'s Parquet writer has no {name} option, which {needed_by}")


def write_sample(path: Path, *, data_page_version: str = "1.0", page_index: bool = True,
                 bloom: bool = False) -> Path:
    """Write the sample table: 5 row groups of 1000 rows, pages of at most 300 rows (skips the calling test where
    pyarrow's writer cannot)."""
    import pyarrow.parquet as pq

    options = {"max_rows_per_page": ROWS_PER_PAGE, "write_page_checksum": True}
    if bloom:
        options["bloom_filter_options"] = {"id": {"ndv": N_ROWS, "fpp": 0.05}}
    skip_without_writer_options("the sample files are written with", **options)
    pq.write_table(
        sample_table(), path, row_group_size=ROW_GROUP_ROWS, compression=CODECS,
        use_dictionary=["name", "day", "tags"], write_page_index=page_index,
        data_page_version=data_page_version, **options,
    )
    return path
