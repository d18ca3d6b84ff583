"""Finding codes of the Puffin reader: container, footer, codecs, deletion vectors, Roaring, theta sketches."""

from __future__ import annotations

from ..findings import define
from ..regions import Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
LAYER = "puffin"

_CODES = [
    # container
    ("file.too-small", E, "the file is shorter than the 4-byte magic PFA1", "an empty or cut file"),
    ("footer.missing", E, "no room for a footer after the magic", "an interrupted write leaves a file like this"),
    ("magic.header", E, "the file does not start with the magic PFA1",
     "this is not a Puffin file, or its start was overwritten"),
    ("footer.magic-start", E, "the footer's start magic is not PFA1",
     "the payload size may be wrong, or bytes were inserted or removed"),
    ("footer.magic-end", E, "the file does not end with the magic PFA1: there is no footer",
     "the write was interrupted or the file was cut"),
    ("footer.payload-size-negative", E, "the footer payload size is negative", ""),
    ("footer.payload-size-beyond-file", E, "the footer payload size is larger than the file", ""),
    ("footer.too-large", E, "the footer payload is above the reader's limit",
     "open with a larger max_footer_size to read it"),
    ("footer.flags-reserved", W, "reserved footer flag bits are set",
     "a newer writer may use them; this reader ignores them"),
    ("footer.decompress", E, "the footer is flagged LZ4-compressed but does not decompress", ""),
    ("footer.utf8", E, "the footer payload is not UTF-8", ""),
    ("footer.json", E, "the footer payload is not valid JSON (or nests deeper, or holds larger numbers, "
     "than a reader can take)", "the footer was cut, overwritten, or written by a broken writer"),
    ("footer.schema", E, "the footer JSON is not an object with a 'blobs' list and 'properties' object", ""),
    ("footer.blob-field", E, "a blob entry misses a required field or has one of the wrong type", ""),
    ("footer.property-type", W, "a property value is not a string", "the spec says properties are strings"),
    ("blob.out-of-bounds", E, "a blob lies outside the data area (before byte 4, past the footer or the file)", ""),
    ("blob.overlap", E, "two blobs share bytes", ""),
    ("layout.unclaimed", W, "bytes between the magic and the footer that no blob claims",
     "left over from a rewrite, or a blob missing from the footer"),
    ("blob.unknown-codec", E, "a compression codec other than lz4 or zstd", "the spec knows only lz4 and zstd"),
    ("blob.decompress", E, "a compressed blob does not decompress, or would exceed the output cap "
     "(sizes are checked before allocating)", "the blob was cut or written with another codec"),
    ("file.bare-dv", E, "a bare deletion-vector blob, not a Puffin file (no magic, no footer); the DV is decoded",
     "DuckDB 1.5.3 wrote DVs like this; readers that open the file as Puffin fail, readers that seek to the "
     "manifest's content_offset read it"),
    ("file.delta-dv", E, "a Delta deletion-vector file, not a Puffin file; its DVs are decoded",
     "open it with DeltaDVFile; Delta UniForm tables point Iceberg DV entries into such files"),
    ("file.unreadable", E, "the file cannot be opened or read (missing, no access, storage error)", ""),
    ("findings.capped", I, "the file repeats one problem more than 1,000 times: the first 1,000 are listed, "
     "this finding counts the rest", "the same problem repeated this often usually means a damaged or hostile "
     "footer"),
    ("blob.decode", E, "a blob's decoder failed on its bytes", "report the file: decoders should record findings"),
    # deletion vectors: footer entry
    ("dv.codec", E, "a DV blob is compressed; the spec says DVs are stored uncompressed", ""),
    ("dv.snapshot-id", E, "a DV blob's snapshot-id is not -1", "the spec requires -1 for DV blobs"),
    ("dv.sequence-number", E, "a DV blob's sequence-number is not -1", "the spec requires -1 for DV blobs"),
    ("dv.fields", W, "a DV blob's fields are not [2147483645] (the row position field)", ""),
    ("dv.referenced-data-file", E, "a DV blob has no referenced-data-file property", ""),
    ("dv.cardinality-missing", E, "a DV blob has no cardinality property", ""),
    ("dv.cardinality-invalid", E, "a DV blob's cardinality property is not a non-negative integer", ""),
    ("dv.cardinality-mismatch", E, "a DV blob's cardinality property disagrees with the vector", ""),
    # deletion vectors: framing
    ("dv.truncated", E, "a DV is shorter than its fixed framing (20 bytes)", ""),
    ("dv.length-prefix", E, "the DV's length prefix disagrees with the blob length",
     "the blob's length in the footer and the DV's own length prefix disagree"),
    ("dv.magic", E, "the DV magic is not D1 D3 39 64", ""),
    ("dv.crc", E, "the CRC-32 over magic + vector does not match", "the vector's bytes were changed or cut"),
    ("dv.bucket-count", E, "the bucket count of the 64-bit bitmap cannot be right", ""),
    ("dv.read", E, "a DV's bytes cannot be read from storage", ""),
    ("dv.range", E, "a DV was asked for with a negative offset or length", ""),
    ("dv.positions-limit", E, "the vector claims more positions than its bytes can hold (malformed run "
     "containers); positions were not expanded", "the vector is damaged: run containers overlap or overflow"),
    # Roaring
    ("roaring.cookie", E, "a 32-bit bitmap's cookie is neither 12346 nor 12347", ""),
    ("roaring.truncated", E, "a bitmap ends before the structure it declares", ""),
    ("roaring.container-count", E, "a bitmap declares more containers than possible", ""),
    ("roaring.keys-order", E, "container or bucket keys are not strictly increasing", ""),
    ("roaring.key-range", E, "a bucket key above 2^31-1, which Iceberg Java cannot read", ""),
    ("roaring.container", E, "a container's payload is malformed (unsorted array, overlapping runs, "
     "wrong cardinality)", ""),
    ("roaring.offset-header", W, "a bitmap's offset header disagrees with where its containers are", ""),
    ("roaring.trailing-bytes", E, "bytes after the last bucket of the vector", ""),
    # theta sketches
    ("theta.truncated", E, "a theta sketch is shorter than its preamble or hash array", ""),
    ("theta.family", E, "a sketch family other than 3 (compact theta)", ""),
    ("theta.invalid", E, "datasketches cannot read the sketch", ""),
    ("theta.seed-hash", E, "the sketch was built with another seed",
     "Iceberg (and this reader) cannot use it"),
    ("theta.theta-range", E, "theta is zero or below with hashes retained: the estimate is not finite", ""),
    ("theta.trailing-bytes", W, "bytes after a theta sketch's hash array", ""),
    ("theta.ndv-invalid", W, "the blob's ndv property is not a non-negative decimal integer", ""),
    ("theta.ndv-mismatch", W, "the ndv property is not the sketch's truncated estimate",
     "the property was computed from another sketch or rounded differently"),
]

for _code, _sev, _meaning, _hint in _CODES:
    define(LAYER, _code, _sev, _meaning, _hint)
