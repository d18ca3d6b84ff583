"""A small reader for the Thrift compact protocol, the encoding of Parquet metadata.

Parquet's footer (``FileMetaData``), page headers, column and offset indexes and
bloom filter headers are Thrift structs in the compact protocol.  This reader
decodes them generically, driven by the wire types, and records where each field
lives so every decoded value can become a byte region.

Wire format (Thrift compact protocol):

* a field header is one byte: the high nibble is the field-id delta from the
  previous field (1..15), or 0 followed by the field id as a zigzag varint;
  the low nibble is the wire type;
* integers are zigzag varints, doubles are 8 bytes little-endian, binary is a
  varint length then the bytes; booleans live in the field header's type nibble
  (1 = true, 2 = false) and take one byte each inside lists;
* a list header is one byte: the size in the high nibble (15 means a varint size
  follows) and the element type in the low nibble; a map is a varint size then,
  when non-empty, one byte of key and value types; a struct ends with a 0 byte.
"""

from __future__ import annotations

import struct as _struct
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

# Wire types of the compact protocol.
STOP = 0
BOOL_TRUE = 1
BOOL_FALSE = 2
BYTE = 3
I16 = 4
I32 = 5
I64 = 6
DOUBLE = 7
BINARY = 8
LIST = 9
SET = 10
MAP = 11
STRUCT = 12

WIRE_TYPE_NAMES = {
    BOOL_TRUE: "bool", BOOL_FALSE: "bool", BYTE: "i8", I16: "i16", I32: "i32", I64: "i64",
    DOUBLE: "double", BINARY: "binary", LIST: "list", SET: "set", MAP: "map", STRUCT: "struct",
}

MAX_DEPTH = 64


class ThriftError(Exception):
    """The bytes are not a valid compact-protocol struct.

    ``offset`` is the absolute byte offset where decoding failed;
    ``truncated`` is true when the bytes simply ran out (more bytes may fix it).
    """

    def __init__(self, message: str, offset: int, truncated: bool = False) -> None:
        self.message = message
        self.offset = offset
        self.truncated = truncated
        super().__init__(f"{message} (at byte {offset})")


@dataclass
class TStruct:
    """A decoded struct: field values by name and the byte span of each field.

    ``spans[name]`` is ``(start, end)`` in absolute offsets, from the field
    header to the end of the value.  ``offset``/``end`` cover the whole struct
    including its stop byte.
    """

    type_name: str
    offset: int
    end: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    # fields whose wire type contradicts the schema: name -> (start, end, wire type name);
    # they are left out of ``fields`` so every present field has its schema's type
    invalid: dict[str, tuple[int, int, str]] = field(default_factory=dict)

    @property
    def length(self) -> int:
        return self.end - self.offset

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self.fields

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    def invalid_fields(self) -> list[tuple[str, int, int, str]]:
        """``(path, start, end, wire type)`` of every ill-typed field here and in nested structs."""
        out = [(f"{self.type_name}.{name}", a, b, w) for name, (a, b, w) in self.invalid.items()]
        for value in self.fields.values():
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, TStruct):
                    out.extend(item.invalid_fields())
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists (structs converted recursively)."""
        return {k: _plain(v) for k, v in self.fields.items()}

    def __repr__(self) -> str:
        return f"TStruct({self.type_name}, [{self.offset}, {self.end}), {list(self.fields)})"


def _plain(value: Any) -> Any:
    if isinstance(value, TStruct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# A schema maps a struct name to {field id: (field name, type spec)}.  A type
# spec is "string" (binary decoded as UTF-8), the name of another struct in the
# schema, "list:<spec>", or anything else (decoded by wire type alone).
Schema = Mapping[str, Mapping[int, tuple[str, str]]]


_INT_TYPES = (BYTE, I16, I32, I64)


def conforms(spec: str, wire_type: int, schema: Schema) -> bool:
    """Whether a value of ``wire_type`` can be the schema's ``spec``."""
    if spec in ("i8", "i16", "i32", "i64"):
        return wire_type in _INT_TYPES
    if spec == "bool":
        return wire_type in (BOOL_TRUE, BOOL_FALSE)
    if spec in ("binary", "string"):
        return wire_type == BINARY
    if spec == "double":
        return wire_type == DOUBLE
    if spec.startswith("list:"):
        return wire_type in (LIST, SET)
    if spec in schema:
        return wire_type == STRUCT
    return True


class _BadElements(Exception):
    pass


