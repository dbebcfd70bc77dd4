"""Shared by the test modules: actors on the live server, and a proxy that loses answers."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from agent_audit import AuditApiError, AuditClient, RetryPolicy, Run
from agent_audit.event_writer import EventWriter

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

    def assert_signal_interrupts(self, agent: str, run_id: str, sent: signal.Signals, stopped_by: str = "KeyboardInterrupt") -> None:
        """Runs ``agent`` (Python source taking the url, a worker token and ``run_id``, printing
        "working" once the run is under way) in a process of its own, sends it ``sent``, and checks
        the process stopped (``stopped_by`` in its stderr) with the run ended INTERRUPTED."""
        process = self.start_agent(agent, self.server.url, run_id)
        process.send_signal(sent)
        _, stderr = process.communicate(timeout=30)
        self.assertIn(stopped_by, stderr)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")

    def start_agent(self, agent: str, url: str, run_id: str) -> "subprocess.Popen[str]":
        """Runs ``agent`` (Python source taking the url, a worker token and ``run_id``) in a process
        of its own, killed when the test ends, and returns it once it printed "working"."""
        process = subprocess.Popen(
            [sys.executable, "-c", agent, url, self.server.token(self.worker_sub, "worker"), run_id],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        self.addCleanup(process.kill)
        assert process.stdout is not None
        self.assertEqual(process.stdout.readline().strip(), "working")
        return process

    def run_once_ended(self, run_id: str, seconds: float = 30) -> Run:
        """The run as the owner reads it once it is no longer RUNNING (a lease left to expire ends
        it at the server's next sweep), or as it still is after ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            run = self.owner.run(run_id)
            assert run is not None
            if run.status != "RUNNING" or time.monotonic() >= deadline:
                return run
            time.sleep(0.1)

    def wait_for_child(self, pid: int, seconds: float = 60) -> None:
        """Waits for a forked child (which ends by ``os._exit``, 0 once its part passed), killing
        it if it is not done in ``seconds``, and fails the test unless it exited 0."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                self.assertTrue(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the child failed ({status})")
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        self.fail("the forked child's calls hung")


def carries(body: bytes, operation: str) -> bool:
    """Whether a request sends ``operation`` ("FinishRun", "RecordToolFinished"): on its own, or
    in a batch (RecordEvents), where the client sends the calls its threads make at once."""
    request = json.loads(body)
    if request["operationName"] == operation:
        return True
    kind = operation[len("Record"):] if operation.startswith("Record") else operation  # the batch's key: toolFinished
    events = request["variables"].get("events", []) if request["operationName"] == "RecordEvents" else []
    return any(kind[0].lower() + kind[1:] in event for event in events)


class LossyProxy:
    """Forwards POSTs to the server. ``lose_first_answer``: the first time a body is sent, the
    server's answer is dropped (the connection closes after the server committed), as a network
    may; ``gateway_first``: the first time, a 503 answers without reaching the server;
    ``unavailable_first``: the first time, the server's own UNAVAILABLE answer (503, Retry-After)
    comes back, as while its database is unreachable. Once ``silent`` is set, every request is
    held unanswered until the proxy closes, as across a network partition."""

    def __init__(self, upstream: str, mode: str = "lose_first_answer") -> None:
        self.upstream = upstream
        self.mode = mode
        self.silent = threading.Event()
        self._closing = threading.Event()
        self.bodies: List[bytes] = []
        # Called with each body the first time it is sent, before the proxy answers it.
        self.on_first_send: Callable[[bytes], None] = lambda body: None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if proxy.silent.is_set():
                    proxy._closing.wait()  # noqa: SLF001 - its own proxy
                    self.close_connection = True
                    return
                first = body not in proxy.bodies
                proxy.bodies.append(body)
                if first:
                    proxy.on_first_send(body)
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
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()


def call_while_first_is_held(
    writer: EventWriter,
    in_flight: threading.Event,
    release: threading.Event,
    calls: Sequence[Tuple[str, Callable[[], Any]]],
    wait_seconds: float = 10,
) -> Dict[str, Any]:
    """Runs each ``(name, call)`` on a thread of its own: the first alone, until ``in_flight``
    says its request is held; then the others one by one, each queued in ``writer`` before the
    next starts (so they go together, in this order); then sets ``release``. Returns each
    name's answer, or the AuditApiError it raised."""
    outcomes: Dict[str, Any] = {}

    def run(name: str, call: Callable[[], Any]) -> None:
        try:
            outcomes[name] = call()
        except AuditApiError as error:
            outcomes[name] = error

    threads = [threading.Thread(target=run, args=entry) for entry in calls]
    threads[0].start()
    if not in_flight.wait(wait_seconds):
        raise AssertionError("the first call's request was never held in flight")
    for count, thread in enumerate(threads[1:], start=1):
        thread.start()
        while len(writer._queue) < count:  # noqa: SLF001 - the calls must queue in order
            threading.Event().wait(0.001)
    release.set()
    for thread in threads:
        thread.join(wait_seconds * 6)
    return outcomes


class _LocalServer:
    """An http.server on a free port of 127.0.0.1, ``url`` its GraphQL endpoint, until ``close``."""

    def _serve(self, handler: Type[BaseHTTPRequestHandler], tls: Optional[ssl.SSLContext] = None) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/graphql"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self.url = self.url.replace("http://", "https://")
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class TricklingServer(_LocalServer):
    """Answers every POST with its headers at once, then a body one byte every 0.5 s, until it
    closes: as a proxy that trickles a slow answer, each read of it is quick but the answer never
    ends. ``trickling`` is set while some request is being trickled."""

    def __init__(self) -> None:
        self._closing = threading.Event()
        self.trickling = threading.Event()
        server = self

        class Handler(_QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                server.trickling.set()
                while not server._closing.wait(0.5):  # noqa: SLF001 - its own server
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:  # the client gave up and closed its end
                        return
                self.close_connection = True

        self._serve(Handler)

    def close(self) -> None:
        self._closing.set()
        super().close()


class _TCPPeer:
    """Listens on a free port of 127.0.0.1 (``port``) and answers each connection on a thread of its
    own (``_answer``) until ``close``."""

    def __init__(self) -> None:
        self._closing = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._closing.set()
        self._listener.close()


class StallingPeer(_TCPPeer):
    """A TCP peer that accepts and reads what the client sends, then answers with ``opening`` and a
    byte every 0.5 s until it closes: a TLS peer stalling the handshake (a record header announcing
    16 KiB, its bytes trickled) or a redirect trickled. ``trickling`` is set once it answers."""

    def __init__(self, opening: bytes, trickled: bytes = b"\x00") -> None:
        self.trickling = threading.Event()
        self._opening = opening
        self._trickled = trickled
        super().__init__()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(65536)
                connection.sendall(self._opening)
                self.trickling.set()
                while not self._closing.wait(0.5):
                    connection.sendall(self._trickled)
            except OSError:  # the client gave up and closed its end
                return


#: A TLS peer's first bytes: a handshake record announcing 16 KiB, which never all come.
TLS_RECORD_OPENING = b"\x16\x03\x03\x40\x00"


class _SameAnswerServer(_LocalServer):
    """Answers every POST with ``status`` and ``page`` (over TLS with ``tls``); ``requests`` counts
    what reached it."""

    def __init__(self, status: int, page: bytes = b"", tls: Optional[ssl.SSLContext] = None) -> None:
        self.requests = 0
        server = self

        class Handler(_QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                server.requests += 1
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

        self._serve(Handler, tls)


class GatewayServer(_SameAnswerServer):
    """Answers every POST 503 with a page that is not GraphQL, as a load balancer with no server behind it."""

    def __init__(self) -> None:
        super().__init__(503, b"<html>no healthy upstream</html>")


class RedirectingServer(_LocalServer):
    """Answers every POST with a 302 to another address of its own (``/graphql/1``, ``/graphql/2``,
    ...), as a misconfigured proxy looping its redirects; ``requests`` counts what reached it."""

    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(_QuietHandler):
            def answer(self) -> None:
                server.requests += 1
                self.send_response(302)
                self.send_header("Location", f"/graphql/{server.requests}")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = answer  # noqa: N815 - http.server's naming
            do_GET = answer  # noqa: N815 - http.server's naming

        self._serve(Handler)


class TLSServer(_SameAnswerServer):
    """Answers every POST 500 over TLS with a certificate of its own (made by ``openssl``, as
    test/export's TLS tests do), which no client trusts; ``requests`` counts what reached it."""

    def __init__(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            key, certificate = os.path.join(directory, "key.pem"), os.path.join(directory, "cert.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                            "-keyout", key, "-out", certificate], check=True, capture_output=True)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certificate, key)
        super().__init__(500, tls=context)


class TunnelingProxy(_TCPPeer):
    """An HTTP proxy that opens the CONNECT tunnels it is asked for (as an HTTPS proxy does), ``url``
    its address; ``requests`` holds each request line it was sent."""

    def __init__(self) -> None:
        self.requests: List[str] = []
        super().__init__()
        self.url = f"http://127.0.0.1:{self.port}"

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            asked = b""
            while b"\r\n\r\n" not in asked:
                received = connection.recv(65536)
                if not received:
                    return
                asked += received
            line = asked.split(b"\r\n", 1)[0].decode("latin-1")
            self.requests.append(line)
            host, _, port = line.split(" ")[1].rpartition(":")
            with socket.create_connection((host.strip("[]"), int(port))) as server:
                connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                threading.Thread(target=self._pipe, args=(server, connection), daemon=True).start()
                self._pipe(connection, server)

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                sink.sendall(data)
        except OSError:  # either end closed
            return
