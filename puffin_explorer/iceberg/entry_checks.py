"""The findings of a manifest's entries: column-wise checks of codes, counts, DV ranges, paths and partitions,
entries outside the read scope, and the cap of listed findings per code.

A finding is first a raw ``(code, severity, file, message, offset)`` tuple (what a Spark executor sends back
too); :func:`capped_findings` makes the index's findings of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from .._arrays import sorted_unique
from ..regions import Finding, Severity
from .index import EntryIndex
from .paths import basename

if TYPE_CHECKING:  # pragma: no cover
    from .partition_registry import PartitionRegistry
    from .source import TableSource


#: Findings of one code listed one by one; the rest are counted in one more finding.
FINDINGS_PER_CODE = 10


def _finding(code: str, severity: Severity, file: str, message: str, offset: Optional[int] = None,
             hint: str = "") -> Finding:
    from ..regions import TableFinding

    return TableFinding(code=code, severity=severity, offset=offset, message=message, hint=hint, file=file)


def capped_findings(raw: list[tuple]) -> list[Finding]:
    """Findings, at most ``FINDINGS_PER_CODE`` per code, then one that counts the rest."""
    out: list[Finding] = []
    seen: dict[str, int] = {}
    for code, sev, file, message, offset in raw:
        seen[code] = seen.get(code, 0) + 1
        if seen[code] <= FINDINGS_PER_CODE:
            out.append(_finding(code, sev, file, message, offset))
    for code, n in seen.items():
        if n > FINDINGS_PER_CODE:
            sev = next(r[1] for r in raw if r[0] == code)
            out.append(_finding(code, sev, "", f"{n - FINDINGS_PER_CODE:,} more {code} findings like the ones above"))
    return out


def short_value(value: Any) -> str:
    """A value as a finding's message shows it: its ``repr``, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_chunk(chunk, manifest: dict[str, Any], partition_specs: dict, registry: "PartitionRegistry") -> list[tuple]:
    """The findings of one manifest's entries, given the table's partition specs and its
    partition registry."""
    return list(_validate(EntryIndex(None, chunk, [manifest], registry.partitions), partition_specs, registry))


def outside_scope(source: "TableSource", chunk, manifest: dict[str, Any]) -> Iterable[tuple]:
    """``source.outside-scope`` for each entry whose ``file_path``, relocated, is outside the read scope: one
    column-wise test of the chunk (:meth:`~puffin_explorer.io.scope.ReadScope.refused`); only the refused rows
    are made findings (at most ``FINDINGS_PER_CODE``, then a count).  The I/O layer refuses to read them."""
    import numpy as np

    from ..io.scope import OUTSIDE_SCOPE
    from .paths import located_column

    scope = source.scope
    if scope is None or not chunk.num_rows or "file_path" not in chunk.column_names:
        return
    refused = scope.refused(located_column(source.mapper, chunk.column("file_path")))
    rows = np.flatnonzero(refused)
    if not len(rows):
        return
    path = manifest.get("manifest_path") or ""
    entries = chunk.column("entry").to_numpy(zero_copy_only=False) if "entry" in chunk.column_names else rows
    written = chunk.column("file_path")
    for r in rows[:FINDINGS_PER_CODE].tolist():
        loc = source.locate(written[r].as_py())
        yield (OUTSIDE_SCOPE, Severity.ERROR, path,
               f"{basename(path)} entry {int(entries[r])}: {scope.error(loc)}", None)
    for _ in range(len(rows) - FINDINGS_PER_CODE):  # counted by capped_findings
        yield OUTSIDE_SCOPE, Severity.ERROR, "", "", None


