"""Iceberg metadata layer: warehouses, tables, manifests, statistics files and cross-checks."""

from .bounds import decode_value
from .checks import findings_frame
from ..regions import TableFinding
from .metadata import Snapshot, StatisticsFile, TableMetadata
from .paths import PathMapper, TableIO
from .table import Table
from .warehouse import Warehouse

__all__ = ["Warehouse", "Table", "TableMetadata", "Snapshot", "StatisticsFile", "PathMapper", "TableIO",
           "TableFinding", "findings_frame", "decode_value"]
