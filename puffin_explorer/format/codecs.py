"""Blob and footer compression codecs: none, zstd and lz4 (single frames).

Decompression is bounded and streamed: the output may not exceed a cap derived
from the compressed size (no codec expands data more than ``_MAX_RATIO`` times;
a frame that declares its content size is held to it) and never the absolute
``max_output`` (:data:`DEFAULT_MAX_OUTPUT`, 256 MiB, unless the caller passes
more).  Output is produced in ``_CHUNK`` pieces, so memory follows the bytes a
frame really holds, not a size it claims.
"""

from __future__ import annotations

from typing import Optional

from .._text import plural
from ..errors import BlobDecodeError, UnsupportedCodecError
from ..regions import clip

KNOWN_CODECS = ("zstd", "lz4")

#: Default ceiling on one decompressed blob or footer (bytes); ``PuffinFile(..., max_blob_size=...)`` raises it.
DEFAULT_MAX_OUTPUT = 256 << 20
#: No frame expands data more than this many times (lz4 tops out near 255×, zstd near 32,000×).
_MAX_RATIO = {"lz4": 256, "zstd": 1 << 15}
#: Decompressed bytes produced per step.
_CHUNK = 1 << 20


def output_cap(compressed_length: int, max_output: int = DEFAULT_MAX_OUTPUT, codec: str = "zstd") -> int:
    """The largest output we accept for ``compressed_length`` compressed bytes of ``codec``."""
    return min(max_output, max(1 << 16, compressed_length * _MAX_RATIO.get(codec, 1 << 15)))


def normalize_codec(codec: Optional[str]) -> Optional[str]:
    """``None`` for uncompressed; the codec name otherwise (case kept)."""
    if codec is None or codec == "" or codec == "none":
        return None
    return codec


def compress(data: bytes, codec: Optional[str], level: Optional[int] = None) -> bytes:
    """Compress ``data`` as one frame with the content size present."""
    codec = normalize_codec(codec)
    if codec is None:
        return bytes(data)
    if codec == "zstd":
        import zstandard

        # Iceberg Java's frames carry a content checksum; this matches them byte for byte.
        cctx = zstandard.ZstdCompressor(level=3 if level is None else level, write_checksum=True,
                                        write_content_size=True)
        return cctx.compress(data)
    if codec == "lz4":
        import lz4.frame

        return lz4.frame.compress(data, compression_level=level or 0, store_size=True,
                                  content_checksum=False)
    raise UnsupportedCodecError(f"unknown compression codec {clip(codec)}", code="blob.unknown-codec")


def decompress(data: bytes, codec: Optional[str], max_output: int = DEFAULT_MAX_OUTPUT) -> bytes:
    """Decompress one frame; raise :class:`BlobDecodeError` with a clear reason on failure."""
    codec = normalize_codec(codec)
    if codec is None:
        return bytes(data)
    cap = output_cap(len(data), max_output, codec)
    if codec == "zstd":
        return _zstd(data, cap)
    if codec == "lz4":
        return _lz4(data, cap)
    raise UnsupportedCodecError(f"unknown compression codec {clip(codec)}", code="blob.unknown-codec")


def _zstd(data: bytes, cap: int) -> bytes:
    import zstandard

    try:
        params = zstandard.get_frame_parameters(data)
    except zstandard.ZstdError as exc:
        raise BlobDecodeError(f"not a zstd frame: {exc}", code="blob.decompress") from exc
    if params.content_size not in (zstandard.CONTENTSIZE_UNKNOWN, zstandard.CONTENTSIZE_ERROR) \
            and params.content_size > cap:
        raise BlobDecodeError(
            f"zstd frame declares {plural(params.content_size, 'byte')}, more than the {plural(cap, 'byte')} allowed",
            code="blob.decompress")
    declared = params.content_size
    if declared not in (zstandard.CONTENTSIZE_UNKNOWN, zstandard.CONTENTSIZE_ERROR):
        cap = min(cap, declared)
    dctx = zstandard.ZstdDecompressor()
    parts: list[bytes] = []
    total = 0
    try:
        reader = dctx.stream_reader(data, read_across_frames=False)
        while total <= cap:
            part = reader.read(min(_CHUNK, cap + 1 - total))
            if not part:
                break
            parts.append(part)
            total += len(part)
    except zstandard.ZstdError as exc:
        raise BlobDecodeError(f"zstd decompression failed: {exc}", code="blob.decompress") from exc
    if total > cap:
        raise BlobDecodeError(f"zstd output exceeds the {plural(cap, 'byte')} allowed", code="blob.decompress")
    out = b"".join(parts)
    if params.content_size not in (zstandard.CONTENTSIZE_UNKNOWN, zstandard.CONTENTSIZE_ERROR) \
            and len(out) != params.content_size:
        raise BlobDecodeError(
            f"zstd frame declares {plural(params.content_size, 'byte')} but holds {len(out):,} (truncated?)",
            code="blob.decompress")
    return out


def _lz4(data: bytes, cap: int) -> bytes:
    import lz4.frame

    try:
        info = lz4.frame.get_frame_info(data)
    except RuntimeError as exc:
        raise BlobDecodeError(f"not an lz4 frame: {exc}", code="blob.decompress") from exc
    declared = info.get("content_size") or 0
    if declared > cap:
        raise BlobDecodeError(
            f"lz4 frame declares {plural(declared, 'byte')}, more than the {plural(cap, 'byte')} allowed",
            code="blob.decompress")
    if declared:
        cap = min(cap, declared)
    dec = lz4.frame.LZ4FrameDecompressor()
    parts: list[bytes] = []
    total = 0
    pending = data
    try:
        while total <= cap and not dec.eof:
            part = dec.decompress(pending, max_length=min(_CHUNK, cap + 1 - total))
            pending = b""
            parts.append(part)
            total += len(part)
            if not part:
                break  # no progress: the frame ends before its end mark (checked below)
    except RuntimeError as exc:
        raise BlobDecodeError(f"lz4 decompression failed: {exc}", code="blob.decompress") from exc
    if total > cap:
        raise BlobDecodeError(f"lz4 output exceeds the {plural(cap, 'byte')} allowed", code="blob.decompress")
    out = b"".join(parts)
    if not dec.eof:
        raise BlobDecodeError("lz4 frame is truncated (no end mark)", code="blob.decompress")
    if declared and len(out) != declared:
        raise BlobDecodeError(f"lz4 frame declares {plural(declared, 'byte')} but holds {len(out):,}",
                              code="blob.decompress")
    return out