class CompactReader:
    """Decode compact-protocol values from ``data``, which starts at absolute ``base``."""

    def __init__(self, data: bytes, base: int = 0, schema: Optional[Schema] = None) -> None:
        self.data = data
        self.base = base
        self.pos = 0
        self.schema = schema or {}

    # -- primitives ---------------------------------------------------------
    @property
    def offset(self) -> int:
        """Absolute offset of the next byte."""
        return self.base + self.pos

    def _need(self, n: int, what: str) -> None:
        if self.pos + n > len(self.data):
            raise ThriftError(f"{what} runs past the end of the available bytes", self.offset,
                              truncated=True)

    def read_byte(self) -> int:
        self._need(1, "byte")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def read_varint(self) -> int:
        start = self.offset
        result = 0
        shift = 0
        while True:
            if self.pos >= len(self.data):
                raise ThriftError("varint runs past the end of the available bytes", start,
                                  truncated=True)
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift >= 70:
                raise ThriftError("varint longer than 10 bytes", start)

    def read_zigzag(self) -> int:
        n = self.read_varint()
        return (n >> 1) ^ -(n & 1)

    def read_double(self) -> float:
        self._need(8, "double")
        (v,) = _struct.unpack_from("<d", self.data, self.pos)
        self.pos += 8
        return v

    def read_binary(self) -> bytes:
        start = self.offset
        n = self.read_varint()
        if n > len(self.data) - self.pos:
            raise ThriftError(f"binary of {n} bytes runs past the end of the available bytes",
                              start, truncated=True)
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(v)

    # -- values -------------------------------------------------------------
    def read_value(self, wire_type: int, spec: str = "", depth: int = 0) -> Any:
        if wire_type == BOOL_TRUE:
            return True
        if wire_type == BOOL_FALSE:
            return False
        if wire_type == BYTE:
            b = self.read_byte()
            return b - 256 if b > 127 else b
        if wire_type in (I16, I32, I64):
            return self.read_zigzag()
        if wire_type == DOUBLE:
            return self.read_double()
        if wire_type == BINARY:
            raw = self.read_binary()
            return raw.decode("utf-8", "replace") if spec == "string" else raw
        if wire_type in (LIST, SET, MAP) and depth >= MAX_DEPTH:
            # Lists of lists nest like structs: bound both, or a crafted footer exhausts the stack.
            raise ThriftError(f"lists nested deeper than {MAX_DEPTH}", self.offset)
        if wire_type in (LIST, SET):
            return self.read_list(spec[5:] if spec.startswith("list:") else "", depth + 1)
        if wire_type == MAP:
            return self.read_map(depth + 1)
        if wire_type == STRUCT:
            return self.read_struct(spec if spec in self.schema else "", depth + 1)
        raise ThriftError(f"unknown compact wire type {wire_type}", self.offset - 1)

    def _list_element(self, wire_type: int, spec: str, depth: int) -> Any:
        # Inside lists a boolean is a whole byte (1 true; 2 or 0 false).
        if wire_type in (BOOL_TRUE, BOOL_FALSE):
            at = self.offset
            b = self.read_byte()
            if b not in (0, 1, 2):
                raise ThriftError(f"boolean list element {b} is not 0, 1 or 2", at)
            return b == 1
        return self.read_value(wire_type, spec, depth)

    def read_list(self, elem_spec: str = "", depth: int = 0) -> list[Any]:
        start = self.offset
        header = self.read_byte()
        size = header >> 4
        elem_type = header & 0x0F
        if size == 15:
            size = self.read_varint()
        if elem_type not in WIRE_TYPE_NAMES:
            raise ThriftError(f"unknown list element type {elem_type}", start)
        # Every element takes at least one byte: never allocate from a size
        # the remaining bytes cannot hold.
        if size > len(self.data) - self.pos:
            raise ThriftError(f"list of {size} elements cannot fit in the "
                              f"{len(self.data) - self.pos} remaining bytes", start, truncated=True)
        items = [self._list_element(elem_type, elem_spec, depth) for _ in range(size)]
        if size and elem_spec and not conforms(elem_spec, elem_type, self.schema):
            raise _BadElements(WIRE_TYPE_NAMES[elem_type])
        return items

    def read_map(self, depth: int = 0) -> dict[Any, Any]:
        start = self.offset
        size = self.read_varint()
        if size == 0:
            return {}
        if 2 * size > len(self.data) - self.pos:
            raise ThriftError(f"map of {size} entries cannot fit in the remaining bytes", start,
                              truncated=True)
        types = self.read_byte()
        kt, vt = types >> 4, types & 0x0F
        out: dict[Any, Any] = {}
        for _ in range(size):
            k = self._list_element(kt, "", depth)
            v = self._list_element(vt, "", depth)
            out[k if not isinstance(k, (list, dict, TStruct)) else repr(k)] = v
        return out

    def read_struct(self, type_name: str = "", depth: int = 0) -> TStruct:
        """Read one struct; field names and nested struct types come from the schema."""
        if depth > MAX_DEPTH:
            raise ThriftError(f"structs nested deeper than {MAX_DEPTH}", self.offset)
        fields_spec = self.schema.get(type_name, {})
        out = TStruct(type_name or "struct", self.offset)
        last_id = 0
        while True:
            field_start = self.offset
            header = self.read_byte()
            wire_type = header & 0x0F
            if wire_type == STOP:
                if header != 0:
                    raise ThriftError(f"stop byte 0x{header:02x} has a non-zero delta", field_start)
                break
            delta = header >> 4
            field_id = last_id + delta if delta else self.read_zigzag()
            last_id = field_id
            if wire_type not in WIRE_TYPE_NAMES:
                raise ThriftError(f"field {field_id} has unknown wire type {wire_type}", field_start)
            name, spec = fields_spec.get(field_id, (f"field_{field_id}", ""))
            try:
                value = self.read_value(wire_type, spec, depth)
            except _BadElements as bad:
                # the list was read to its end; only its element type is wrong
                out.invalid[name] = (field_start, self.offset, f"list<{bad.args[0]}>")
                continue
            if not conforms(spec, wire_type, self.schema):
                out.invalid[name] = (field_start, self.offset, WIRE_TYPE_NAMES[wire_type])
                continue
            out.fields[name] = value
            out.spans[name] = (field_start, self.offset)
        out.end = self.offset
        return out


def read_struct(data: bytes, type_name: str = "", base: int = 0,
                schema: Optional[Schema] = None) -> TStruct:
    """Decode one struct at the start of ``data`` (absolute offset ``base``)."""
    return CompactReader(data, base, schema).read_struct(type_name)
