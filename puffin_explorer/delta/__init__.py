"""Delta Lake tables and their deletion vectors: the log, DV descriptors, DV files, checks."""

from .descriptor import DVDescriptor
from .dvfile import DeltaDV, DeltaDVFile
from .table import DeltaTable

__all__ = ["DeltaTable", "DeltaDVFile", "DeltaDV", "DVDescriptor"]
