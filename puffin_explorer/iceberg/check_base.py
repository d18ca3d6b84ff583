"""What every table check shares: the index columns they read as numpy arrays, a finding about one file, and
opening a Puffin file the metadata names (an unreadable one a finding)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..errors import PuffinError, StorageUnavailableError
from ..io.scope import OutsideScopeError
from ..regions import Finding, Severity, TableFinding

if TYPE_CHECKING:  # pragma: no cover
    from .source import TableSource


def file_finding(code: str, severity: Severity, file: str, message: str, offset: Optional[int] = None,
                 length: Optional[int] = None, hint: str = "") -> TableFinding:
    """A finding about ``file`` (its location as the metadata writes it; offsets are in that file)."""
    return TableFinding(code=code, severity=severity, offset=offset, message=message, hint=hint,
                        length=length, file=file)


def open_puffin(source: "TableSource", path: str, out: list[Finding]):
    """The Puffin file at ``path`` (as written), or None with a finding in ``out``: missing or unreadable."""
    from ..format.puffin import PuffinFile

    try:
        return PuffinFile(source.locate(path), storage_options=source.io.storage_options)
    except (PuffinError, OSError, ValueError) as exc:
        missing = not isinstance(exc, (StorageUnavailableError, OutsideScopeError)) \
            and not source.io.exists(source.locate(path))
        out.append(file_finding("iceberg.file-missing" if missing else "iceberg.puffin-unreadable", Severity.ERROR,
                                path, f"cannot open Puffin file {source.locate(path)}: {exc}",
                                getattr(exc, "offset", None)))
        return None


def arrow_mask(mask):
    """A numpy boolean mask as an Arrow array (for ``filter``)."""
    import pyarrow as pa

    return pa.array(mask, pa.bool_())


class CheckColumns:
    """The index columns the checks share, as numpy arrays, computed once.

    ``data`` / ``deletes`` select the live entries of data / delete manifests (what
    ``entries(content=...)`` lists); every row, DELETED ones included, is in the other arrays.
    """

    def __init__(self, ix: Any) -> None:
        self.ix = ix
        self.data = ix.mask(deletes=False)
        self.deletes = ix.mask(deletes=True)
        self.content = ix.ints("content", -1)
        self.status = ix.ints("status", 1)
        self.records = ix.ints("record_count", 0)
        self.manifest = ix.ints("manifest")
        self._kinds: dict[str, Any] = {}

    def kind_is(self, kind: str):
        """Whether each row is of ``kind`` (``files()``' kinds: ``dv``, ``position-deletes``, ...), a numpy mask."""
        if kind not in self._kinds:
            import pyarrow.compute as pc

            self._kinds[kind] = pc.fill_null(pc.equal(self.ix.table.column("kind"), kind), False) \
                .to_numpy(zero_copy_only=False)
        return self._kinds[kind]

    def manifest_path(self, row: int) -> str:
        """The manifest the index's row ``row`` was read from."""
        return self.ix.manifests[int(self.manifest[row])].get("manifest_path")

    def select(self, names: list[str], mask):
        """The named columns of the rows ``mask`` selects, as one-chunk Arrow arrays."""
        t = self.ix.table.select(names).filter(arrow_mask(mask))
        return {n: t.column(n).combine_chunks() for n in names}
