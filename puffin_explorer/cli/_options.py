"""Options every subcommand shares, accepted before or after the subcommand's name."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import Any, Optional

FORMATS = ("text", "json", "csv")


class UsageError(Exception):
    """The command line asks for something impossible; the message says what to pass instead."""


def nonnegative_int(text: str) -> int:
    """argparse type: a whole number >= 0 (decimal or 0x hex)."""
    try:
        value = int(text, 0)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {value}")
    return value


#: (flags, keyword arguments) of each shared option; ``dest`` names the attribute on the namespace.
_SHARED: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--storage-options",), dict(dest="storage_options", metavar="JSON",
                                  help='fsspec storage options as one JSON object, e.g. '
                                       '\'{"anon": true}\' or \'{"client_kwargs": {"endpoint_url": "http://..."}}\'')),
    (("--relocate",), dict(dest="relocate", action="append", metavar="OLD=NEW",
                           help="read files written under location prefix OLD from NEW instead (repeatable)")),
    (("--allow",), dict(dest="allow", action="append", metavar="PREFIX",
                        help="a table may also read files under PREFIX (a bucket, a folder; repeatable): by default a "
                             "table reads only the storage it was opened from")),
    (("--format",), dict(dest="format", choices=FORMATS, help="output format (default text)")),
    (("--json",), dict(dest="format", action="store_const", const="json", help="same as --format json")),
    (("--csv",), dict(dest="format", action="store_const", const="csv", help="same as --format csv")),
    (("--strict",), dict(dest="strict", action="store_true",
                         help="stop at the first error in a file (exit 2) instead of listing findings")),
    (("--debug",), dict(dest="debug", action="store_true", help="show the traceback of an unexpected error")),
)


def add_shared_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """Add the shared options to the main parser (``top``) or to a subcommand's parser.

    On a subcommand they default to "not given" so a value given before the
    subcommand survives; ``--relocate`` and ``--allow`` land in lists of their own and
    the two lists of each are joined by :func:`resolve`.
    """
    group = parser.add_argument_group("shared options (before or after the subcommand)")
    for flags, kwargs in _SHARED:
        kwargs = dict(kwargs)
        if not top:
            kwargs["default"] = argparse.SUPPRESS
            if kwargs["dest"] in ("relocate", "allow"):
                kwargs["dest"] += "_after"
        group.add_argument(*flags, **kwargs)


@dataclass(frozen=True)
class Shared:
    """The shared options, parsed and checked once for every subcommand."""

    storage_options: dict[str, Any] = field(default_factory=dict)
    relocate: dict[str, str] = field(default_factory=dict)
    allow: tuple[str, ...] = ()
    format: str = "text"
    format_given: bool = False
    strict: bool = False
    debug: bool = False

    @property
    def storage_options_or_none(self) -> Optional[dict[str, Any]]:
        return dict(self.storage_options) or None


def parse_storage_options(text: Optional[str]) -> dict[str, Any]:
    """``--storage-options`` is one JSON object; anything else is a usage error naming the fix."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--storage-options is not JSON ({exc.msg} at character {exc.pos}): pass one JSON "
                         "object in single quotes, e.g. --storage-options '{\"anon\": true}'") from exc
    if not isinstance(value, dict):
        raise UsageError(f"--storage-options must be a JSON object ({{...}}), not {type(value).__name__}")
    return value


def parse_relocate(items: list[str]) -> dict[str, str]:
    """``--relocate OLD=NEW`` (repeatable) → ``{OLD: NEW}``."""
    out: dict[str, str] = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise UsageError(f"--relocate {item!r} is not OLD=NEW, e.g. --relocate /data/warehouse=./warehouse")
        out[old] = new
    return out


def resolve(args: argparse.Namespace) -> Shared:
    """Check the shared options of a parsed command line and return them as one object."""
    relocate = list(getattr(args, "relocate", None) or []) + list(getattr(args, "relocate_after", None) or [])
    allow = tuple(getattr(args, "allow", None) or []) + tuple(getattr(args, "allow_after", None) or [])
    fmt = getattr(args, "format", None)
    return Shared(storage_options=parse_storage_options(getattr(args, "storage_options", None)),
                  relocate=parse_relocate(relocate), allow=allow, format=fmt or "text", format_given=fmt is not None,
                  strict=bool(getattr(args, "strict", False)), debug=bool(getattr(args, "debug", False)))


#: Help text of a file argument.
LOCATION_HELP = "local path or fsspec URL (s3://, gs://, abfs://, http(s)://, memory://)"


def has_errors(findings) -> bool:
    """Whether any finding is an error (the findings' exit code is then 1)."""
    return any(getattr(f.severity, "value", f.severity) == "error" for f in findings)


def check_strict(findings, shared: Shared) -> None:
    """With ``--strict``, the first error finding ends the command (exit 2) as a PuffinError."""
    if not shared.strict:
        return
    for f in findings:
        if getattr(f.severity, "value", f.severity) == "error":
            from ..errors import PuffinError

            raise PuffinError.from_finding(f)
