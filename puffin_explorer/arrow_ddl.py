"""Spark DDL schema strings (``"name string, n bigint"``) as pyarrow schemas: the one spelling of a relation that
both pyarrow (on the driver, with DuckDB) and Spark read.  Only the types this package's schemas use."""

from __future__ import annotations


def arrow_schema(ddl: str):
    """The pyarrow schema of a DDL string (``string``, ``bigint``, ``int``, ``double``, ``boolean``, ``binary``,
    arrays of string / int / bigint, ``map<string,string>``)."""
    import pyarrow as pa

    simple = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32(), "double": pa.float64(),
              "boolean": pa.bool_(), "array<string>": pa.list_(pa.string()), "array<int>": pa.list_(pa.int32()),
              "array<bigint>": pa.list_(pa.int64()),
              "map<string,string>": pa.map_(pa.string(), pa.string()), "binary": pa.binary()}
    fields = []
    for part in ddl.split(", "):
        name, typ = part.split(" ", 1)
        fields.append(pa.field(name, simple[typ]))
    return pa.schema(fields)
