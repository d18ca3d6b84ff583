"""Finding codes of the I/O layer: why a location was not read (``source.*``).

Each is also the ``code`` of the :class:`~puffin_explorer.errors.SourceError` the layer raises; a table reader
that turns such an error into a finding may keep its code (a refused location is reported as
``source.outside-scope`` wherever it is met).
"""

from __future__ import annotations

from ..findings import define
from ..regions import Severity

E = Severity.ERROR
LAYER = "io"

_CODES = [
    ("source.outside-scope", E, "a location named by the table's metadata (a manifest list, manifest, data, delete, "
     "DV, statistics or metadata file) is outside the table's read scope: it is not read, no request is made, and "
     "every count or check that needed it says it is incomplete",
     "if the files really are there, pass allow=[prefix] (--allow on the command line), or relocate={old: new} "
     "for a moved table; see the security model in the docs"),
    ("source.invalid-location", E, "a location holds a control character or is longer than any storage takes: "
     "not opened", "the path was damaged where it was written (a manifest or metadata file)"),
    ("source.not-found", E, "no such file, key or bucket (answered once: not retried)",
     "check the path (a moved table needs relocate=)"),
    ("source.access-denied", E, "the storage refused the request (permission denied; answered once: not retried)",
     "check the credentials and the permissions"),
    ("source.no-credentials", E, "the storage needs credentials and none were found", ""),
    ("source.unreachable", E, "nothing answers at the storage endpoint", "check the endpoint URL"),
    ("source.unavailable", E, "the storage kept failing in a way that may pass (throttling, 5xx, a connection "
     "reset) through every attempt", "try again later, or allow more attempts (storage_options retries)"),
    ("source.timeout", E, "the storage sent nothing within the timeout through every attempt",
     "allow more time (storage_options timeout)"),
    ("source.not-a-file", E, "a folder (or a prefix) where a file was expected", ""),
    ("source.short-read", E, "a file ends before the range asked for", ""),
    ("source.read", E, "a location cannot be read for another reason (the message says which)", ""),
]

for _code, _sev, _meaning, _hint in _CODES:
    define(LAYER, _code, _sev, _meaning, _hint)