def _validate(index: EntryIndex, partition_specs: dict, registry: "PartitionRegistry") -> Iterable[tuple]:
    """Column-wise checks of the entries: codes, negative counts and sizes, DV ranges, partitions."""
    import numpy as np

    if not len(index):
        return
    t = index.table
    manifest = index.ints("manifest")
    entry = index.ints("entry")

    def where(rows) -> Iterable[tuple[str, int, int]]:
        for r in rows:
            path = index.manifests[manifest[r]].get("manifest_path") or ""
            yield path, int(entry[r]), int(r)

    def report(code: str, sev: Severity, rows, text: Callable[[int], str]) -> Iterable[tuple]:
        rows = np.flatnonzero(rows)
        for path, e, r in where(rows[:FINDINGS_PER_CODE]):
            yield code, sev, path, f"{basename(path)} entry {e}: {text(r)}", None
        for _ in range(len(rows) - FINDINGS_PER_CODE):  # counted by capped_findings
            yield code, sev, "", "", None

    status = index.ints("status", 1)
    yield from report("iceberg.entry-unknown-status", Severity.ERROR,
                      t.column("status").is_valid().to_numpy(zero_copy_only=False) & ~np.isin(status, (0, 1, 2)),
                      lambda r: f"status {status[r]} is not 0 (existing), 1 (added) or 2 (deleted)")
    content = index.ints("content", 0)
    yield from report("iceberg.entry-unknown-content", Severity.ERROR, ~np.isin(content, (0, 1, 2)),
                      lambda r: f"content {content[r]} is not 0 (data), 1 (position deletes) or 2 (equality deletes)")
    for name in ("record_count", "file_size_in_bytes", "content_offset", "content_size_in_bytes"):
        values = index.ints(name, 0)
        yield from report("iceberg.entry-negative", Severity.ERROR, values < 0,
                          lambda r, name=name, values=values: f"{name} {values[r]:,} is negative")
    for name in ("file_path", "record_count", "file_size_in_bytes"):
        yield from report("iceberg.entry-type", Severity.ERROR, t.column(name).is_null().to_numpy(zero_copy_only=False),
                          lambda r, name=name: f"required field {name} is missing")
    for name in ("file_path", "referenced_data_file"):
        yield from _control_characters(index, name, report)
    off, size, fsize = index.ints("content_offset", 0), index.ints("content_size_in_bytes", 0), \
        index.ints("file_size_in_bytes", -1)
    has = (t.column("content_offset").is_valid().to_numpy(zero_copy_only=False)
           & t.column("content_size_in_bytes").is_valid().to_numpy(zero_copy_only=False) & (fsize >= 0))
    # negative offsets and sizes are entry-negative above; the rest add up exactly in uint64 (int64 would wrap)
    has &= (off >= 0) & (size >= 0)
    end = np.where(has, off, 0).astype(np.uint64) + np.where(has, size, 0).astype(np.uint64)
    yield from report("iceberg.entry-range-beyond-file", Severity.ERROR, has & (end > fsize.astype(np.uint64)),
                      lambda r: f"content range [{int(off[r]):,}, {int(off[r]) + int(size[r]):,}) ends past "
                                f"file_size_in_bytes {int(fsize[r]):,}")
    yield from _validate_partitions(index, partition_specs, registry, manifest, entry)


def _control_characters(index: EntryIndex, name: str, report: Callable) -> Iterable[tuple]:
    """``iceberg.path-control-character`` for each entry whose path column ``name`` holds a control character
    (column-wise; the I/O layer refuses such a path, so its file is never opened)."""
    import pyarrow.compute as pc

    from ..io.locations import CONTROL_PATTERN, describe

    col = index.table.column(name)
    if not _may_hold_control_bytes(col):
        return
    hit = pc.fill_null(pc.match_substring_regex(col, CONTROL_PATTERN), False).to_numpy(zero_copy_only=False)
    if hit.any():
        values = col.to_pylist() if hit.sum() else []
        yield from report("iceberg.path-control-character", Severity.ERROR, hit,
                          lambda r: f"{name} {values[r]!r} holds the control character {describe(values[r])}; "
                                    "the file is not opened")


def _may_hold_control_bytes(column) -> bool:
    """Whether a string column's value bytes hold a byte of ``CONTROL_PATTERN`` (0x00-0x1f, 0x7f): one pass
    over its buffers, which the regex then only runs after (UTF-8 puts no such byte inside a character)."""
    import numpy as np
    import pyarrow as pa

    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        if not len(chunk):
            continue
        if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
            return True
        _, offsets, data = chunk.buffers()
        if data is None:
            continue
        ends = np.frombuffer(offsets, np.int64 if pa.types.is_large_string(chunk.type) else np.int32)
        values = np.frombuffer(data, np.uint8)[ends[chunk.offset]:ends[chunk.offset + len(chunk)]]
        if (values < 0x20).any() or (values == 0x7F).any():
            return True
    return False


