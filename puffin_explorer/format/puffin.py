"""The Puffin container: footer first, blobs on demand, every problem a finding.

Opening reads the file's tail once (``tail_size`` bytes, 64 KiB by default) and a
second, exact range only when the footer is larger; blobs are read when asked
for.  Parsing is lenient: what the bytes allow is parsed and each problem is
recorded as a :class:`~puffin_explorer.regions.Finding`.  ``strict=True`` raises
the first error instead.
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass
from typing import Any, Optional

from .._text import plural
from ..errors import BlobDecodeError, InvalidFileError, PuffinError
from ..io.source import ByteSource, Location, read_range
from .._gc import gc_paused
from .._repr import RichRepr, hex_view
from ..regions import Finding, FindingList, Region, Severity, _short_value, cap_per_code
from . import codecs, container
from .blob_entry import BlobEntry
from .footer import DEFAULT_TAIL, MAGIC, MIN_FOOTER, Footer, FooterReader
from .registry import decoder_for

#: When validating, blob areas up to this size are fetched with one request.
PREFETCH_LIMIT = 32 << 20


@dataclass  # again: its __init__ then calls __post_init__
class BlobMetadata(BlobEntry):
    """One entry of the footer's ``blobs`` list (:class:`~.blob_entry.BlobEntry`), with a handle to read the blob."""

    def __post_init__(self) -> None:
        self._file_ref: Optional[weakref.ref] = None
        self._reopened: Optional["PuffinFile"] = None
        self._open_args: Optional[tuple] = None

    def _attach(self, file: "PuffinFile") -> "BlobMetadata":
        # A weak reference: a file and its entries referring to each other strongly would make every opened
        # file, its decoded blobs and regions cyclic garbage, freed only by a full collection.
        self._file_ref = file._weak_self
        self._open_args = file._open_args
        return self

    def _detached(self) -> "BlobMetadata":
        """This entry without its handle to the file: what a decoded blob keeps as its ``metadata`` (a decoded blob
        held by its file's cache and holding an entry that holds a file opened again would be cyclic garbage,
        its positions freed only by a collection)."""
        out = copy.copy(self)
        out._file_ref = out._reopened = out._open_args = None
        return out

    @property
    def file(self) -> Optional["PuffinFile"]:
        """The file this entry belongs to (opened again from the same source if it was dropped,
        as in ``PuffinFile(p).blobs[0].decode()``); None for an entry built by hand."""
        file = self._file_ref() if self._file_ref is not None else None
        if file is None and self._open_args is not None:
            if self._reopened is None:
                source, strict, max_footer, max_blob = self._open_args
                self._reopened = PuffinFile(source, strict=strict, max_footer_size=max_footer,
                                            max_blob_size=max_blob)
            file = self._reopened
        return file

    @property
    def end(self) -> Optional[int]:
        if self.offset is None or self.length is None:
            return None
        return self.offset + self.length

    def read_stored(self) -> bytes:
        """The blob's bytes as stored in the file (still compressed)."""
        return self._file().read_stored(self)

    def read(self) -> bytes:
        """The blob's bytes, decompressed."""
        return self._file().read_blob(self)

    def decode(self):
        """The decoded blob: a DeletionVector, ThetaSketch or RawBlob, by type."""
        return self._file().decode_blob(self)

    def _file(self) -> "PuffinFile":
        if self.file is None:
            raise PuffinError("this blob metadata is not attached to a file")
        return self.file

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "type": self.type, "fields": self.fields,
            "snapshot-id": self.snapshot_id, "sequence-number": self.sequence_number,
            "offset": self.offset, "length": self.length,
            "compression-codec": self.compression_codec, "properties": dict(self.properties),
        }


