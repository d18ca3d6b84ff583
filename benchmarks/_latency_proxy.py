"""A TCP forwarder on 127.0.0.1 that holds every HTTP request for a fixed delay, to make a loopback
S3 server behave like object storage over a network (tens of milliseconds per request).

    with LatencyProxy("127.0.0.1", server_port, delay_s=0.020) as proxy:
        opts = {..., "client_kwargs": {"endpoint_url": proxy.url}}
        ...
        print(proxy.requests)

Only loopback: it listens on 127.0.0.1 and forwards to a loopback port.  A request is recognised by
its first bytes (an HTTP method) at the start of a read from the client; each one waits ``delay_s``
before it is forwarded, so requests made concurrently wait concurrently, as they would on a network.
"""

from __future__ import annotations

import asyncio
import threading

_METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ")


class LatencyProxy:
    def __init__(self, target_host: str, target_port: int, delay_s: float = 0.020) -> None:
        if target_host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the latency proxy forwards to loopback only")
        self.target = (target_host, target_port)
        self.delay_s = delay_s
        self.requests = 0
        self.bytes_down = 0  # bytes the server sent back
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._server = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "LatencyProxy":
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.port = fut.result(10)
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            self._server.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in others:
                t.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def _handle(self, c_reader, c_writer) -> None:
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.target)
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
                        self.requests += 1
                        await asyncio.sleep(self.delay_s)
                    s_writer.write(data)
                    await s_writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                s_writer.close()

        async def downstream():
            try:
                while True:
                    data = await s_reader.read(1 << 16)
                    if not data:
                        break
                    self.bytes_down += len(data)
                    c_writer.write(data)
                    await c_writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                c_writer.close()

        await asyncio.gather(upstream(), downstream())
