"""Finding codes of the Parquet layout reader and the DV overlay."""

from __future__ import annotations

from ..findings import define
from ..regions import Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
LAYER = "parquet"

_CODES = [
    ("parquet.too-small", E, "the file is shorter than magic + footer length + magic (12 bytes)",
     "the file is truncated or empty", ()),
    ("parquet.magic", E, "the file does not start or end with PAR1",
     "not a Parquet file, or a write that never finished", ()),
    ("parquet.encrypted-footer", E, "the footer is encrypted (PARE) and cannot be read without the key", "", ()),
    ("parquet.footer-length", E, "the footer length does not fit in the file, or the FileMetaData ends "
     "elsewhere than it says", "the footer length field is corrupted", (W,)),
    ("parquet.footer", E, "the FileMetaData cannot be decoded",
     "the footer is corrupted, or the footer length points to the wrong place", ()),
    ("parquet.thrift-type", E, "a Thrift field has a wire type its schema does not allow; the field is ignored",
     "the struct is corrupted or written by a non-conforming writer", ()),
    ("parquet.schema", E, "the schema elements do not form a tree", "", ()),
    ("parquet.schema-type", E, "a schema element's physical, converted or repetition type is not one the "
     "format defines", "the footer is corrupted (PARQUET-1481) or written by a newer writer", ()),
    ("parquet.row-group-columns", E, "a row group's column chunks do not match the schema's columns", "", ()),
    ("parquet.row-group-rows", E, "the row groups' rows do not add up to the footer's num_rows", "", ()),
    ("parquet.column-meta", E, "a column chunk has no ColumnMetaData (encrypted or not written)", "", ()),
    ("parquet.chunk-bounds", E, "a column chunk lies outside the data area",
     "the column metadata's offsets or sizes are corrupted", ()),
    ("parquet.page-header", E, "a page header cannot be decoded or lacks required fields",
     "the chunk's offsets or sizes are wrong, or the page is corrupted", ()),
    ("parquet.page-bounds", E, "a page runs past its column chunk's end", "", ()),
    ("parquet.chunk-values", W, "the data pages hold another number of values than the column metadata says", "",
     ()),
    ("parquet.offset-index", W, "an offset index lists other pages than the chunk holds", "", ()),
    ("parquet.index-bounds", E, "a column or offset index lies outside the data area", "", ()),
    ("parquet.index", E, "a column or offset index cannot be decoded, or ends elsewhere than its length says",
     "", (W,)),
    ("parquet.bloom-filter", E, "a bloom filter lies outside the data area, cannot be decoded, or its length "
     "disagrees with its header", "", (W,)),
    ("parquet.gap", W, "bytes no metadata points to (and not known to be zero padding)",
     "left by a writer that did not reclaim space, or a page the metadata lost", ()),
    ("parquet.padding", I, "zero bytes no metadata points to: a writer's padding",
     "alignment padding or space the writer reserved; it holds no data", ()),
    ("parquet.meta-copy-differs", I, "the ColumnMetaData copy at a column chunk's file_offset differs from the "
     "footer's", "the format deprecates file_offset and warns such copies are often wrong; readers use the "
     "footer's", ()),
    ("parquet.overlap", E, "two metadata entries claim the same bytes", "one of them is wrong", ()),
    ("parquet.recovered", I, "no footer: page headers were recovered by walking from byte 4",
     "the column and row group of these pages are unknown", ()),
    ("parquet.page-limit", I, "page headers were kept up to max_pages; later chunks use their offset index", "",
     ()),
    ("parquet.page-headers-skipped", I, "page headers were not read (more than header_budget pages, all in "
     "offset indexes)", "ParquetLayout(..., pages=True) reads every page header", ()),
    ("parquet.row-group-fully-deleted", I, "a DV deletes every row of a row group",
     "rewriting the file would drop its bytes", ()),
    ("parquet.overlay-out-of-range", E, "deleted positions past the file's rows",
     "the deletion vector belongs to another data file, or this file was rewritten", ()),
    ("parquet.overlay-pages-unknown", I, "the rows of a column's pages are unknown (no offset index, repeated "
     "values, or page headers not read)", "", ()),
]

for _code, _sev, _meaning, _hint, _also in _CODES:
    define(LAYER, _code, _sev, _meaning, _hint, also=_also)
