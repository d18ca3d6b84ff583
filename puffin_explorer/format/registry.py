"""Blob decoders keyed by blob type, so a new type plugs in without touching the container code.

A decoder is a callable ``(data, offset, metadata, space) -> object`` whose result
has ``findings``, ``regions()`` and ``summary()``; an optional checker
``(decoded, metadata, anchor) -> list[Finding]`` compares the decoded blob with its
footer entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import dv, theta
from .dv_shape import BLOB_TYPE as DV_TYPE
from .raw import RawBlob


@dataclass(frozen=True)
class BlobDecoder:
    blob_type: str
    decode: Callable[..., Any]
    check: Optional[Callable[..., list]] = None
    compressible: bool = True  # deletion vectors must not be compressed


_DECODERS: dict[str, BlobDecoder] = {}


def register_decoder(blob_type: str, decode: Callable[..., Any], check: Optional[Callable[..., list]] = None,
                     compressible: bool = True) -> None:
    """Register (or replace) the decoder for ``blob_type``."""
    _DECODERS[blob_type] = BlobDecoder(blob_type, decode, check, compressible)


def decoder_for(blob_type: Optional[str]) -> BlobDecoder:
    """The decoder for a type; unknown types get :class:`RawBlob`."""
    if blob_type in _DECODERS:
        return _DECODERS[blob_type]
    return BlobDecoder(blob_type or "", RawBlob)


def registered_types() -> list[str]:
    return sorted(_DECODERS)


register_decoder(DV_TYPE, dv.DeletionVector, dv.check_metadata, compressible=False)
register_decoder(theta.BLOB_TYPE, theta.ThetaSketch, theta.check_metadata)
