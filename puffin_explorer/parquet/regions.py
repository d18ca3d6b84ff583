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


#: ``padding(offset, length)``: None unless the bytes are all zero, else a note on them ("" for none).
PaddingProbe = Callable[[int, int], Optional[str]]


def check_children(parent: Region, add_finding: Callable[[Finding], None], what: str,
                   padding: Optional[PaddingProbe] = None) -> None:
    """Sort ``parent``'s children by offset; insert regions for the bytes between them and
    report gaps and overlaps.

    Bytes no child claims are a ``parquet.gap``, unless ``padding`` says they are all zero:
    zeros cannot hold a page or a Thrift struct, so they are a writer's padding
    (``parquet.padding``, info)."""
    kids = sorted(parent.children, key=lambda r: (r.offset, -r.length))
    out: list[Region] = []
    cursor = parent.offset
    for r in kids:
        if r.offset > cursor:
            gap = _unclaimed(cursor, r.offset - cursor, f"in {what}", f", before {r.name}",
                             padding)
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
        gap = _unclaimed(cursor, parent.end - cursor, f"at the end of {what}", "", padding)
        add_finding(gap.finding)
        out.append(gap)
    parent.children = out


def _unclaimed(offset: int, length: int, where: str, before: str,
               padding: Optional[PaddingProbe]) -> Region:
    """The region (and its finding) for ``length`` bytes at ``offset`` that no metadata claims."""
    note = padding(offset, length) if padding is not None else None
    if note is not None:
        note = f"; {note}" if note else ""
        region = Region("zero padding", "padding", offset, length, value=f"{length} zero bytes{note}")
        region.finding = Finding("parquet.padding", Severity.INFO, offset,
                                 f"{length} zero bytes {where}{before}, claimed by no page, index "
                                 f"or footer{note}",
                                 "padding left by the writer (alignment, or space it reserved); "
                                 "it holds no data", length=length)
        return region
    region = Region("unreferenced bytes", "unclaimed", offset, length)
    hint = ("left by a writer that did not reclaim space, or a page the footer no longer "
            "references") if before else ""
    region.finding = Finding("parquet.gap", Severity.WARNING, offset,
                             f"{length} bytes {where} that no metadata points to{before}", hint,
                             length=length)
    return region
