"""An HTTP server on 127.0.0.1 (a free port) that records every request, standing in for a
webhook or Slack's Web API: it answers with the status and JSON it is given, or holds every
answer until it is released (a server slower than any timeout)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: The longest a held answer waits for its release: the server never outlives a test by much.
HOLD_LIMIT_SECONDS = 60


@dataclass(frozen=True)
class Received:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class LocalServer:
    """What a test reads and steers: the base URL, the requests, the answer, the hold."""

    url: str
    status: int = 200
    answer: Any = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    hold: bool = False


def _handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            server.received.append(
                Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            if server.hold:
                server.released.wait(HOLD_LIMIT_SECONDS)
            payload = json.dumps(server.answer).encode()
            self.send_response(server.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            return None  # quiet: the test reads `received`

    return Handler


@contextlib.contextmanager
def local_server(**settings: Any) -> Iterator[LocalServer]:
    """A recording server on 127.0.0.1 and a free port, stopped (its held answers released)
    when the block ends; ``settings`` are `LocalServer`'s status, answer and hold."""
    state = LocalServer(url="", **settings)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.released.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
