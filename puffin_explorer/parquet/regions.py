"""Turn decoded Thrift structs into byte regions, and check region trees for gaps and overlaps."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..regions import Finding, Region, Severity
from .spec import BOUNDARY_ORDERS, CODECS, CONVERTED_TYPES, ENCODINGS, PAGE_TYPES, REPETITIONS, TYPES
from .thrift import TStruct

# (struct, field) -> enum table, so a region shows "DATA_PAGE (0)" rather than 0.
_ENUM_FIELDS = {
    ("PageHeader", "type"): PAGE_TYPES,
    ("DataPageHeader", "encoding"): ENCODINGS,
    ("DataPageHeader", "definition_level_encoding"): ENCODINGS,
    ("DataPageHeader", "repetition_level_encoding"): ENCODINGS,
    ("DataPageHeaderV2", "encoding"): ENCODINGS,
    ("DictionaryPageHeader", "encoding"): ENCODINGS,
    ("ColumnMetaData", "type"): TYPES,
    ("ColumnMetaData", "codec"): CODECS,
    ("SchemaElement", "type"): TYPES,
    ("SchemaElement", "repetition_type"): REPETITIONS,
    ("SchemaElement", "converted_type"): CONVERTED_TYPES,
    ("PageEncodingStats", "page_type"): PAGE_TYPES,
    ("PageEncodingStats", "encoding"): ENCODINGS,
    ("ColumnIndex", "boundary_order"): BOUNDARY_ORDERS,
}
_ENUM_LISTS = {("ColumnMetaData", "encodings"): ENCODINGS}


def _shown(struct_name: str, name: str, value: Any) -> Any:
    table = _ENUM_FIELDS.get((struct_name, name))
    if table is not None and isinstance(value, int):
        return f"{table.get(value, 'UNKNOWN')} ({value})"
    table = _ENUM_LISTS.get((struct_name, name))
    if table is not None and isinstance(value, list):
        return ", ".join(table.get(v, f"UNKNOWN({v})") for v in value)
    if isinstance(value, list):
        if len(value) <= 8 and all(not isinstance(v, (TStruct, list, dict)) for v in value):
            return ", ".join(str(v) for v in value)
        return f"{len(value)} items"
    return value


def struct_regions(ts: TStruct, max_list_items: int = 10_000) -> list[Region]:
    """One region per decoded field of ``ts`` (recursively for nested structs)."""
    out = []
    for name, value in ts.fields.items():
        start, end = ts.spans[name]
        children: list[Region] = []
        shown: Any = _shown(ts.type_name, name, value)
        if isinstance(value, TStruct):
            children = struct_regions(value, max_list_items)
            shown = None
        elif isinstance(value, list) and value and isinstance(value[0], TStruct):
            for i, item in enumerate(value[:max_list_items]):
                children.append(Region(f"{name}[{i}]", "thrift-struct", item.offset, item.length,
                                       struct_regions(item, max_list_items),
                                       value=_label(item)))
        out.append(Region(name, "thrift-field", start, end - start, children, value=shown))
    return out


def _label(item: TStruct) -> Optional[str]:
    for key in ("name", "key", "path_in_schema"):
        if key in item:
            v = item[key]
            return ".".join(v) if isinstance(v, list) else str(v)
    meta = item.get("meta_data")
    if isinstance(meta, TStruct) and "path_in_schema" in meta:
        return ".".join(str(p) for p in meta["path_in_schema"])
    return None


def check_children(parent: Region, add_finding: Callable[[Finding], None], what: str) -> None:
    """Sort ``parent``'s children by offset; insert gap regions and report gaps/overlaps."""
    kids = sorted(parent.children, key=lambda r: (r.offset, -r.length))
    out: list[Region] = []
    cursor = parent.offset
    for r in kids:
        if r.offset > cursor:
            gap = Region("unreferenced bytes", "unclaimed", cursor, r.offset - cursor)
            gap.finding = Finding("parquet.gap", Severity.WARNING, cursor,
                                  f"{r.offset - cursor} bytes in {what} that no metadata "
                                  f"points to, before {r.name}",
                                  "left by a writer that did not reclaim space, or a page the "
                                  "footer no longer references", length=r.offset - cursor)
            add_finding(gap.finding)
            out.append(gap)
        elif r.offset < cursor and out:
            prev = out[-1]
            f = Finding("parquet.overlap", Severity.ERROR, r.offset,
                        f"{r.name} [{r.offset}, {r.end}) overlaps {prev.name} "
                        f"[{prev.offset}, {prev.end}) by {min(cursor, r.end) - r.offset} bytes",
                        "two metadata entries claim the same bytes: one of them is wrong",
                        length=min(cursor, r.end) - r.offset)
            if r.finding is None:
                r.finding = f
            add_finding(f)
        out.append(r)
        cursor = max(cursor, r.end)
    if cursor < parent.end and out:
        gap = Region("unreferenced bytes", "unclaimed", cursor, parent.end - cursor)
        gap.finding = Finding("parquet.gap", Severity.WARNING, cursor,
                              f"{parent.end - cursor} bytes at the end of {what} that no "
                              f"metadata points to", length=parent.end - cursor)
        add_finding(gap.finding)
        out.append(gap)
    parent.children = out