class PuffinFile(FooterReader, RichRepr):
    """A Puffin file, opened leniently.

    ``location`` is a local path, any fsspec URL (``s3://``, ``gs://``,
    ``abfs://``, ``http(s)://``, ``memory://``) or ``bytes``.  Only the footer is
    read on open; ``findings`` reads and checks every blob.  With ``strict=True``
    opening reads and checks every blob too, and raises
    :class:`~puffin_explorer.errors.InvalidFileError` for the first error.
    """

    _entry_type = BlobMetadata  # what the footer's entries are made as (FooterReader)

    def __init__(self, location: Location, storage_options: Optional[dict[str, Any]] = None,
                 strict: bool = False, tail_size: int = DEFAULT_TAIL,
                 max_footer_size: int = 256 << 20, max_blob_size: int = codecs.DEFAULT_MAX_OUTPUT) -> None:
        self.source = ByteSource.of(location, storage_options)
        self.location = self.source.location
        self.size = self.source.size
        self.strict = strict
        self.max_footer_size = max_footer_size
        self.max_blob_size = max_blob_size
        self.footer: Optional[Footer] = None
        self.blobs: list[BlobMetadata] = []
        self.properties: dict[str, Any] = {}
        self.footer_findings: list[Finding] = []
        self._decoded: dict[int, Any] = {}
        self._decoded_ranges: dict[tuple, Any] = {}
        self._blob_findings: Optional[list[Finding]] = None
        self._summaries: list[dict[str, Any]] = []  # blob_summaries() rows computed so far, in blob order
        self._summary_by_range: dict[tuple, tuple[Optional[int], str]] = {}
        self._region_trees: dict[bool, Region] = {}  # regions(decode), built once each
        #: ``puffin``, or what the file is instead: ``bare-dv``, ``delta-dv-file`` (see ``format.container``).
        self.container = container.PUFFIN
        self._other: Any = None
        self._weak_self = weakref.ref(self)  # what the blob entries refer to the file by
        self._open_args = (self.source, strict, max_footer_size, max_blob_size)  # to open it again from an entry
        self._read_footer(max(MIN_FOOTER, tail_size))
        if strict:
            # Strict opening checks the whole file, blobs included: a DV failing its CRC raises here.
            self._raise_first(self.footer_findings)
            self._raise_first(self.findings)

    def _sniff_other(self, tail_start: int, tail: bytes) -> bool:
        """A DV outside any Puffin container (a bare blob, a Delta DV file): name it and decode it."""
        head = tail[:container.HEAD] if tail_start == 0 else self.source.read(0, container.HEAD)
        kind = container.sniff(head, self.size)
        if kind not in (container.BARE_DV, container.DELTA_DV_FILE):
            return False
        self.container = kind
        if kind == container.BARE_DV:
            from .dv import DeletionVector

            if self.size > self.max_blob_size:
                return False
            dv = self._other = DeletionVector.from_bytes(self.source.read(0, self.size), 0)
            self._add("file.bare-dv", Severity.ERROR, 0,
                      f"a bare deletion-vector blob, not a Puffin file: {dv.summary()}",
                      "DuckDB 1.5.3 wrote DVs like this; read it as a DV (read_dv, offset 0) or from the "
                      "manifest's content_offset", self.size)
        else:
            reader = container.OTHER_READERS.get(kind)
            if reader is None:  # nothing registered reads it (the package's Delta layer not imported)
                return False
            f = self._other = reader(self.source)
            self._add("file.delta-dv", Severity.ERROR, 0,
                      f"a Delta deletion-vector file, not a Puffin file: {f.summary()}",
                      "open it with puffin_explorer.DeltaDVFile; Delta UniForm tables point Iceberg DV entries "
                      "into such files", self.size)
        return True

    @property
    def bare_dv(self):
        """The DeletionVector when the file is a bare DV blob (``container == "bare-dv"``), else None."""
        return self._other if self.container == container.BARE_DV else None

    @property
    def delta_file(self):
        """The DeltaDVFile when the file is a Delta DV file (``container == "delta-dv-file"``), else None."""
        return self._other if self.container == container.DELTA_DV_FILE else None

    # ------------------------------------------------------------------ blobs
    def read_stored(self, blob: BlobMetadata) -> bytes:
        """The blob's stored bytes (one range read)."""
        if not blob.readable:
            raise InvalidFileError(f"blob {blob.index} has no valid offset/length", blob.offset,
                                   "blob.out-of-bounds")
        if blob.length > self.max_blob_size:
            raise BlobDecodeError(f"blob {blob.index} is {plural(blob.length, 'byte')}, above the "
                                  f"{self.max_blob_size:,}-byte limit (open with a larger max_blob_size)",
                                  blob.offset, "blob.decompress")
        return self.source.read(blob.offset, blob.length)

    def read_blob(self, blob: BlobMetadata) -> bytes:
        """The blob's bytes, decompressed (bounded by ``max_blob_size``)."""
        data = self.read_stored(blob)
        try:
            return codecs.decompress(data, blob.compression_codec, self.max_blob_size)
        except PuffinError as exc:
            raise BlobDecodeError(f"blob {blob.index}: {exc}", blob.offset, exc.code or "blob.decompress") from exc

    def read_dv(self, offset: int, length: int, strict: Optional[bool] = None,
                referenced_data_file: Optional[str] = None):
        """One deletion vector of this file by its manifest ``content_offset`` / ``content_size_in_bytes``:
        exactly ``length`` bytes read through this file's source (no footer lookup, no new resolution of the
        location; bytes this file already holds are not read again). :func:`read_dv` of the open file."""
        return read_dv(self.source, offset, length, strict=self.strict if strict is None else strict,
                       referenced_data_file=referenced_data_file)

    def decode_blob(self, blob: BlobMetadata, strict: Optional[bool] = None):
        """Decode a blob by its type (cached); ``strict`` (default: the file's) raises its first error."""
        decoded = self._decoded.get(blob.index)
        if decoded is None:
            # Footer entries that name the same bytes (thousands of them, in a damaged or hostile footer) share
            # one decoded object (its metadata is the first such entry's): the work follows the bytes in the
            # file, not the number of entries.
            key = (blob.offset, blob.length, blob.compression_codec, blob.type)
            shared = self._decoded_ranges.get(key)
            if isinstance(shared, PuffinError):
                raise copy.copy(shared)  # a fresh exception each time: one raised object's traceback would grow
            if shared is not None:
                # the same object for every entry naming these bytes (invalid in itself, and reported as
                # overlapping blobs): whatever it computes -- findings, positions, regions -- is computed once
                decoded = shared
            else:
                try:
                    data = self.read_blob(blob)
                except PuffinError as exc:
                    self._decoded_ranges[key] = copy.copy(exc)  # kept without its traceback (and the frames it holds)
                    raise
                space = "file" if blob.compression_codec is None else f"blob {blob.index} decompressed"
                offset = blob.offset if blob.compression_codec is None else 0
                decoded = decoder_for(blob.type).decode(data, offset, blob._detached(), space)
                self._decoded_ranges[key] = decoded
            self._decoded[blob.index] = decoded
        if self.strict if strict is None else strict:
            self._raise_first(decoded.findings)
        return decoded

    # ------------------------------------------------------------------ validation
    @property
    def findings(self) -> list[Finding]:
        """Every problem in the file: footer, leading magic, and each blob decoded and checked."""
        if self._blob_findings is None:
            self._blob_findings = self._validate_content()
            found = sorted(self.footer_findings + self._blob_findings, key=_file_order)
            capped = cap_per_code(found)  # in file order: the first of each code are kept
            self._sorted_findings = found if capped is found else sorted(capped, key=_file_order)
        return FindingList(self._sorted_findings)  # sorted once; each caller gets its own list

    @property
    def is_valid(self) -> bool:
        """No error-level findings (warnings allowed)."""
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def validate(self) -> list[Finding]:
        """Run every check and return the findings; with ``strict=True`` raise the first error."""
        found = self.findings
        if self.strict:
            self._raise_first(found)
        return found

    @gc_paused()
    def _validate_content(self) -> list[Finding]:
        out: list[Finding] = []
        if self._other is not None:
            return list(self._other.findings)
        if self.size >= 4:
            head = self.source.read(0, 4)
            if head != MAGIC:
                out.append(Finding("magic.header", Severity.ERROR, 0,
                                   f"the file starts with {head.hex(' ')}, not the magic 50 46 41 31 (PFA1)",
                                   "this is not a Puffin file, or its start was overwritten"))
        anchor = self.footer.payload_offset if self.footer else 0
        readable = [b for b in self.blobs if b.readable]
        if readable and self.footer is not None:
            start = min(b.offset for b in readable)
            span = max(b.end for b in readable) - start
            if span <= PREFETCH_LIMIT:  # one request for all blobs instead of one per blob
                self.source.prefetch(start, span)
        self._validate_dvs_together()
        reported: set = set()  # the bytes' own findings once per range, however many entries name it
        for blob in self.blobs:
            if not blob.readable:
                continue
            dec = decoder_for(blob.type)
            if blob.compression_codec not in (None, *codecs.KNOWN_CODECS) or _opaque_and_large(blob):
                continue
            key = (blob.offset, blob.length, blob.compression_codec, blob.type)
            try:
                decoded = self.decode_blob(blob, strict=False)
            except PuffinError as exc:
                if key not in reported:
                    reported.add(key)
                    out.append(Finding(exc.code or "blob.decompress", Severity.ERROR, blob.offset,
                                       f"blob {blob.index}: cannot be read: {exc}", length=blob.length))
                continue
            if key not in reported:
                reported.add(key)
                out.extend(decoded.findings)
            if dec.check is not None:
                out.extend(dec.check(decoded, blob, anchor))
        return out

    def _validate_dvs_together(self) -> None:
        """Files of many small DVs: check the common shape of all of them in one pass (see
        :func:`~puffin_explorer.format.dv.validate_many`) before the per-blob checks, which then
        find them done."""
        from .dv_shape import BLOB_TYPE as DV_TYPE
        from .dv import DeletionVector, validate_many

        first: dict[tuple, BlobMetadata] = {}  # one entry per range: entries naming the same bytes share it
        for b in self.blobs:
            if b.readable and b.type == DV_TYPE and b.compression_codec is None:
                first.setdefault((b.offset, b.length, b.compression_codec, b.type), b)
        blobs = list(first.values())
        if len(blobs) < 2:
            return
        dvs = []
        for blob in blobs:
            try:
                decoded = self.decode_blob(blob, strict=False)
            except PuffinError:
                continue  # the per-blob loop reports it
            if isinstance(decoded, DeletionVector):
                dvs.append(decoded)
        validate_many(dvs)

    @staticmethod
    def _raise_first(findings: list[Finding]) -> None:
        for f in findings:
            if f.severity is Severity.ERROR:
                raise InvalidFileError.from_finding(f)

    # ------------------------------------------------------------------ regions
    def regions(self, decode: bool = True) -> Region:
        """The file as a tree of byte regions; with ``decode`` blobs are opened to their fields
        (built once per file and kind: treat the tree as read-only)."""
        tree = self._region_trees.get(decode)
        if tree is None:
            tree = self._region_trees[decode] = self._build_regions(decode)
        return tree

    @gc_paused()
    def _build_regions(self, decode: bool) -> Region:
        size = self.size
        children: list[Region] = []
        if size >= 4:
            children.append(Region("magic", "magic", 0, 4, value="PFA1"))
        elif size:
            children.append(Region("truncated magic", "unparsed", 0, size))
        if self._other is not None:
            inner = self._other.regions()
            children = inner.children if isinstance(inner, Region) else [
                Region(f"bare DV blob ({plural(self._other.cardinality, 'position')})", "blob", 0, size, inner,
                       value=0)]
            return Region(self.location, "file", 0, size, children)
        if self.footer is None:
            if size > 4:
                children.append(Region("unparsed (no valid footer)", "unparsed", 4, size - 4))
            return Region(self.location, "file", 0, size, children)
        spans = []
        for b in self.blobs:
            if not b.readable:
                continue
            spans.append(self._blob_region(b, decode))
        spans.sort(key=lambda r: r.offset)
        covered = 4
        for r in spans:
            if r.offset > covered:
                children.append(Region(f"unclaimed ({plural(r.offset - covered, 'byte')})", "unclaimed", covered,
                                       r.offset - covered))
            children.append(r)
            covered = max(covered, r.end)
        f = self.footer
        if f.offset > covered:
            children.append(Region(f"unclaimed ({plural(f.offset - covered, 'byte')})", "unclaimed", covered,
                                   f.offset - covered))
        payload_desc = f"{'LZ4-compressed ' if f.compressed else ''}JSON, {plural(f.payload_size, 'byte')}"
        footer_parts = [
            Region("footer magic", "magic", f.offset, 4, value="PFA1"),
            Region("footer payload", "footer-payload", f.payload_offset, f.payload_size, value=payload_desc),
            Region("payload size (int32 LE)", "footer-size", size - 12, 4, value=f.payload_size),
            Region("flags", "footer-flags", size - 8, 4,
                   value=f"{f.flags:#010x}" + (" compressed" if f.compressed else "")),
            Region("trailing magic", "magic", size - 4, 4, value="PFA1"),
        ]
        children.append(Region("footer", "footer", f.offset, size - f.offset, footer_parts))
        return Region(self.location, "file", 0, size, children)

    def _blob_region(self, b: BlobMetadata, decode: bool) -> Region:
        name = f"blob {b.index}: {_short_value(b.type)}"
        region = Region(name, "blob", b.offset, b.length, value=b.index)
        if not decode or _opaque_and_large(b):
            return region
        try:
            decoded = self.decode_blob(b, strict=False)
        except PuffinError:
            return region
        inner = decoded.regions()
        if b.compression_codec is None:
            region.children = inner
        else:
            region.children = [Region(f"{b.compression_codec} frame ({b.length:,} → "
                                      f"{plural(_decoded_size(decoded), 'byte')})", "compressed", b.offset, b.length,
                                      inner)]
        return region

    def hex(self, offset: Optional[int] = None, length: Optional[int] = None):
        """An annotated hex view coloured by region; big files are paged (head, tail, region edges)."""
        return hex_view(self.source, self.regions(), offset, length, findings=self.findings)

    # ------------------------------------------------------------------ misc
    @property
    def footer_size(self) -> Optional[int]:
        """Total footer bytes (magic + payload + 12), as Iceberg's table metadata records it."""
        return self.footer.size if self.footer else None

    @gc_paused()
    def blob_table(self):
        """The blobs as a DataFrame (footer entries, nothing read)."""
        cols = ["index", "type", "fields", "snapshot-id", "sequence-number", "offset", "length",
                "compression-codec", "properties"]
        rows = [b.to_dict() for b in self.blobs]
        return _frame({c: [r.get(c) for r in rows] for c in cols}, cols)

    @gc_paused()
    def blob_summaries(self, limit: Optional[int] = None) -> list[dict[str, Any]]:
        """One dict per blob (the first ``limit`` blobs if given): its footer entry, decoded size and
        one-line decoded summary (each range decoded once; a blob that cannot be decoded says why in
        ``summary``)."""
        wanted = len(self.blobs) if limit is None else max(0, min(int(limit), len(self.blobs)))
        self._summarize(wanted)
        return [dict(r, fields=list(r["fields"]), properties=dict(r["properties"])) for r in self._summaries[:wanted]]

    def _summarize(self, wanted: int) -> None:
        """Compute the summary rows of the first ``wanted`` blobs (once each)."""
        if len(self._summaries) < wanted:
            if len(self.blobs) > 1:
                self.findings  # noqa: B018 - validates many small DVs together first, which decodes them cheaply
            for b in self.blobs[len(self._summaries):wanted]:
                self._summaries.append(self._summary_row(b))

    def _summary_row(self, b: BlobMetadata) -> dict[str, Any]:
        decoded_size: Optional[int] = None
        key = (b.offset, b.length, b.compression_codec, b.type)
        if not b.readable:
            summary = "not readable (bad offset/length)"
        elif key in self._summary_by_range:  # entries naming the same bytes: one summary
            decoded_size, summary = self._summary_by_range[key]
        else:
            try:
                dec = b.decode()
                decoded_size = int(getattr(dec, "nbytes", _decoded_size(dec)))
                summary = dec.summary()
            except PuffinError as exc:
                summary = f"unreadable: {exc}"
            self._summary_by_range[key] = (decoded_size, summary)
        return {"index": b.index, "type": b.type, "fields": list(b.fields or []),
                "snapshot-id": b.snapshot_id, "sequence-number": b.sequence_number, "offset": b.offset,
                "length": b.length, "codec": b.compression_codec or "none", "decoded size": decoded_size,
                "properties": dict(b.properties or {}), "summary": summary}

    @gc_paused()
    def to_pandas(self, names: Optional[dict[int, str]] = None):
        """The blob table with each blob's decoded size and one-line summary (blobs are decoded);
        ``names`` (field id -> column name) labels the fields."""
        self._summarize(len(self.blobs))
        rows = self._summaries
        cols = ["index", "type", "fields", "snapshot-id", "sequence-number", "offset", "length", "codec",
                "decoded size", "properties", "summary"]
        columns = {c: [r[c] for r in rows] for c in cols}  # column lists: far faster for pandas than row dicts
        columns["fields"] = ["[" + ", ".join(f"{f} {names[f]}" if names and f in names else str(f)
                                             for f in fields) + "]" for fields in columns["fields"]]
        columns["properties"] = ["; ".join(f"{k}={v}" for k, v in props.items()) for props in columns["properties"]]
        return _frame(columns, cols)

    @gc_paused()
    def to_dict(self, decode: bool = False) -> dict[str, Any]:
        """A JSON-able summary: properties, blobs (with decoded summaries when ``decode``), findings."""
        blobs = []
        by_range: dict[tuple, dict[str, Any]] = {}
        for b in self.blobs:
            d = b.to_dict()
            if decode and b.readable:
                key = (b.offset, b.length, b.compression_codec, b.type)
                facts = by_range.get(key)
                if facts is None:  # entries naming the same bytes share what their decode says
                    try:
                        dec = b.decode()
                        facts = {"summary": dec.summary(), **_decoded_facts(dec)}
                    except PuffinError as exc:
                        facts = {"summary": f"unreadable: {exc}"}
                    by_range[key] = facts
                d.update(facts)
            blobs.append(d)
        out = {"location": self.location, "size": self.size, "properties": self.properties,
               "footer_size": self.footer_size,
               "footer_compressed": bool(self.footer and self.footer.compressed), "blobs": blobs}
        if decode:
            out["findings"] = [f.to_dict() for f in self.findings]
            out["valid"] = self.is_valid
        return out

    def __repr__(self) -> str:
        return f"PuffinFile({self.location!r}, size={self.size}, blobs={len(self.blobs)})"


