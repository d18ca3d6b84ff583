"""Reading a Parquet file's ends: magic, footer length, FileMetaData, row groups and
column chunks, and the copies of column metadata some writers put before each chunk."""

from __future__ import annotations

import struct
from typing import Optional

from ..regions import Finding, Region, Severity
from .parts import ChunkInfo, RowGroupInfo
from .regions import struct_regions
from .schema import columns_from_schema, schema_enum_problems
from .spec import ENCRYPTED_MAGIC, MAGIC, SCHEMA
from .thrift import CompactReader, ThriftError, TStruct

TAIL_READ = 64 * 1024  # first read from the end: the footer of most files fits


class FooterReader:
    """Mixin of :class:`~puffin_explorer.parquet.layout.ParquetLayout`: the footer and what it lists."""

    def _check_types(self, ts: TStruct, context: str) -> None:
        for f in _type_findings(ts, context):
            self._add(f)

    def _parse(self, walk_pages: bool) -> None:
        top: list[Region] = []
        head = self._read_head(top)
        footer = self._read_trailer(top, head) if self.size >= 12 else None
        meta = self._read_file_metadata(top, *footer) if footer is not None else None
        if meta is not None:
            self._check_schema(meta)
            self._read_contents(top, meta, footer[0], walk_pages)
        self._finish(top)

    def _read_head(self, top: list[Region]) -> bytes:
        """The file's tail kept (one read from the end) and its leading magic: the first bytes."""
        size = self.size
        if size < 12:
            self._finding("parquet.too-small", Severity.ERROR, 0,
                          f"the file has {size} bytes; a Parquet file has at least 12 "
                          "(magic, footer length, magic)", "the file is truncated or empty")
        self._tail = self.source.tail(min(size, TAIL_READ))
        head = self._fetch(0, min(4, size))
        if head:
            top.append(Region("magic", "magic", 0, len(head), value=head))
            if head != MAGIC:
                top[-1].finding = self._finding(
                    "parquet.magic", Severity.ERROR, 0,
                    f"the file starts with {head!r}, not the Parquet magic b'PAR1'",
                    "not a Parquet file, or its first bytes were overwritten", length=len(head))
        return head

    def _read_trailer(self, top: list[Region], head: bytes) -> Optional[tuple[int, int]]:
        """The footer length and trailing magic: ``(footer start, footer length)``, or None when they do not
        locate a footer (without the trailing magic, the pages are recovered from the front when the file
        starts as Parquet)."""
        size = self.size
        trailer = self._fetch(size - 8, 8)
        (footer_len,) = struct.unpack("<I", trailer[:4])
        end_magic = trailer[4:]
        tail_ok = end_magic == MAGIC
        magic_region = Region("magic", "magic", size - 4, 4, value=end_magic)
        if end_magic == ENCRYPTED_MAGIC:
            magic_region.finding = self._finding(
                "parquet.encrypted-footer", Severity.ERROR, size - 4,
                "the file ends with b'PARE': its footer is encrypted and cannot be read "
                "without the key", length=4)
        elif not tail_ok:
            magic_region.finding = self._finding(
                "parquet.magic", Severity.ERROR, size - 4,
                f"the file ends with {end_magic!r}, not the Parquet magic b'PAR1'",
                "the file is truncated (a write that never finished) or its end was "
                "overwritten", length=4)
        if not tail_ok:
            # Without the trailing magic the last 8 bytes are not a footer length.
            if head == MAGIC:
                self._recover_pages(top)
            return None
        top.append(magic_region)
        len_region = Region("footer length", "footer-length", size - 8, 4, value=footer_len)
        top.append(len_region)
        footer_start = size - 8 - footer_len
        if footer_len == 0 or footer_start < 4:
            len_region.finding = self._finding(
                "parquet.footer-length", Severity.ERROR, size - 8,
                f"the footer length {footer_len} does not fit in the file of {size} bytes "
                f"(at most {size - 12})", "the footer length field is corrupted", length=4)
            return None
        self.footer_offset, self.footer_length = footer_start, footer_len
        return footer_start, footer_len

    def _read_file_metadata(self, top: list[Region], footer_start: int, footer_len: int) -> Optional[TStruct]:
        """The footer decoded as a FileMetaData (kept as ``metadata``, its fields as the footer region's
        children), or None when it cannot be decoded."""
        footer_bytes = self._fetch(footer_start, footer_len)
        footer_region = Region("footer (FileMetaData)", "footer", footer_start, footer_len)
        top.append(footer_region)
        try:
            meta = CompactReader(footer_bytes, footer_start, SCHEMA).read_struct("FileMetaData")
        except ThriftError as exc:
            footer_region.finding = self._finding(
                "parquet.footer", Severity.ERROR, exc.offset,
                f"cannot decode the FileMetaData: {exc.message}",
                "the footer is corrupted, or the footer length points to the wrong place")
            return None
        self.metadata = meta
        self._check_types(meta, "footer")
        footer_region.children = struct_regions(meta)
        if meta.end != footer_start + footer_len:
            self._finding("parquet.footer-length", Severity.WARNING, meta.end,
                          f"the FileMetaData ends at byte {meta.end} but the footer length "
                          f"says {footer_start + footer_len}",
                          length=footer_start + footer_len - meta.end)
        return meta

    def _check_schema(self, meta: TStruct) -> None:
        """The columns read from the schema (``columns``), and what the schema gets wrong."""
        self.columns, schema_error = columns_from_schema(meta.get("schema") or [])
        if schema_error:
            self._finding("parquet.schema", Severity.ERROR, meta.spans.get("schema", (None,))[0],
                          schema_error)
        for at, length, message in schema_enum_problems(meta.get("schema") or []):
            self._finding("parquet.schema-type", Severity.ERROR, at, message,
                          "the footer is corrupted, or a newer writer used a type this reader does not know",
                          length=length)

    def _read_contents(self, top: list[Region], meta: TStruct, footer_start: int, walk_pages) -> None:
        """What the footer lists: row groups and their chunks, the page indexes, the pages (walked when
        ``walk_pages``, or when worth it for ``"auto"``), the metadata copies, and their regions."""
        self._read_row_groups(meta, footer_start)
        self._read_page_indexes(footer_start)
        if walk_pages == "auto":
            walk_pages = self._headers_worth_reading()
        if walk_pages:
            self._prefetch_pages()
            self._walk_all()
        for rg in self.row_group_infos:
            for c in rg.chunks:
                self._assign_first_rows(c)
        self._read_metadata_copies(footer_start)
        top.extend(self._row_group_regions())
        top.extend(self._index_regions(footer_start, top))

    def _read_row_groups(self, meta: TStruct, footer_start: int) -> None:
        first_row = 0
        for i, rg in enumerate(meta.get("row_groups") or []):
            if not isinstance(rg, TStruct):
                continue
            num_rows = max(0, rg.get("num_rows", 0))
            info = RowGroupInfo(i, num_rows, first_row, rg.get("total_byte_size"),
                                rg.get("total_compressed_size"))
            first_row += num_rows
            chunks = rg.get("columns") or []
            if self.columns and len(chunks) != len(self.columns):
                self._finding("parquet.row-group-columns", Severity.ERROR, rg.offset,
                              f"row group {i} has {len(chunks)} column chunks; the schema "
                              f"has {len(self.columns)} columns")
            for j, cc in enumerate(chunks):
                if not isinstance(cc, TStruct):
                    continue
                col = self.columns[j] if j < len(self.columns) else None
                meta_data = cc.get("meta_data")
                if not isinstance(meta_data, TStruct):
                    meta_data = None
                name = col.name if col else (
                    ".".join(str(p) for p in meta_data.get("path_in_schema", []))
                    if meta_data is not None else f"column {j}")
                c = ChunkInfo(i, col, name, cc, meta_data)
                info.chunks.append(c)
                if meta_data is None:
                    self._finding("parquet.column-meta", Severity.ERROR, cc.offset,
                                  f"row group {i} column {name}: the column chunk has no "
                                  "ColumnMetaData (encrypted or not written)")
                    continue
                data_off = meta_data.get("data_page_offset")
                dict_off = meta_data.get("dictionary_page_offset")
                # The chunk starts at its dictionary page or its first data page.  Writers
                # put 0 in the one that does not exist (old writers: dictionary_page_offset
                # 0; pyarrow, for a chunk with no values: data_page_offset 0).
                offsets = [o for o in (dict_off, data_off) if isinstance(o, int) and o >= 4]
                start = min(offsets) if offsets else (data_off if isinstance(data_off, int) else 0)
                length = meta_data.get("total_compressed_size")
                length = length if isinstance(length, int) else 0
                if start < 4 or length < 0 or start + length > footer_start:
                    self._finding(
                        "parquet.chunk-bounds", Severity.ERROR, meta_data.offset,
                        f"row group {i} column {name}: the chunk [{start}, {start + length}) "
                        f"is not inside the data area [4, {footer_start})",
                        "the column metadata's offsets or sizes are corrupted")
                    start = min(max(start, 4), footer_start)
                    length = max(0, min(length, footer_start - start))
                c.start, c.length = start, length
            self.row_group_infos.append(info)
        if self.row_group_infos and first_row != meta.get("num_rows"):
            self._finding("parquet.row-group-rows", Severity.ERROR,
                          meta.spans.get("num_rows", (None,))[0],
                          f"the row groups hold {first_row} rows; the footer says "
                          f"{meta.get('num_rows')}")

    def _read_metadata_copies(self, footer_start: int) -> None:
        """Decode the ColumnMetaData copy at each chunk's ``file_offset`` when it lies after the chunk.

        The format's ``ColumnChunk.file_offset`` is where the chunk's metadata was written; Arrow
        C++, parquet-rs, Impala and Polars write a copy there, right after the pages (parquet-mr
        writes 0 or the chunk's start).  A copy counts only when it decodes as a ColumnMetaData for
        the same column, so damaged bytes still show as a gap."""
        wanted = []
        for rg in self.row_group_infos:
            for c in rg.chunks:
                fo = c.chunk.get("file_offset")
                if c.meta is None or not isinstance(fo, int) or isinstance(fo, bool):
                    continue
                if c.start + c.length <= fo < footer_start:
                    wanted.append((c, fo))
        if not wanted:
            return

        def decode(item, raw_read):
            c, fo = item
            # Arrow C++ and parquet-rs write the whole ColumnChunk there, others the ColumnMetaData.
            for name in ("ColumnChunk", "ColumnMetaData"):
                try:
                    ts = self._read_header(name, fo, footer_start, read=raw_read)
                except ThriftError:
                    continue
                meta = ts.get("meta_data") if name == "ColumnChunk" else ts
                if ts.invalid_fields() or not isinstance(meta, TStruct):
                    continue
                if meta.get("path_in_schema") == c.meta_get("path_in_schema") and \
                        meta.get("type") == c.meta_get("type"):
                    return ts
            return None

        found = self._map_reads(decode, wanted) if len(wanted) > 1 else [decode(wanted[0], self._fetch)]
        for (c, _), ts in zip(wanted, found):
            c.meta_copy = ts
            if ts is None:
                continue
            copy = ts.get("meta_data") if ts.type_name == "ColumnChunk" else ts
            c.meta_copy_differs = differing_fields(copy, c.meta)
            if c.meta_copy_differs:
                c.meta_copy_finding = self._finding(
                    "parquet.meta-copy-differs", Severity.INFO, ts.offset,
                    f"row group {c.row_group} column {c.name}: the {ts.type_name} copy at "
                    f"file_offset {ts.offset} differs from the footer's ColumnMetaData in "
                    f"{', '.join(c.meta_copy_differs)}",
                    "the format deprecates file_offset and warns such copies are often wrong; "
                    "readers use the footer's", length=ts.length)


def differing_fields(copy: TStruct, footer: TStruct) -> list[str]:
    """Names of the fields whose decoded values differ between two ColumnMetaData, in field order."""
    a, b = copy.to_dict(), footer.to_dict()
    names = list(footer.fields) + [n for n in copy.fields if n not in footer.fields]
    return [n for n in names if a.get(n) != b.get(n)]


def _type_findings(ts: TStruct, context: str) -> list[Finding]:
    return [Finding("parquet.thrift-type", Severity.ERROR, start,
                    f"{context}: {path} has wire type {wire}, which its schema does not "
                    "allow; the field is ignored",
                    "the struct is corrupted or written by a non-conforming writer",
                    length=end - start)
            for path, start, end, wire in ts.invalid_fields()]