def _validate_partitions(index: EntryIndex, partition_specs: dict, registry: "PartitionRegistry", manifest,
                         entry) -> Iterable[tuple]:
    """Each distinct (spec, partition record) pair once per table: field names against the spec,
    bucket values in range.  A clean pair costs a byte in ``registry.partitions_clean``; only pairs with
    findings are kept (``registry.partitions_checked``), so a table with a partition per file stays small."""
    import numpy as np

    specs = partition_specs
    seen = registry.partitions_checked
    spec_ids = index.ints("spec_id", -1)
    codes = index.ints("partition", -1)
    for spec_id in sorted_unique(spec_ids).tolist():
        rows = np.flatnonzero(spec_ids == spec_id)
        uniq, first = np.unique(codes[rows], return_index=True)
        spec = specs.get(spec_id)
        if spec is None:
            continue
        clean = registry.partitions_clean.setdefault(spec_id, bytearray())
        if len(clean) < len(index.partitions):
            clean.extend(bytes(len(index.partitions) - len(clean)))
        # views of the registry's arrays, for this chunk's codes only (never a copy of the whole registry per
        # manifest); released before the first yield, so that registering (which resizes them) may go on
        flags = np.frombuffer(clean, dtype=np.uint8)
        todo = (uniq >= 0) & (uniq < len(flags))
        todo[todo] = flags[uniq[todo]] == 0
        names = sorted(str(f.get("name")) for f in spec)
        buckets = []
        for f in spec:
            transform = str(f.get("transform", ""))
            if transform.startswith("bucket[") and transform.endswith("]") and transform[7:-1].isdigit():
                buckets.append((f.get("name"), transform, int(transform[7:-1])))
        # each set of names once (the registry numbers them): a record with the spec's names is clean unless a
        # bucket is to be checked, a value that is no record is skipped; the rest are checked one by one below
        shapes = np.frombuffer(registry.partition_shapes, dtype=np.intc)[uniq[todo]]  # the number of each one's names
        names_ok = {number: sorted(map(str, registry.shapes[number])) == names
                    for number in sorted_unique(shapes[shapes >= 0]).tolist()}
        settled = shapes < 0
        if not buckets:
            for number, ok in names_ok.items():
                if ok:
                    settled |= shapes == number
        flags[uniq[todo][settled]] = 1
        del flags
        todo[np.flatnonzero(todo)[settled]] = False
        records = index.partitions.take(uniq[todo])  # the records checked one by one, made column-wise at once
        for code, r, number, value in zip(uniq[todo].tolist(), rows[first[todo]].tolist(),
                                          shapes[~settled].tolist(), records):
            path = None
            if (spec_id, code) in seen:  # found where it was first seen (again when decoded with metrics)
                path = index.manifests[manifest[r]].get("manifest_path") or ""
                yield from (f for f in seen[(spec_id, code)] if f[2] == path)
                continue
            have, ok = registry.shapes[number], names_ok[number]
            found = []
            if not ok:
                path = index.manifests[manifest[r]].get("manifest_path") or ""
                found.append(("iceberg.entry-partition-mismatch", Severity.WARNING, path,
                              f"{basename(path)} entry {int(entry[r])}: partition fields {list(have)} but spec "
                              f"{spec_id} has {[f.get('name') for f in spec]}", None))
            else:
                for name, transform, n in buckets:
                    v = (value or {}).get(name)
                    if v is not None and (not isinstance(v, int) or not 0 <= v < n):
                        path = path if path is not None else index.manifests[manifest[r]].get("manifest_path") or ""
                        found.append(("iceberg.entry-partition-mismatch", Severity.WARNING, path,
                                      f"{basename(path)} entry {int(entry[r])}: partition {name}={short_value(v)} is "
                                      f"outside {transform}", None))
            if found:
                seen[(spec_id, code)] = found
                yield from found
            else:
                clean[code] = 1
