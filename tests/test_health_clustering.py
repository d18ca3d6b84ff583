"""The doctor's clustering check: value-range overlap depth per partition, on a table whose files' bounds are known
(written with PyIceberg from pyarrow tables) and on the fixture warehouse."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from puffin_explorer import Warehouse
from puffin_explorer.iceberg.columns import partition_text
from puffin_explorer.iceberg.health import table_health
from puffin_explorer.iceberg.health_clustering import overlap_depth

from _parquet_samples import skip_without_writer_options
from _warehouse_fixtures import WAREHOUSE

NOW = "2026-11-28T00:00:00Z"
#: Per region, the [min, max] of x of each file written: "a" overlaps, "b" is clustered (and overlaps "a"'s
#: ranges, which must not count: depth is measured within one partition only).
RANGES = {"a": [(0, 10), (5, 15), (8, 20), (2, 18)], "b": [(0, 10), (11, 20), (21, 30)]}


@pytest.fixture(scope="module")
def sorted_table(tmp_path_factory):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    skip_without_writer_options("PyIceberg 0.12 passes to every Parquet file it writes (its pyarrow extra "
                                "wants pyarrow 18)", store_decimal_as_integer=True)
    root = tmp_path_factory.mktemp("clustering")
    cat = SqlCatalog("local", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    cat.create_namespace("ns")
    schema = Schema(NestedField(1, "region", StringType(), required=False),
                    NestedField(2, "x", LongType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=IdentityTransform(), name="region"))
    order = SortOrder(SortField(source_id=2, transform=IdentityTransform()))
    t = cat.create_table("ns.events", schema=schema, partition_spec=spec, sort_order=order,
                         properties={"format-version": "2"})
    arrow = pa.schema([("region", pa.string()), ("x", pa.int64())])
    for region, ranges in RANGES.items():
        for lo, hi in ranges:
            xs = list(range(lo, hi + 1))
            t.append(pa.table({"region": [region] * len(xs), "x": xs}, schema=arrow))
    return Warehouse(cat).table("ns.events")


def test_overlap_depth_counts_files_containing_each_bound_value():
    assert overlap_depth([0, 11, 21], [10, 20, 30]) == (1.0, 1)  # disjoint: one file per value
    assert overlap_depth([0, 0, 0], [5, 5, 5]) == (3.0, 3)  # three files over one range
    # bounds 0,2,5,8,10,15,18,20 lie in 1,2,3,4,4,3,2,1 files
    assert overlap_depth([0, 5, 8, 2], [10, 15, 20, 18]) == (2.5, 4)
    assert overlap_depth(["a", "c"], ["d", "f"]) == (1.5, 2)  # strings compare too
    assert overlap_depth([], []) == (0.0, 0)


def test_clustering_on_the_sort_order_column(sorted_table):
    h = sorted_table.health(now=NOW)
    clus = h.clustering.set_index("partition")
    # each region's files, read back with pyarrow: their x ranges are those written
    files = sorted_table.files()
    for region, ranges in RANGES.items():
        paths = files[files["partition"].map(lambda p: p.get("region")) == region]["file_path"]
        got = sorted((pq.read_table(sorted_table.locate(p))["x"].to_pylist()[0],
                      pq.read_table(sorted_table.locate(p))["x"].to_pylist()[-1]) for p in paths)
        assert got == sorted(ranges)
    assert clus.loc["region=a", ["files", "files_with_bounds", "average_depth", "max_depth"]].tolist() == \
        [4, 4, 2.5, 4]
    assert clus.loc["region=b", ["files", "files_with_bounds", "average_depth", "max_depth"]].tolist() == \
        [3, 3, 1.0, 1]
    assert set(clus["column"]) == {"x"}
    assert h.metrics["clustering_column"] == "x"
    assert h.metrics["clustering_depth"] == round((2.5 * 4 + 1.0 * 3) / 7, 4) == 1.8571
    assert h.metrics["poorly_clustered_partitions"] == 1
    f = h.finding("health.poor-clustering")
    assert f.severity.value == "warning"
    assert f.evidence["column"] == "x" and f.evidence["column_source"] == "sort order 1"
    assert f.evidence["worst_partition"] == "region=a" and f.evidence["worst_average_depth"] == 2.5
    assert f.evidence["worst_max_depth"] == 4 and f.evidence["threshold"] == 2.0
    assert [a.statement for a in f.actions if a.engine == "spark"] == [
        "CALL spark_catalog.system.rewrite_data_files(table => 'ns.events', strategy => 'sort', "
        "sort_order => 'x ASC NULLS FIRST', options => map('rewrite-all', 'true'))"]
    assert [a.statement for a in f.actions if a.engine == "trino"] == [
        "ALTER TABLE ns.events SET PROPERTIES sorted_by = ARRAY['x']"]
    assert f.effect["files_in_poor_partitions"] == 4 and f.effect["data_files_rewritten"] == 7
    assert f.effect["rows_read"] == sum(hi - lo + 1 for r in RANGES.values() for lo, hi in r) == 83
    assert f.actions[0].statement in h.plan()
    html = h.to_html()
    assert "Clustering on x" in html and "2.50" in html and "<script" not in html


def test_a_named_column_overrides_the_sort_order(sorted_table):
    h = table_health(sorted_table.source, now=NOW, cluster_by="region")
    # one region value per partition: every file of a partition holds the same single value
    assert h.clustering["average_depth"].tolist() == [4.0, 3.0]
    assert h.metrics["clustering_column"] == "region"
    assert h.finding("health.poor-clustering").evidence["column_source"] == "given"


def test_fixture_orders_clustering_stays_within_buckets():
    t = Warehouse(str(WAREHOUSE)).table("shop.orders")
    # no sort order: nothing measured unless a column is named
    plain = t.health(now=NOW)
    assert plain.metrics["clustering_column"] is None and "clustering" not in plain.frames
    h = table_health(t.source, now=NOW, cluster_by="order_id")
    clus = h.clustering
    assert clus["partition"].tolist() == [f"customer_id_bucket={b}" for b in range(4)]
    assert clus["files"].tolist() == [2, 2, 2, 2]
    # each bucket's two files (the original and the UPDATE's rewrite) span overlapping order_id ranges:
    # four distinct bounds, the middle two inside both files
    data = t.files()
    data = data[data["kind"] == "data"]
    for _, row in clus.iterrows():
        part = data[data["partition"].map(partition_text) == row["partition"]]
        lows = [b["order_id"] for b in part["lower_bounds"]]
        highs = [b["order_id"] for b in part["upper_bounds"]]
        assert (row["average_depth"], row["max_depth"]) == overlap_depth(lows, highs)
    assert clus["average_depth"].tolist() == [1.5, 1.5, 1.5, 1.5]
    assert h.metrics["clustering_depth"] == 1.5 and h.metrics["poorly_clustered_partitions"] == 0
    assert h.finding("health.poor-clustering") is None
    # across buckets, the eight files would overlap far deeper than within each bucket
    assert overlap_depth([b["order_id"] for b in data["lower_bounds"]],
                         [b["order_id"] for b in data["upper_bounds"]])[0] > 4


def test_an_unknown_column_is_a_clear_error(sorted_table):
    import os
    import subprocess
    import sys

    from puffin_explorer.errors import NotInTableError

    from conftest import ROOT

    with pytest.raises(NotInTableError, match="no such column .*columns: region, x"):
        table_health(sorted_table.source, now=NOW, cluster_by="nope")
    run = subprocess.run([sys.executable, "-m", "puffin_explorer", "doctor", str(WAREHOUSE), "--table", "shop.orders",
                          "--cluster-by", "nope"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.returncode not in (0, 1) and "no such column" in run.stderr and "Traceback" not in run.stderr


def test_a_column_name_that_is_no_identifier_is_quoted_in_the_sort_order():
    import pandas as pd

    from puffin_explorer.iceberg.health_clustering import clustering_finding

    clus = pd.DataFrame({"partition": ["{}"], "column": ["order date"], "files": [3], "files_with_bounds": [3],
                         "average_depth": [3.0], "max_depth": [3], "bytes": [300], "rows": [30]})
    findings, m = [], {"data_files": 3, "data_bytes": 300, "records": 30}
    clustering_finding(findings, clus, "order date", "given", m, "CALL c.system.", "'ns.t'", "ns.t")
    assert findings[0].actions[0].statement == (
        "CALL c.system.rewrite_data_files(table => 'ns.t', strategy => 'sort', sort_order => "
        "'`order date` ASC NULLS FIRST', options => map('rewrite-all', 'true'))")
    assert m["clustering_depth"] == 3.0 and m["poorly_clustered_partitions"] == 1
