"""``apache-datasketches-theta-v1`` blobs: a compact Theta sketch per blob.

The sketch itself is decoded by the ``datasketches`` library; this module adds
the byte regions of its serialized form (preamble fields, hash array) and the
checks a Puffin reader cares about (seed hash, the ``ndv`` property).
"""

from __future__ import annotations

import math
import struct
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional

from .._text import plural
from ..errors import BlobDecodeError
from .._repr import RichRepr
from ..regions import Finding, FindingList, Region, Severity

if TYPE_CHECKING:  # pragma: no cover
    from .blob_entry import BlobEntry

BLOB_TYPE = "apache-datasketches-theta-v1"
_FLAG_NAMES = {0: "big-endian", 1: "read-only", 2: "empty", 3: "compact", 4: "ordered", 5: "single-item"}
_FAMILY_COMPACT = 3
MAX_THETA = (1 << 63) - 1


@lru_cache(maxsize=1)
def default_seed_hash() -> int:
    """The seed hash of the default seed (9001), the only one Iceberg uses."""
    import datasketches

    return int(datasketches.update_theta_sketch().get_seed_hash())


class ThetaSketch(RichRepr):
    """A decoded compact Theta sketch with its estimate, bounds and byte layout."""

    blob_type = BLOB_TYPE

    def __init__(self, data: bytes, offset: int = 0, metadata: Optional["BlobEntry"] = None,
                 space: str = "file") -> None:
        self._data = bytes(data)
        self.offset = offset
        self.metadata = metadata
        self.space = space
        self.findings: FindingList = FindingList()
        self._regions: list[Region] = []
        self.sketch = None
        self.serial_version: Optional[int] = None
        self.flags: list[str] = []
        self.seed_hash: Optional[int] = None
        self._parse()

    @classmethod
    def from_bytes(cls, data: bytes, offset: int = 0, metadata: Optional["BlobEntry"] = None,
                   strict: bool = False) -> "ThetaSketch":
        """Decode a serialized compact Theta sketch."""
        sk = cls(data, offset, metadata)
        if strict:
            for f in sk.findings:
                if f.severity is Severity.ERROR:
                    raise BlobDecodeError.from_finding(f)
        return sk

    def _add(self, code: str, severity: Severity, at: int, message: str, hint: str = "") -> None:
        self.findings.append(Finding(code, severity, self.offset + at, message, hint, space=self.space))

    def _r(self, name: str, kind: str, at: int, length: int, value: Any = None) -> Region:
        return Region(name, kind, self.offset + at, length, value=value, space=self.space)

    def _parse(self) -> None:
        d, n = self._data, len(self._data)
        if n < 8:
            self._add("theta.truncated", Severity.ERROR, 0, f"a Theta sketch needs at least 8 bytes, got {n}")
            return
        pre_longs = d[0] & 0x3F
        self.serial_version, family, lg_nom, lg_arr, flag_byte = d[1], d[2], d[3], d[4], d[5]
        (self.seed_hash,) = struct.unpack_from("<H", d, 6)
        self.flags = [name for bit, name in _FLAG_NAMES.items() if flag_byte >> bit & 1]
        pre = [self._r("preamble longs", "theta-field", 0, 1, pre_longs),
               self._r("serial version", "theta-field", 1, 1, self.serial_version),
               self._r("family (3 = compact)", "theta-field", 2, 1, family),
               self._r("lg nominal entries", "theta-field", 3, 1, lg_nom),
               self._r("lg array size", "theta-field", 4, 1, lg_arr),
               self._r("flags", "theta-field", 5, 1, ", ".join(self.flags) or "none"),
               self._r("seed hash", "theta-field", 6, 2, f"{self.seed_hash:#06x}")]
        count = 0
        if family != _FAMILY_COMPACT:
            self._add("theta.family", Severity.ERROR, 2, f"sketch family is {family}, expected 3 (compact)")
        if self.serial_version == 3:
            if pre_longs >= 2 and n >= 16:
                (count,) = struct.unpack_from("<i", d, 8)
                (p,) = struct.unpack_from("<f", d, 12)
                pre += [self._r("retained entries", "theta-field", 8, 4, count),
                        self._r("sampling probability p", "theta-field", 12, 4, p)]
            elif pre_longs == 1 and "single-item" in self.flags:
                count = 1
            if pre_longs >= 3 and n >= 24:
                (theta_long,) = struct.unpack_from("<q", d, 16)
                pre.append(self._r("theta (as long)", "theta-field", 16, 8, theta_long))
            head = pre_longs * 8
            self._regions.append(Region("sketch preamble", "theta-preamble", self.offset, min(head, n), pre,
                                        space=self.space))
            if count < 0 or head + 8 * count > n:
                self._add("theta.truncated", Severity.ERROR, 8,
                          f"preamble says {plural(count, 'hash')} ({plural(8 * max(count, 0), 'byte')}) but only "
                          f"{plural(max(0, n - head), 'byte')} follow it")
            elif count:
                self._regions.append(self._r(f"hash array ({count:,} × uint64)", "theta-hashes", head,
                                             8 * count, count))
                if head + 8 * count < n:
                    self._add("theta.trailing-bytes", Severity.WARNING, head + 8 * count,
                              f"{plural(n - head - 8 * count, 'byte')} after the hash array")
        else:
            head = min(n, pre_longs * 8)
            self._regions.append(Region("sketch preamble", "theta-preamble", self.offset, head, pre,
                                        space=self.space))
            if n > head:
                self._regions.append(self._r(f"entries (serial version {self.serial_version})",
                                             "theta-hashes", head, n - head))
        if self.seed_hash != default_seed_hash() and not (pre_longs == 1 and "empty" in self.flags):
            self._add("theta.seed-hash", Severity.ERROR, 6,
                      f"seed hash {self.seed_hash:#06x} is not the default seed's {default_seed_hash():#06x}",
                      "the sketch was built with another seed: Iceberg (and this reader) cannot use it")
            return
        try:
            import datasketches

            self.sketch = datasketches.compact_theta_sketch.deserialize(d)
        except Exception as exc:  # noqa: BLE001 - the library raises plain RuntimeError/ValueError
            self._add("theta.invalid", Severity.ERROR, 0, f"datasketches cannot read this sketch: {exc}")
            return
        if not math.isfinite(self.sketch.get_estimate()):
            self._add("theta.theta-range", Severity.ERROR, 16 if pre_longs >= 3 else 0,
                      f"theta is {self.sketch.theta:g} with {count:,} hashes retained: "
                      "the estimate is not a finite number",
                      "a compact sketch's theta is above zero; the preamble is damaged")

    # ------------------------------------------------------------------ values
    def _need(self):
        if self.sketch is None:
            raise BlobDecodeError("the sketch could not be decoded", self.offset, "theta.invalid")
        return self.sketch

    @property
    def estimate(self) -> float:
        return float(self._need().get_estimate())

    def lower_bound(self, num_std_devs: int = 1) -> float:
        return float(self._need().get_lower_bound(num_std_devs))

    def upper_bound(self, num_std_devs: int = 1) -> float:
        return float(self._need().get_upper_bound(num_std_devs))

    def bounds(self) -> dict[int, tuple[float, float]]:
        """``{1: (lo, hi), 2: ..., 3: ...}`` at 1–3 standard deviations."""
        return {k: (self.lower_bound(k), self.upper_bound(k)) for k in (1, 2, 3)}

    @property
    def theta(self) -> float:
        return float(self._need().theta)

    @property
    def num_retained(self) -> int:
        return int(self._need().num_retained)

    @property
    def is_ordered(self) -> bool:
        return bool(self._need().is_ordered())

    @property
    def is_estimation_mode(self) -> bool:
        return bool(self._need().is_estimation_mode())

    @property
    def is_empty(self) -> bool:
        return bool(self._need().is_empty())

    @property
    def ndv_property(self) -> Optional[str]:
        """The blob's ``ndv`` property as written (a string), if any."""
        return None if self.metadata is None else self.metadata.properties.get("ndv")

    @property
    def ndv_number(self) -> Optional[int]:
        """The ``ndv`` property as an integer; ``None`` when absent or not a decimal integer string."""
        return ndv_value(self.ndv_property)

    @property
    def expected_ndv(self) -> Optional[int]:
        """What Iceberg writes as ``ndv`` for this sketch: the estimate, truncated (``None`` when the
        estimate is not finite: a damaged theta)."""
        estimate = self.estimate
        return int(math.floor(estimate)) if math.isfinite(estimate) else None

    @property
    def ndv_agrees(self) -> Optional[bool]:
        """Whether the ``ndv`` property is the truncated estimate; ``None`` when there is nothing to compare."""
        ndv = self.ndv_number
        if ndv is None or self.sketch is None or self.expected_ndv is None:
            return None
        return ndv == self.expected_ndv

    def to_pandas(self):
        """The estimate with its lower and upper bounds at 1, 2 and 3 standard deviations (no rows when the
        sketch is unreadable)."""
        import pandas as pd

        if self.sketch is None:
            return pd.DataFrame(columns=["std_devs", "lower", "estimate", "upper"])

        return pd.DataFrame([{"std_devs": k, "lower": lo, "estimate": self.estimate, "upper": hi}
                             for k, (lo, hi) in self.bounds().items()],
                            columns=["std_devs", "lower", "estimate", "upper"])

    @property
    def nbytes(self) -> int:
        """Size of the sketch's (decompressed) bytes."""
        return len(self._data)

    def regions(self) -> list[Region]:
        return list(self._regions)

    def region_tree(self) -> Region:
        """The sketch's regions under one root region."""
        return Region("theta sketch", "theta", self.offset, len(self._data), self.regions(), space=self.space)

    def summary(self) -> str:
        """One line: estimate, 2σ bounds, hashes kept, mode and the ndv check (computed once)."""
        if getattr(self, "_summary", None) is None:
            self._summary = self._summarize()
        return self._summary

    def _summarize(self) -> str:
        if self.sketch is None:
            return f"unreadable Theta sketch ({self.findings[0].code if self.findings else '?'})"
        mode = "estimation" if self.is_estimation_mode else "exact"
        ndv = self.ndv_property
        agree = "" if ndv is None else (f", ndv {ndv} {'ok' if self.ndv_agrees else 'MISMATCH'}")
        return (f"estimate {self.estimate:,.1f} [{self.lower_bound(2):,.1f}, {self.upper_bound(2):,.1f}] "
                f"at 2σ, {self.num_retained:,} retained, {mode}{agree}")

    def __repr__(self) -> str:
        if self.sketch is None:
            return "ThetaSketch(<unreadable>)"
        return f"ThetaSketch(estimate={self.estimate}, retained={self.num_retained}, theta={self.theta})"


