"""Shared pytest fixtures for the Spark pipeline tests: one real Spark session with the
Iceberg runtime, the demo warehouse built by it, and the reference warehouse relocated.

The reference warehouse under ``resources/fixtures/warehouse`` was written at
``/data/warehouse``; every path in its metadata (metadata.json, manifest lists,
manifests, the Parquet position-delete file) is absolute under that root.
:func:`relocate_warehouse` copies it and rewrites those paths (and the sizes and
lengths that change with them) so Spark's Iceberg reader opens the copy.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(os.environ.get("PUFFIN_EXPLORER_FIXTURES",
                              Path(__file__).resolve().parents[1] / "resources" / "fixtures"))
FIXTURE_WAREHOUSE = FIXTURES / "warehouse"
FIXTURE_ROOT = "/data/warehouse"


def _swap(value, old: str, new: str):
    """Replace the ``old`` root at the start of every string/bytes inside ``value``."""
    if isinstance(value, str):
        for prefix in ("file:" + old, old):
            if value.startswith(prefix):
                return new + value[len(prefix):]
        return value
    if isinstance(value, bytes):
        return new.encode() + value[len(old):] if value.startswith(old.encode()) else value
    if isinstance(value, dict):
        return {k: _swap(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    return value


def _rewrite_avro(path: Path, old: str, new: str, sizes: dict[str, int], field: str) -> None:
    import fastavro

    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema, codec = reader.writer_schema, reader.codec
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = [_swap(r, old, new) for r in reader]
    for rec in records:  # sizes of files rewritten earlier
        holder = rec.get("data_file", rec)
        key = holder.get("file_path") or holder.get("manifest_path")
        if key in sizes:
            holder[field] = sizes[key]
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, records, codec=codec, metadata=meta)


def relocate_warehouse(src: Path, dst: Path, old_root: str = FIXTURE_ROOT) -> Path:
    """Copy the warehouse ``src`` to ``dst`` and rewrite every ``old_root`` path to ``dst``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Hadoop's local file system keeps a ".<name>.crc" beside each file it wrote: the
    # rewritten files would fail it, and a missing one is simply not checked.
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".*.crc"))
    new = str(dst)
    sizes: dict[str, int] = {}
    # 1. Parquet position-delete files name their data files.
    for f in dst.rglob("*-deletes.parquet"):
        t = pq.read_table(f)
        if "file_path" in t.column_names:
            idx = t.column_names.index("file_path")
            col = pa.array([_swap(v, old_root, new) for v in t.column(idx).to_pylist()], t.schema.field(idx).type)
            t = t.set_column(idx, t.schema.field(idx), col)
            pq.write_table(t, f)
            sizes[str(f)] = f.stat().st_size
    for meta in [p for p in dst.rglob("metadata") if p.is_dir()]:
        # 2. manifests (data and delete files), with new sizes of rewritten delete files
        for f in meta.glob("*-m*.avro"):
            _rewrite_avro(f, old_root, new, sizes, "file_size_in_bytes")
            sizes[str(f)] = f.stat().st_size
        # 3. manifest lists, with the new manifest lengths
        for f in meta.glob("snap-*.avro"):
            _rewrite_avro(f, old_root, new, sizes, "manifest_length")
        # 4. table metadata
        for f in meta.glob("*.metadata.json"):
            f.write_text(json.dumps(_swap(json.loads(f.read_text()), old_root, new)))
    return dst


def relocated_csv(name: str, root: Path) -> list[dict]:
    """Rows of a fixture ``*_delete_files.csv`` with paths moved under ``root``; numbers as int."""
    import csv

    with open(FIXTURE_WAREHOUSE / name) as fh:
        rows = list(csv.DictReader(fh))
    return [{k: (int(v) if v.isdigit() else _swap(v, FIXTURE_ROOT, str(root))) for k, v in r.items()} for r in rows]


#: A class every Iceberg runtime needs to read or write any metadata.json (``org.apache.iceberg.util.JsonUtil``
#: loads it): Iceberg's runtime jars carry Jackson relocated under their own package.
SHADED_JACKSON = "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class"
#: Runtime jars known to lack it: snowpark-connect-deps-iceberg 1.0.3 ships Iceberg 1.10.2 without the
#: relocated Jackson (no class under org/apache/iceberg/shaded/com/fasterxml; 1.0.1's 1.9.2 jar has 1,143).
KNOWN_INCOMPLETE_RUNTIMES = {"iceberg-spark-runtime-3.5_2.12-1.10.2.jar", "iceberg-spark-runtime-3.5_2.13-1.10.2.jar"}


def runtime_lacks_shaded_jackson(jar: str) -> bool:
    """True when the Iceberg runtime ``jar`` has no relocated Jackson, so Iceberg cannot start from it."""
    import zipfile

    with zipfile.ZipFile(jar) as z:
        return SHADED_JACKSON not in set(z.namelist())


def skip_unless_iceberg_can_run() -> None:
    """Skip, saying why, when the installed Iceberg runtime jar is one Iceberg cannot start from."""
    from puffin_explorer import spark as pes

    try:
        jar = pes.runtime_jar()
    except pes.SparkSetupError:
        return  # session() says what is missing
    if runtime_lacks_shaded_jackson(jar):
        pytest.skip(f"{os.path.basename(jar)} lacks Iceberg's relocated Jackson ({SHADED_JACKSON}): Iceberg cannot "
                    "read or write table metadata with it (tests/test_spark_setup.py shows the error)")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A real local Spark session with the Iceberg runtime (the active one if a test run already has it)."""
    pytest.importorskip("pyspark")
    from puffin_explorer import spark as pes

    skip_unless_iceberg_can_run()

    s = pes.session(str(tmp_path_factory.mktemp("spark-default-wh")), catalog="pe_default", master="local[2]",
                    conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    s.sparkContext.setLogLevel("ERROR")
    yield s


@pytest.fixture(scope="session")
def demo_warehouse(spark, tmp_path_factory) -> Path:
    """The demo warehouse, built once per run, registered as catalog ``demo``."""
    from puffin_explorer import spark as pes
    from puffin_explorer.demo import build_demo_warehouse

    folder = tmp_path_factory.mktemp("demo") / "warehouse"
    build_demo_warehouse(str(folder), spark, catalog="demo", log=lambda *_: None)
    pes.add_catalog(spark, "demo", str(folder))
    return folder


@pytest.fixture(scope="session")
def fixture_warehouse(spark, tmp_path_factory) -> Path:
    """The reference warehouse relocated into a temp folder, registered as catalog ``fx``."""
    from puffin_explorer import spark as pes

    if not FIXTURE_WAREHOUSE.is_dir():
        pytest.skip(f"reference fixtures not found at {FIXTURE_WAREHOUSE}")
    root = relocate_warehouse(FIXTURE_WAREHOUSE, tmp_path_factory.mktemp("fx") / "warehouse")
    pes.add_catalog(spark, "fx", str(root))
    return root
