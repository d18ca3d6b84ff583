"""A TCP forwarder on 127.0.0.1 that holds every HTTP request for a fixed delay, to make a loopback
S3 server behave like object storage over a network (tens of milliseconds per request).

    with LatencyProxy("127.0.0.1", server_port, delay_s=0.020) as proxy:
        opts = {..., "client_kwargs": {"endpoint_url": proxy.url}}
        ...
        print(proxy.requests)

Only loopback: it listens on 127.0.0.1 and forwards to a loopback port.  A request is recognised by
its first bytes (an HTTP method) at the start of a read from the client; each one waits ``delay_s``
before it is forwarded, so requests made concurrently wait concurrently, as they would on a network.

The proxy runs in a child process: a network costs the client time, not CPU, so its forwarding
work must not compete with the client being measured for the interpreter lock.
"""

from __future__ import annotations

import asyncio
import mmap
import os
import struct
import subprocess
import sys
import tempfile

_METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ")


def _serve(target: tuple[str, int], delay_s: float, counters_path: str) -> None:
    """The child process: forward connections until killed; counts go to a shared 16-byte file."""
    with open(counters_path, "r+b") as fh:
        shared = mmap.mmap(fh.fileno(), 16)
    counts = [0, 0]  # requests, bytes the server sent back

    def publish() -> None:
        struct.pack_into("<qq", shared, 0, *counts)

    async def handle(c_reader, c_writer) -> None:
        try:
            s_reader, s_writer = await asyncio.open_connection(*target)
        except OSError:
            c_writer.close()
            return

        async def upstream():
            try:
                while True:
                    data = await c_reader.read(1 << 16)
                    if not data:
                        break
                    if data.startswith(_METHODS):
                        counts[0] += 1
                        publish()
                        await asyncio.sleep(delay_s)
                    s_writer.write(data)
                    await s_writer.drain()
            except ConnectionError:
                pass
            finally:
                s_writer.close()

        async def downstream():
            try:
                while True:
                    data = await s_reader.read(1 << 16)
                    if not data:
                        break
                    counts[1] += len(data)
                    publish()
                    c_writer.write(data)
                    await c_writer.drain()
            except ConnectionError:
                pass
            finally:
                c_writer.close()

        await asyncio.gather(upstream(), downstream())

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class LatencyProxy:
    def __init__(self, target_host: str, target_port: int, delay_s: float = 0.020) -> None:
        if target_host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the latency proxy forwards to loopback only")
        self.target = (target_host, target_port)
        self.delay_s = delay_s
        fd, self._counters_path = tempfile.mkstemp(prefix="latency-proxy-")
        os.write(fd, bytes(16))
        self._counters = mmap.mmap(fd, 16)
        os.close(fd)
        self._process = None
        self.port = 0

    def _counts(self) -> tuple[int, int]:
        return struct.unpack_from("<qq", self._counters, 0)

    @property
    def requests(self) -> int:
        return self._counts()[0]

    @property
    def bytes_down(self) -> int:
        """Bytes the server sent back."""
        return self._counts()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "LatencyProxy":
        self._process = subprocess.Popen(
            [sys.executable, __file__, self.target[0], str(self.target[1]), str(self.delay_s), self._counters_path],
            stdout=subprocess.PIPE, text=True)
        line = self._process.stdout.readline()
        if not line.strip().isdigit():
            self._process.kill()
            raise RuntimeError("the latency proxy did not start")
        self.port = int(line)
        return self

    def __exit__(self, *exc) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(10)
        self._counters.close()
        os.unlink(self._counters_path)


if __name__ == "__main__":
    _serve((sys.argv[1], int(sys.argv[2])), float(sys.argv[3]), sys.argv[4])