def ndv_value(ndv: Any) -> Optional[int]:
    """The ``ndv`` property as an integer, or ``None`` unless it is a string of ASCII digits (of sane length)."""
    if not isinstance(ndv, str) or not ndv.isascii() or not ndv.isdigit() or len(ndv) > 30:
        return None
    return int(ndv)


def check_metadata(sk: ThetaSketch, blob: "BlobEntry", anchor: int) -> list[Finding]:
    """Compare the blob's ``ndv`` property with the sketch."""
    out = []
    ndv = blob.properties.get("ndv")
    if ndv is None or sk.sketch is None:
        return out
    value = ndv_value(ndv)
    if value is None:
        shown = repr(ndv) if len(repr(ndv)) <= 80 else repr(ndv)[:77] + "..."
        out.append(Finding("theta.ndv-invalid", Severity.WARNING, anchor,
                           f"blob {blob.index}: ndv property {shown} is not a non-negative decimal integer"))
    elif sk.expected_ndv is not None and value != sk.expected_ndv:
        out.append(Finding("theta.ndv-mismatch", Severity.WARNING, anchor,
                           f"blob {blob.index}: ndv property says {value:,}, the sketch estimates "
                           f"{sk.estimate:,.2f} (Iceberg would write {sk.expected_ndv:,})",
                           "the property was computed from another sketch or rounded differently"))
    return out
