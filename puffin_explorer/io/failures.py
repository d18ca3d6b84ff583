"""What a storage failure is: whether it may pass if the request is made again, and a short phrase for it.

Read from the exception and its causes (botocore, aiohttp, Arrow's S3 errors); below both the retry loop
(:mod:`.retry`, which asks whether to try again) and the error mapping (:mod:`.errors`, which words the error
the user gets).
"""

from __future__ import annotations

import re
from typing import Any, Optional

#: How much of an exception's text is searched for what went wrong (a path in it may be any length).
TEXT_SEARCHED = 4_096

_TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}
_TRANSIENT_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestTimeTooSkewed",
                    "InternalError", "ServiceUnavailable", "RequestLimitExceeded", "TooManyRequests",
                    "BandwidthLimitExceeded", "503", "500", "502", "504"}
_TRANSIENT_NAMES = {"ConnectionResetError", "ConnectionRefusedError", "ConnectionAbortedError", "BrokenPipeError",
                    "TimeoutError", "timeout", "FSTimeoutError", "ReadTimeoutError", "ConnectTimeoutError",
                    "ConnectionClosedError", "EndpointConnectionError", "ClientConnectorError",
                    "ServerDisconnectedError", "ClientPayloadError", "ContentLengthError", "ClientOSError",
                    "IncompleteRead", "IncompleteReadError", "ResponseStreamingError", "ServerTimeoutError",
                    "SocketTimeoutError", "ProtocolError", "ShortResponse"}
#: Arrow's S3 errors say ``AWS Error <NAME> during <Op> operation``; these names may pass.
_ARROW_TRANSIENT = {"SLOW_DOWN", "NETWORK_CONNECTION", "SERVICE_UNAVAILABLE", "INTERNAL_FAILURE", "THROTTLING",
                    "REQUEST_TIMEOUT", "REQUEST_EXPIRED", "REQUEST_TIME_TOO_SKEWED"}
_ARROW_ERROR = re.compile(r"AWS Error ([A-Z_]+)(?: \(HTTP status (\d+)\))?")
_ARROW_STATUS = {"SLOW_DOWN": "503 SlowDown", "SERVICE_UNAVAILABLE": "503 ServiceUnavailable",
                 "INTERNAL_FAILURE": "500 InternalError", "THROTTLING": "503 Throttling"}


class ShortResponse(OSError):
    """An answer with fewer bytes than asked for and than the file has: cut short on the way."""


def exception_chain(exc: BaseException):
    """``exc`` and its causes/contexts, outermost first."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _http(exc: BaseException) -> tuple[Optional[int], str, str]:
    """``(status, code, message)`` of an HTTP error answer in the chain (botocore, aiohttp, Arrow)."""
    for e in exception_chain(exc):
        resp = getattr(e, "response", None)
        if isinstance(resp, dict):
            err = resp.get("Error") or {}
            status = (resp.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            return (int(status) if status else None), str(err.get("Code") or ""), str(err.get("Message") or "")
        status = getattr(e, "status", None)
        if isinstance(status, int) and type(e).__name__ == "ClientResponseError":  # aiohttp (fsspec's HTTP)
            return status, "", str(getattr(e, "message", "") or "")
        m = _ARROW_ERROR.search(str(e)[:TEXT_SEARCHED]) if isinstance(e, OSError) else None
        if m:
            return (int(m.group(2)) if m.group(2) else None), m.group(1), str(e).split(" operation: ", 1)[-1]
    return None, "", ""


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` is a failure that may pass if the request is made again."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return False
    status, code, _ = _http(exc)
    if code in _ARROW_TRANSIENT or code in _TRANSIENT_CODES or status in _TRANSIENT_STATUS:
        return True
    if code or status:
        return False  # an answer that says no (403, 404, 400 ...): asking again gives the same answer
    names = {type(e).__name__ for e in exception_chain(exc)}
    if names & {"FileNotFoundError", "PermissionError", "IsADirectoryError", "NotADirectoryError",
                "NoCredentialsError", "PartialCredentialsError"}:
        return False
    return bool(names & _TRANSIENT_NAMES)


def cause(exc: BaseException, pol: Optional[Any] = None) -> str:
    """A short phrase for what went wrong: ``503 SlowDown (Please reduce your request rate.)``,
    ``connection reset``, ``no answer within 2 s`` ... (``pol``: the retry policy whose ``timeout`` ran out)."""
    status, code, message = _http(exc)
    if code in _ARROW_STATUS:
        label = _ARROW_STATUS[code]
    elif code in ("NETWORK_CONNECTION",):
        label, message = "", ""
    else:
        label = " ".join([str(status)] * bool(status) + [code] * bool(code and code != str(status)))
    if label:
        return f"{label} ({message.strip()[:200]})" if message.strip() else label
    names = [type(e).__name__ for e in exception_chain(exc)]
    text = " ".join(str(e)[:TEXT_SEARCHED] for e in exception_chain(exc))
    within = f" within {pol.timeout:g} s" if pol else ""
    if any(n in ("ReadTimeoutError", "SocketTimeoutError", "ServerTimeoutError", "FSTimeoutError", "TimeoutError",
                 "timeout") for n in names) or "curlCode: 28" in text:
        return f"no answer{within} (timed out)"
    if "ConnectTimeoutError" in names:
        return f"no connection{within} (timed out)"
    if "ConnectionRefusedError" in names or "curlCode: 7," in text:
        return "connection refused"
    if "ConnectionResetError" in names or "Connection reset" in text or "curlCode: 56" in text:
        return "connection reset"
    if names[0] == "ShortResponse" or set(names) & {"ClientPayloadError", "ContentLengthError", "IncompleteRead",
                                                   "ResponseStreamingError"} or "curlCode: 18" in text:
        return "answer cut short"
    if set(names) & {"ServerDisconnectedError", "ConnectionClosedError"} or "curlCode: 52" in text:
        return "connection closed without an answer"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return first[:300]