def _file_order(f: Finding) -> tuple[bool, int]:
    """Findings in file space first, each space by offset (no offset first)."""
    return f.space != "file", f.offset if f.offset is not None else -1


#: Uncompressed blobs of types without a decoder above this size are not read to validate or map them:
#: their bytes hold nothing to check (a hex view of a 1 GiB file must not read 1 GiB).
OPAQUE_READ_LIMIT = 1 << 20


def _opaque_and_large(blob: BlobMetadata) -> bool:
    if blob.compression_codec is not None or not isinstance(blob.length, int) or blob.length <= OPAQUE_READ_LIMIT:
        return False
    from .raw import RawBlob

    return decoder_for(blob.type).decode is RawBlob


def _decoded_size(decoded: Any) -> int:
    for attr in ("_data", "data"):
        if hasattr(decoded, attr):
            return len(getattr(decoded, attr))
    return 0


def _decoded_facts(dec: Any) -> dict[str, Any]:
    from .dv import DeletionVector
    from .theta import ThetaSketch

    if isinstance(dec, DeletionVector):
        return {"deletedRows": dec.cardinality, "crc_ok": dec.crc_ok}
    if isinstance(dec, ThetaSketch) and dec.sketch is not None:
        return {"ndv_estimate": dec.estimate, "ndv_lower_2sd": dec.lower_bound(2),
                "ndv_upper_2sd": dec.upper_bound(2), "retained": dec.num_retained}
    return {"decoded_size": _decoded_size(dec)}


