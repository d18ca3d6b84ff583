"""A fault-injecting HTTP proxy on loopback, in front of the test S3 server.

The tests point an S3 client at the proxy's ``endpoint_url``; the proxy forwards each
request to the real server (SeaweedFS, see ``_s3server.py``) unless a fault is armed::

    with FaultProxy(s3_server.endpoint_url) as proxy:
        opts = {**s3_server.storage_options, "client_kwargs": {"endpoint_url": proxy.endpoint_url, ...}}
        proxy.arm("reset", times=2)          # the next two requests: connection reset, then pass
        proxy.arm("status", status=503)      # every request: 503 SlowDown until disarmed
        proxy.arm("cut", times=1)            # a response cut short: headers and half the body, then close
        proxy.arm("delay", seconds=3)        # the answer held back this long
        proxy.arm("stall")                   # no answer at all, until the client gives up or the proxy stops
        proxy.refuse()                       # stop listening: connections are refused ... until proxy.listen()
        proxy.requests                       # what reached the proxy: method, path, user agent, fault

Why a proxy and not ``tc netem`` in a network namespace: a test arms a fault for the
next N requests (or for the requests that match a path) at the moment it wants it,
and counts exactly how many requests the client made; netem shapes whole links by
probability and timing, needs root (``CAP_NET_ADMIN``) and a namespace set up around
the test run, which CI runners and developer machines do not give, and cannot answer
an HTTP 503 or cut a response after its headers.  The proxy is plain Python sockets on
127.0.0.1: no privileges, deterministic counts, and it speaks just enough HTTP/1.1 to
see where one request ends and what to send back.

Every loop is bounded (requests per connection, bytes per message, seconds per
wait), every thread is a daemon, and the proxy stops itself after ``max_life_s``
even when a test forgets to.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import urlsplit

FAULTS = ("reset", "status", "cut", "delay", "stall")
#: The XML body S3 sends with a throttling answer.
SLOWDOWN_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
                 b"<Message>Please reduce your request rate.</Message></Error>")
_REASONS = {500: ("InternalError", "Internal Server Error"), 502: ("BadGateway", "Bad Gateway"),
            503: ("SlowDown", "Service Unavailable"), 504: ("GatewayTimeout", "Gateway Timeout")}
_MAX_HEAD = 64 * 1024
_MAX_BODY = 256 << 20
_MAX_REQUESTS_PER_CONNECTION = 10_000
_IO_TIMEOUT_S = 30.0


@dataclass
class Seen:
    """One request that reached the proxy, and the fault it met (``""``: passed through)."""

    method: str
    path: str
    user_agent: str
    fault: str


@dataclass
class _Rule:
    kind: str
    times: Optional[int]  # None: until disarmed
    status: int
    seconds: float
    match: Optional[Callable[[str, str], bool]]


class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1 in front of ``upstream`` (see module docstring)."""

    def __init__(self, upstream: str, max_life_s: float = 600.0, max_stall_s: float = 120.0) -> None:
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the fault proxy forwards to loopback only")
        self.upstream = (parts.hostname, parts.port or 80)
        self.max_stall_s = max_stall_s
        self.requests: list[Seen] = []
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listener: Optional[socket.socket] = None
        self._clients: set[socket.socket] = set()
        self.port = 0
        self.listen()
        self._deadline = threading.Timer(max_life_s, self.stop)
        self._deadline.daemon = True
        self._deadline.start()

    # ------------------------------------------------------------------ what tests use
    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def arm(self, kind: str, times: Optional[int] = None, status: int = 503, seconds: float = 0.0,
            match: Optional[Callable[[str, str], bool]] = None) -> None:
        """Meet the next ``times`` requests (all, when None) that ``match(method, path)`` with a fault.

        ``reset``: close the connection with a TCP reset, nothing answered; ``status``: answer
        ``status`` with an S3 error body (503 is SlowDown); ``cut``: the real answer's headers and
        half its body, then close; ``delay``: the real answer after ``seconds``; ``stall``: no answer
        until the client closes the connection (or ``max_stall_s``).
        """
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; one of {FAULTS}")
        with self._lock:
            self._rules.append(_Rule(kind, times, status, seconds, match))

    def disarm(self) -> None:
        """No more faults: every request passes, stalled ones are released (their connections closed)."""
        with self._lock:
            self._rules.clear()
            clients = list(self._clients)
        for sock in clients:
            _close(sock)

    def refuse(self) -> None:
        """Stop listening: new connections are refused (open ones are closed) until :meth:`listen`."""
        listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)
        with self._lock:
            clients = list(self._clients)
        for sock in clients:
            _reset(sock)

    def listen(self) -> None:
        """Accept connections (again, on the same port after :meth:`refuse`)."""
        if self._listener is not None:
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(64)
        sock.settimeout(0.2)
        self.port = sock.getsockname()[1]
        self._listener = sock
        threading.Thread(target=self._accept_loop, args=(sock,), name="fault-proxy-accept", daemon=True).start()

    def count(self, method: Optional[str] = None, fault: Optional[str] = None,
              path_contains: str = "") -> int:
        """How many requests reached the proxy (of this method, meeting this fault, on this path)."""
        with self._lock:
            seen = list(self.requests)
        return sum(1 for r in seen if (method is None or r.method == method)
                   and (fault is None or r.fault == fault) and path_contains in r.path)

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()

    def stop(self) -> None:
        self._stopped.set()
        self.refuse()
        self._deadline.cancel()

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ the proxy
    def _accept_loop(self, listener: socket.socket) -> None:
        while not self._stopped.is_set() and self._listener is listener:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return  # closed by refuse() / stop()
            client.settimeout(_IO_TIMEOUT_S)
            with self._lock:
                self._clients.add(client)
            threading.Thread(target=self._serve, args=(client,), name="fault-proxy-conn", daemon=True).start()

    def _take_rule(self, method: str, path: str) -> Optional[_Rule]:
        with self._lock:
            for rule in self._rules:
                if rule.match is None or rule.match(method, path):
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times <= 0:
                            self._rules.remove(rule)
                    return rule
        return None

    def _serve(self, client: socket.socket) -> None:
        buffer = b""
        try:
            for _ in range(_MAX_REQUESTS_PER_CONNECTION):
                if self._stopped.is_set():
                    return
                request, buffer = _read_request(client, buffer)
                if request is None:
                    return
                head, _body = request
                method, path, headers = _parse_head(head)
                rule = self._take_rule(method, path)
                with self._lock:
                    self.requests.append(Seen(method, path, headers.get("user-agent", ""), rule.kind if rule else ""))
                if rule is None:
                    client.sendall(self._forward(request[0] + request[1]))
                elif rule.kind == "reset":
                    _reset(client)
                    return
                elif rule.kind == "status":
                    client.sendall(_error_response(rule.status))
                elif rule.kind == "cut":
                    answer = self._forward(request[0] + request[1])
                    end = answer.find(b"\r\n\r\n") + 4
                    client.sendall(answer[:end + max(1, (len(answer) - end) // 2)] if len(answer) > end + 1
                                   else answer[:end])
                    _close(client)
                    return
                elif rule.kind == "delay":
                    answer = self._forward(request[0] + request[1])
                    if self._stopped.wait(rule.seconds):
                        return
                    client.sendall(answer)
                else:  # stall: wait until the client hangs up, the fault is disarmed or the proxy stops
                    client.settimeout(0.2)
                    deadline = time.monotonic() + self.max_stall_s
                    while time.monotonic() < deadline and not self._stopped.is_set():
                        try:
                            if client.recv(1) == b"":
                                return
                        except socket.timeout:
                            continue
                        except OSError:
                            return
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self._clients.discard(client)
            _close(client)

    def _forward(self, raw: bytes) -> bytes:
        """The upstream server's whole answer to one request (sent with ``Connection: close``)."""
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
        raw = b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + body
        with socket.create_connection(self.upstream, timeout=_IO_TIMEOUT_S) as up:
            up.sendall(raw)
            chunks = []
            total = 0
            while total <= _MAX_BODY:
                chunk = up.recv(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        answer = b"".join(chunks)
        # the answer goes back on a connection the client may keep: drop the upstream's "close"
        a_head, sep, a_body = answer.partition(b"\r\n\r\n")
        a_lines = [line for line in a_head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
        return b"\r\n".join(a_lines) + sep + a_body


def _read_request(sock: socket.socket, buffer: bytes):
    """``((head, body), rest)`` of the next request on ``sock``, or ``(None, b"")`` when it closes."""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > _MAX_HEAD:
            return None, b""
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None, b""
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    head += b"\r\n\r\n"
    _method, _path, headers = _parse_head(head)
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while b"\r\n0\r\n\r\n" not in b"\r\n" + rest:
            if len(rest) > _MAX_BODY:
                return None, b""
            chunk = sock.recv(1 << 16)
            if not chunk:
                return None, b""
            rest += chunk
        end = (b"\r\n" + rest).index(b"\r\n0\r\n\r\n") + len(b"0\r\n\r\n")  # the 2-byte prefix cancels out
        return (head, rest[:end]), rest[end:]
    length = int(headers.get("content-length", "0") or 0)
    if length > _MAX_BODY:
        return None, b""
    while len(rest) < length:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None, b""
        rest += chunk
    return (head, rest[:length]), rest[length:]


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    method, path = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


def _error_response(status: int) -> bytes:
    code, reason = _REASONS.get(status, ("InternalError", "Error"))
    body = SLOWDOWN_BODY if status == 503 else SLOWDOWN_BODY.replace(b"SlowDown", code.encode()).replace(
        b"Please reduce your request rate.", reason.encode())
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _reset(sock: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a dropped connection looks to the client."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
