"""Z85 (ZeroMQ RFC 32), the Base85 variant Delta Lake uses for DV paths and inline DVs."""

from __future__ import annotations

import uuid

from .._text import plural

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_INDEX = {c: i for i, c in enumerate(ALPHABET)}
#: Characters of a z85-encoded UUID (16 bytes).
UUID_CHARS = 20


class Z85Error(ValueError):
    """A string that is not valid Z85; ``position`` is the offending character's index."""

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.position = position


def decode(text: str) -> bytes:
    """Z85 text (a multiple of 5 characters) → bytes (4 per 5 characters)."""
    if len(text) % 5:
        raise Z85Error(f"Z85 text has {plural(len(text), 'character', sep='')}, not a multiple of 5", len(text))
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for j, ch in enumerate(text[i:i + 5]):
            digit = _INDEX.get(ch)
            if digit is None:
                raise Z85Error(f"{ch!r} at character {i + j} is not a Z85 character", i + j)
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise Z85Error(f"characters {i}..{i + 4} encode {value:,}, above 2^32-1", i)
        out += value.to_bytes(4, "big")
    return bytes(out)


def encode(data: bytes) -> str:
    """Bytes → Z85; the input is zero-padded to a multiple of 4 bytes (as Delta does for inline DVs)."""
    data = bytes(data) + b"\0" * (-len(data) % 4)
    chars = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i:i + 4], "big")
        block = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            block.append(ALPHABET[digit])
        chars.extend(reversed(block))
    return "".join(chars)


def decode_uuid(text: str) -> uuid.UUID:
    """The UUID of a 20-character Z85 string."""
    if len(text) != UUID_CHARS:
        raise Z85Error(f"a Z85 UUID has {UUID_CHARS} characters, this one {len(text)}", 0)
    return uuid.UUID(bytes=decode(text))


def encode_uuid(value: uuid.UUID) -> str:
    """The 20-character Z85 string of a UUID (how Delta names a DV file in its descriptor)."""
    return encode(value.bytes)