def read_dv(location: Location, offset: int, length: int, storage_options: Optional[dict[str, Any]] = None,
            strict: bool = False, referenced_data_file: Optional[str] = None):
    """Read one deletion vector by its manifest ``content_offset`` / ``content_size_in_bytes``.

    Exactly ``length`` bytes are read (no footer, no size probe).  The location's filesystem is found once per
    process (:mod:`puffin_explorer.io.resolve`): reading many DVs of one file costs no resolution after the
    first; ``PuffinFile.read_dv`` reads through an open file's source.
    """
    from .dv import DeletionVector

    if offset < 0 or length < 0:
        raise InvalidFileError(f"invalid DV range: offset {offset}, length {length}", offset, "dv.range")
    data = read_range(location, offset, length, storage_options, what="the DV")
    return DeletionVector.from_bytes(data, offset, strict=strict, referenced_data_file=referenced_data_file)


def _frame(columns: dict[str, list], order: list[str]):
    """A DataFrame of column lists; a column holding an integer beyond float range (a footer may say
    anything; pandas 2 infers such a column through float and overflows) is kept as Python objects."""
    import pandas as pd

    try:
        return pd.DataFrame(columns, columns=order)
    except OverflowError:
        return pd.DataFrame({c: pd.Series(columns[c], dtype=object) for c in order}, columns=order)
