"""Spark pipeline: scans whose cost grows with a table run as Spark jobs.

    from puffin_explorer import spark as pes
    spark = pes.session()                       # active session, else embedded local[*] + Iceberg
    pes.dv_positions(spark, "wh.shop.orders")   # DataFrame(data_file, pos), decoded on executors
    pes.dv_positions(spark, Table.from_metadata(loc, relocate={...}))   # planned here, no Iceberg jar
    pes.check(spark, "wh.shop.orders").where("NOT ok").count()   # 0: our decode == Iceberg's
    pes.health(spark, "wh.shop.orders", now="2026-11-28")        # the table doctor, its scans on Spark

PySpark is imported only when a function runs, so importing this module is cheap.
"""

from .errors import SparkJobError, spark_error, spark_errors
from .health import health
from .planner import TablePlan, plan_table
from .scans import (check, deleted_rows, deletion_report, dv_facts, dv_metadata, dv_positions, plan,
                    puffin_inventory, resolve_data_file)
from .session import SparkSetupError, add_catalog, check_java, check_runtime_jar, runtime_jar, session, ship_package
from .tables import current_metadata_location, metadata_table, read_table, statistics_files

__all__ = [
    "session", "add_catalog", "runtime_jar", "check_java", "check_runtime_jar", "ship_package", "SparkSetupError",
    "puffin_inventory", "dv_positions", "dv_facts", "dv_metadata", "deleted_rows", "deletion_report", "check",
    "resolve_data_file", "plan", "plan_table", "TablePlan", "spark_errors", "spark_error", "SparkJobError",
    "metadata_table", "read_table", "current_metadata_location", "statistics_files", "health",
]
