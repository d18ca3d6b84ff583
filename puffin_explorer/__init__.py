"""puffin_explorer: look inside Apache Iceberg Puffin files.

The core (reading, validating, decoding, writing) needs no JVM and no notebook;
display, widgets and Spark helpers are imported lazily.
"""

from .errors import BlobDecodeError, InvalidFileError, PuffinError, SourceError, UnsupportedCodecError
from .format.dv import DeletionVector
from .format.puffin import BlobMetadata, PuffinFile, read_dv
from .format.raw import RawBlob
from .format.registry import register_decoder
from .format.theta import ThetaSketch
from .format.writer import PuffinWriter
from .delta import DeltaDVFile, DeltaTable
from .iceberg import Table, Warehouse
from .parquet import DeletionOverlay, ParquetLayout
from .regions import Finding, FindingList, Region, Severity
from .versions import show_versions

from ._version import __version__

__all__ = [
    "PuffinFile", "BlobMetadata", "DeletionVector", "ThetaSketch", "RawBlob", "PuffinWriter", "read_dv",
    "register_decoder", "Region", "Finding", "Severity", "PuffinError", "InvalidFileError",
    "BlobDecodeError", "SourceError", "UnsupportedCodecError", "Table", "Warehouse",
    "ParquetLayout", "DeletionOverlay", "DeltaTable", "DeltaDVFile", "FindingList", "register_view",
    "RenderOptions", "view", "show_versions",
]

_DISPLAY_NAMES = {"register_view", "RenderOptions", "view"}


def __getattr__(name: str):
    """``register_view``, ``RenderOptions`` and ``view`` come from the display layer, imported on first use."""
    if name in _DISPLAY_NAMES:
        from . import display

        return getattr(display, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
