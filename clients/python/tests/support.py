"""Shared by the test modules: actors on the live server, and a proxy that loses answers."""

from __future__ import annotations

import json
import threading
import unittest
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Optional, Tuple

from agent_audit import AuditClient, RetryPolicy

from .live_server import live_server, unique

#: Retries without the default's long waits, so failure paths run quickly.
FAST_RETRY = RetryPolicy(max_attempts=4, base_delay=0.02, max_delay=0.1, timeout=30)


class LiveTestCase(unittest.TestCase):
    """Each test gets its own owner (a superadmin, so it may read the audits) and worker."""

    def setUp(self) -> None:
        self.server = live_server()
        self.owner_sub = unique("py-owner")
        self.worker_sub = unique("py-worker")
        self.owner = AuditClient(self.server.url, self.server.token(self.owner_sub, "superadmin"))
        self.worker = AuditClient(self.server.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)

    def queued_run(self, title: str = "python client test") -> Tuple[str, str]:
        """A new thread and a QUEUED run in it, created by the owner: (thread id, run id)."""
        thread = self.owner.create_thread(title)
        return thread.id, self.owner.create_run(thread.id).id


class LossyProxy:
    """Forwards POSTs to the server. ``lose_first_answer``: the first time a body is sent, the
    server's answer is dropped (the connection closes after the server committed), as a network
    may; ``gateway_first``: the first time, a 503 answers without reaching the server;
    ``unavailable_first``: the first time, the server's own UNAVAILABLE answer (503, Retry-After)
    comes back, as while its database is unreachable."""

    def __init__(self, upstream: str, mode: str = "lose_first_answer") -> None:
        self.upstream = upstream
        self.mode = mode
        self.bodies: List[bytes] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                first = body not in proxy.bodies
                proxy.bodies.append(body)
                if first and proxy.mode == "gateway_first":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if first and proxy.mode == "unavailable_first":
                    unavailable = json.dumps({"errors": [{"message": "The database cannot be reached for the moment.",
                                                          "extensions": {"code": "UNAVAILABLE"}}]}).encode()
                    self.send_response(503)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Retry-After", "1")
                    self.send_header("Content-Length", str(len(unavailable)))
                    self.end_headers()
                    self.wfile.write(unavailable)
                    return
                status, answer = proxy.forward(body, self.headers["Authorization"])
                if first and proxy.mode == "lose_first_answer":
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/graphql"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def forward(self, body: bytes, authorization: Optional[str]) -> Tuple[int, bytes]:
        request = urllib.request.Request(
            self.upstream,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": authorization or ""},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
