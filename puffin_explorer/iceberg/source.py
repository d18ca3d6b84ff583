"""What every reader of one Iceberg table needs, and nothing more: a :class:`TableSource`.

The metadata, the I/O layer, path mapping (relocation), the manifest lists (one reader, one cache),
Parquet reads, field lookup and the findings sink.  The entry index is built over a source
(``index.build_index``), and every analysis — checks, commits, deletes, files, overview, the
doctor, the DV reader, the Spark plans — takes ``(source, index)``: none of them imports
:mod:`~.table`, whose :class:`~.table.Table` opens a source and delegates to them.

Layers above keep what they computed for one source in its :class:`SourceCaches` (typed slots,
one per kind), so a source is also the lifetime of everything read through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from .._text import middle, plural
from ..errors import InvalidFileError, NotFoundError, NotInTableError, SourceError, TableNotFoundError
from ..io.scope import OUTSIDE_SCOPE, ReadScope
from ..regions import Finding, Severity, cap_per_code
from . import manifests as mf
from .metadata import RESERVED_FIELDS, Snapshot, TableMetadata
from .paths import PathMapper, TableIO, basename, join, normalize, parent

_VERSION_FILE = re.compile(r"^v(\d+)(?:\.gz)?\.metadata\.json$")
_NUMBERED_FILE = re.compile(r"^(\d+)-[^/]*\.metadata\.json$")


def current_metadata_location(io: TableIO, table_root: str) -> str:
    """The current metadata file of a Hadoop-style table folder.

    ``metadata/version-hint.text`` names version N (``vN.metadata.json``); without
    a usable hint the highest ``vN.metadata.json`` (or ``NNNNN-uuid.metadata.json``) wins.
    """
    meta_dir = join(table_root, "metadata")
    names = {name for name, kind, _ in io.listdir(meta_dir) if kind == "file"}
    if "version-hint.text" in names:
        try:
            hint = io.read_text(join(meta_dir, "version-hint.text")).strip()
            candidate = f"v{int(hint)}.metadata.json"
            if candidate in names:
                return join(meta_dir, candidate)
        except (SourceError, ValueError):
            pass
    best: Optional[tuple[int, str]] = None
    for name in names:
        m = _VERSION_FILE.match(name) or _NUMBERED_FILE.match(name)
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), name)
    if best is None:
        raise TableNotFoundError(f"no table at {table_root}: no *.metadata.json in {meta_dir}", location=table_root)
    return join(meta_dir, best[1])


def table_scope(opened: str, root: Optional[str] = None, relocate: Optional[Mapping[str, str]] = None,
                allow: Any = ()) -> ReadScope:
    """The read scope of a table opened at ``opened`` (its metadata file, or with ``root`` its folder): the storage
    it is in when remote; when local its root (``root``, or the folder above a ``metadata`` folder holding the
    metadata file, else that file's folder); plus the ``relocate`` targets and the ``allow`` prefixes."""
    loc = normalize(str(opened))
    if root is None:
        folder = parent(loc)
        root = parent(folder) if basename(folder) == "metadata" else folder
    return ReadScope.around(loc, root, [allow] if isinstance(allow, str) else allow, relocate)


def scope_refused(source: "TableSource", scope: ReadScope, named: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``(what, location)`` pairs whose location, as read (relocated), is outside ``scope``: one column-wise
    test of the whole list (the locations a metadata file or a manifest list names: not an index's)."""
    import pyarrow as pa

    if not named:
        return []
    located = [(what, source.locate(loc)) for what, loc in named]
    refused = scope.refused(pa.array([loc for _, loc in located], pa.string()))
    return [pair for pair, out in zip(located, refused.tolist()) if out]


def scope_finding(scope: ReadScope, what: str, location: str, file: str = "") -> Finding:
    """The ``source.outside-scope`` finding of one refused location: what named it, the location, the scope and
    the parameter that would allow it."""
    from ..findings import make
    from ..regions import TableFinding

    err = scope.error(location)
    f = make(OUTSIDE_SCOPE, None, f"{what}: {err}", hint=err.hint)
    return TableFinding(code=f.code, severity=f.severity, offset=None, message=f.message, hint=f.hint, file=file)


def read_parquet_at(io: Any, location: str, columns: Optional[list[str]] = None):
    """Columns of the Parquet (position-delete) file at ``location``, read whole through ``io``; bytes that are not
    Parquet raise ``InvalidFileError`` (``iceberg.position-delete-unreadable``). The driver and the executors read
    position-delete files with it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = io.read(location)
    try:
        return pq.read_table(pa.BufferReader(data), columns=columns)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InvalidFileError(f"{location}: not a readable Parquet position-delete file ({plural(len(data), 'byte')}): "
                               f"{exc}", None, "iceberg.position-delete-unreadable") from exc


@dataclass
class SourceCaches:
    """What the layers above computed for one source, one typed slot per kind."""

    manifest_lists: dict[int, list] = field(default_factory=dict)  # snapshot id -> manifest-list records
    manifest_list_findings: dict[int, list] = field(default_factory=dict)  # snapshot id -> what reading it found
    fields: Optional[dict[int, tuple[str, Any]]] = None  # fields_by_id()
    located: dict[str, str] = field(default_factory=dict)  # a written location -> where it is now (located())
    vanished: dict[tuple, dict[str, Finding]] = field(default_factory=dict)  # (metadata, snapshot) -> path -> finding
    newer_metadata: Any = ()  # vanished.newer_metadata's one listing: () until listed, then a location or None
    entries: Any = None  # entry_cache.EntryCache: the decoded manifests and built indexes
    position_delete_files: dict[str, Any] = field(default_factory=dict)  # deletes.py: rows per data file, per file
    position_delete_counts: dict[int, dict] = field(default_factory=dict)  # deletes.py: per snapshot id
    dv_reader: Any = None  # dvreads.DVReader: read-ahead state and range readers


class TableSource:
    """One table's metadata file, read through one I/O layer with one path mapping.

    Locations inside the metadata are mapped through ``mapper`` (old prefix -> new prefix); findings met
    while answering questions go to :meth:`note` (each once) and show with the opening findings.
    """

    def __init__(self, metadata: TableMetadata, metadata_location: str, io: TableIO,
                 mapper: Optional[PathMapper] = None, name: str = "") -> None:
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.mapper = mapper or PathMapper()
        self.name = name or basename(metadata.location or parent(parent(metadata_location)))
        self.findings: list[Finding] = list(metadata.findings)
        self._noted: set[Finding] = set(self.findings)  # findings are frozen: each is added once by a set lookup
        self.caches = SourceCaches()

    @classmethod
    def open(cls, metadata_location: str, io: TableIO, relocate: Optional[Mapping[str, str]] = None,
             auto_relocate: bool = True, name: str = "", allow: Any = ()) -> "TableSource":
        """Read one ``*.metadata.json`` (damage becomes findings); ``auto_relocate`` maps the ``location`` the
        metadata was written with to the folder it was found in. No file, or not JSON: ``TableNotFoundError``.
        ``io`` reads only the table's scope from now on (:func:`table_scope`, joined with one it has)."""
        location = normalize(str(metadata_location))
        io.limit_to(table_scope(location, relocate=relocate, allow=allow))
        try:
            data = io.read(location)
        except NotFoundError as exc:
            raise TableNotFoundError(str(exc), exc.offset, exc.code, location=location) from exc
        source = cls(TableMetadata.from_bytes(data, location), location, io, PathMapper(relocate), name)
        if auto_relocate:
            source._detect_relocation()
        source._report_scope()
        return source

    def _report_scope(self) -> None:
        """A ``source.outside-scope`` finding for each location the metadata file names (manifest lists,
        statistics and partition-statistics files, metadata-log entries) outside the read scope: none of them
        is ever read (the I/O layer refuses it), and each answer that needed one says it is incomplete."""
        scope = self.scope
        if scope is None:
            return
        md = self.metadata
        named = [(f"snapshot {s.snapshot_id}'s manifest list", s.manifest_list) for s in md.snapshots
                 if s.manifest_list]
        named += [(f"{s.kind} statistics file of snapshot {s.snapshot_id}", s.path) for s in md.statistics]
        log = md.raw.get("metadata-log") if isinstance(md.raw, dict) else None
        named += [(f"metadata-log[{i}]", e.get("metadata-file")) for i, e in enumerate((log or [])[:100_000])
                  if isinstance(e, dict) and isinstance(e.get("metadata-file"), str)]
        named = [(what, loc) for what, loc in named if isinstance(loc, str) and loc]
        for what, loc in scope_refused(self, scope, named):
            self.note(scope_finding(scope, what, loc, self.metadata_location))

    def _detect_relocation(self) -> None:
        meta_dir = parent(self.metadata_location)
        if basename(meta_dir) != "metadata" or not self.metadata.location:
            return
        actual_root = normalize(parent(meta_dir))
        written_root = normalize(self.metadata.location)
        if self.mapper.map(written_root) == actual_root:
            return
        self.mapper.add(written_root, actual_root)
        self.note(Finding(
            "iceberg.table-relocated", Severity.INFO, None,
            f"table location {middle(written_root)} differs from where its metadata was found "
            f"({middle(actual_root)}); reading {middle(written_root)}/… from {middle(actual_root)}/…",
            hint="pass relocate={old: new} to map other prefixes (e.g. data written elsewhere)"))

    def with_mapper(self, mapper: PathMapper) -> "TableSource":
        """The same metadata read through another path mapping (nothing cached is shared)."""
        return type(self)(self.metadata, self.metadata_location, self.io, mapper, self.name)

    @property
    def scope(self) -> Optional[ReadScope]:
        """Where this table may read (:class:`~puffin_explorer.io.scope.ReadScope`); None when unlimited."""
        return self.io.scope

    def note(self, finding: Finding) -> None:
        """Add a finding met while answering a question (once)."""
        if finding not in self._noted:
            self._noted.add(finding)
            self.findings.append(finding)

    def locate(self, path: str) -> str:
        """Where a location written in the metadata is now."""
        return self.mapper.map(path)

    def located(self, path: str) -> str:
        """:meth:`locate`, remembered: the many DVs of one Puffin file share its path."""
        loc = self.caches.located.get(path)
        if loc is None:
            loc = self.caches.located[path] = self.locate(path)
        return loc

    def snapshot(self, snapshot_id: Optional[int] = None) -> Snapshot:
        """The metadata's snapshot (current by default); none such raises ``NotInTableError``."""
        snap = self.metadata.snapshot(snapshot_id)
        if snap is None:
            which = "current snapshot" if snapshot_id is None else f"snapshot {snapshot_id}"
            raise NotInTableError(f"{self.name}: no {which}")
        return snap

    def manifest_records(self, snapshot_id: Optional[int] = None) -> list[dict[str, Any]]:
        """The manifest list of a snapshot (records as dicts), read once."""
        snap = self.snapshot(snapshot_id)
        kept = self.caches.manifest_lists
        if snap.snapshot_id not in kept:
            if snap.manifest_list:
                loc = self.locate(snap.manifest_list)
                found: list[Finding] = []
                kept[snap.snapshot_id] = mf.read_manifest_list(self.io.read(loc), loc, found)
                scope = self.scope
                if scope is not None:  # a manifest outside the scope: named here, refused when read
                    named = [(f"manifest {i} of snapshot {snap.snapshot_id}'s list", m.get("manifest_path"))
                             for i, m in enumerate(kept[snap.snapshot_id])]
                    named = [(what, p) for what, p in named if isinstance(p, str) and p]
                    found += [scope_finding(scope, what, where, loc) for what, where in
                              scope_refused(self, scope, named)]
                found = cap_per_code(found)  # a list of many damaged records names each problem so often
                self.caches.manifest_list_findings[snap.snapshot_id] = found
                for f in found:
                    self.note(f)
            else:
                kept[snap.snapshot_id] = mf.manifest_list_from_paths(snap.manifests, snap.snapshot_id)
        return kept[snap.snapshot_id]

    def manifest_list_findings(self, snapshot_id: Optional[int] = None) -> list[Finding]:
        """What reading a snapshot's manifest list found in its records; empty until it was read."""
        return list(self.caches.manifest_list_findings.get(self.snapshot(snapshot_id).snapshot_id, []))

    def fields_by_id(self) -> dict[int, tuple[str, Any]]:
        """``{field_id: (name, type)}`` over every schema (current first) plus the reserved fields."""
        if self.caches.fields is None:
            fields: dict[int, tuple[str, Any]] = {}
            for sid in sorted(self.metadata.schemas, key=lambda s: s != self.metadata.current_schema_id):
                for f in self.metadata.fields(sid):
                    fields.setdefault(f.id, (f.name, f.type))
            for fid, (name, type_name) in RESERVED_FIELDS.items():
                fields.setdefault(fid, (name, type_name))
            self.caches.fields = fields
        return self.caches.fields

    def read_parquet(self, path: str, columns: Optional[list[str]] = None):
        """Columns of a Parquet file the metadata names (a position-delete file), as a ``pyarrow.Table``."""
        return read_parquet_at(self.io, self.locate(path), columns)

    def __repr__(self) -> str:
        return f"TableSource({self.name!r}, metadata={self.metadata_location!r})"
