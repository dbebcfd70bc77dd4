"""A timeout bounds the whole attempt, from the host's lookup to the answer's last byte: a server that
sends its headers, then trickles the body a byte at a time (each read quick, the answer never
ending), a TLS peer that trickles its handshake, and a lookup that never answers are given up on as
a silent server is, by every call that takes ``timeout=``, at interpreter shutdown too."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import unittest
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from agent_audit import AuditApiError, AuditClient, LeaseKeeper, RetryPolicy, RunLease

from .interpreters import Interpreter, installed
from .support import TLS_RECORD_OPENING, GatewayServer, RedirectingServer, StallingPeer, TLSServer, TricklingServer, TunnelingProxy

# How long a test waits for a call that should give up after 1 s: generous for a loaded machine,
# while the server trickles until the test ends.
PATIENCE = 20.0


def _lease(seconds: int) -> RunLease:
    now = datetime.now(timezone.utc)
    return RunLease(run_id="run-1", epoch=1, owner="worker", expires_at=(now + timedelta(seconds=seconds)).isoformat(),
                    granted_at=now.isoformat())


class GivingUpTest(unittest.TestCase):
    def assert_gives_up(self, call: Callable[[], Any], stalled: Callable[[], bool]) -> AuditApiError:
        """``call`` raises TRANSPORT_ERROR 'no answer within 1 s', with ``stalled()`` true after it
        (the peer still trickling, the lookup still unanswered)."""
        errors: List[BaseException] = []

        def run() -> None:
            try:
                call()
            except BaseException as error:  # noqa: BLE001 - handed to the test
                errors.append(error)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(PATIENCE)
        self.assertTrue(stalled())
        self.assertFalse(thread.is_alive(), "the call was still waiting past its bound")
        self.assertEqual(len(errors), 1, errors)
        error = errors[0]
        assert isinstance(error, AuditApiError), error
        self.assertEqual(error.code, "TRANSPORT_ERROR")
        self.assertIn("no answer within 1 s", str(error))
        return error


class TricklingAnswerTest(GivingUpTest):
    def setUp(self) -> None:
        self.server = TricklingServer()
        self.addCleanup(self.server.close)
        self.client = AuditClient(self.server.url, "token", batching=False)

    def assert_gives_up(self, call: Callable[[], Any], stalled: Optional[Callable[[], bool]] = None) -> AuditApiError:
        return super().assert_gives_up(call, stalled or self.server.trickling.is_set)

    def test_finish_run_with_a_timeout_gives_up_on_a_trickled_answer(self) -> None:
        self.assert_gives_up(lambda: self.client.finish_run(_lease(60), "INTERRUPTED", timeout=1))

    def test_a_record_call_with_a_timeout_gives_up_on_a_trickled_answer(self) -> None:
        self.assert_gives_up(lambda: self.client.record_tool_error(_lease(60), "call-1", {"message": "stopped"}, timeout=1))

    def test_the_retry_policy_timeout_bounds_each_attempt_with_its_body(self) -> None:
        client = AuditClient(self.server.url, "token", retry=RetryPolicy(max_attempts=2, base_delay=0.01, timeout=1))
        error = self.assert_gives_up(lambda: client.finish_run(_lease(60), "INTERRUPTED"))
        self.assertEqual(error.attempts, 2)

    def test_a_lease_renewal_gives_up_before_the_lease_expires(self) -> None:
        # A 3 s lease: each renewal is one attempt of at most 1 s (a third of the lease).
        failures: List[Exception] = []
        failed = threading.Event()

        def on_renew_error(error: Exception) -> None:
            failures.append(error)
            failed.set()

        keeper = LeaseKeeper(self.client, _lease(3), 3, on_renew_error=on_renew_error)
        self.addCleanup(keeper.stop)
        self.assertTrue(failed.wait(PATIENCE), "the renewal was still reading the trickled answer")
        error = failures[0]
        assert isinstance(error, AuditApiError), error
        self.assertEqual(error.code, "TRANSPORT_ERROR")
        self.assertIn("no answer within 1 s", str(error))

    def test_every_owner_call_and_a_renewal_with_a_timeout_give_up_on_a_trickled_answer(self) -> None:
        calls: List[Callable[[], Any]] = [
            lambda: self.client.create_thread("title", timeout=1),
            lambda: self.client.append_message("thread-1", "USER", {"text": "hi"}, timeout=1),
            lambda: self.client.create_run("thread-1", timeout=1),
            lambda: self.client.cancel_run("run-1", timeout=1),
            lambda: self.client.delete_thread("thread-1", timeout=1),
            lambda: self.client.thread_audits("thread-1", timeout=1),
            lambda: self.client.run("run-1", timeout=1),
            lambda: self.client.renew_lease(_lease(60), timeout=1),
        ]
        for index, call in enumerate(calls):
            with self.subTest(call=index):
                self.assert_gives_up(call)


class ConnectionTest(GivingUpTest):
    """What comes before the request is sent: the lookup, the TLS handshake; and redirects."""

    def test_a_tls_handshake_trickled_by_the_peer_is_given_up_at_the_timeout(self) -> None:
        peer = StallingPeer(TLS_RECORD_OPENING)
        self.addCleanup(peer.close)
        client = AuditClient(f"https://127.0.0.1:{peer.port}/graphql", "token", batching=False)
        self.assert_gives_up(lambda: client.finish_run(_lease(60), "INTERRUPTED", timeout=1), peer.trickling.is_set)

    def test_a_certificate_not_trusted_is_refused_at_once_naming_why(self) -> None:
        server = TLSServer()
        self.addCleanup(server.close)
        client = AuditClient(server.url, "token", batching=False, retry=RetryPolicy(max_attempts=4, base_delay=0.01))
        for call in (lambda: client.run("run-1"), lambda: client.run("run-1", timeout=30)):
            with self.assertRaises(AuditApiError) as raised:
                call()
            self.assertEqual(raised.exception.code, "TRANSPORT_ERROR")
            self.assertFalse(raised.exception.retryable)
            self.assertEqual(raised.exception.attempts, 1)
            self.assertIn("CERTIFICATE_VERIFY_FAILED", str(raised.exception))
        self.assertEqual(server.requests, 0)

    def test_a_lookup_that_never_answers_is_given_up_at_the_timeout(self) -> None:
        release = threading.Event()
        self.addCleanup(release.set)
        asked: List[str] = []

        def resolve(host: str, port: int) -> Any:
            asked.append(host)
            release.wait()
            raise OSError("the test ended")

        client = AuditClient("http://audit.example:4000/graphql", "token", batching=False, resolve=resolve)
        self.assert_gives_up(lambda: client.finish_run(_lease(60), "INTERRUPTED", timeout=1), lambda: asked == ["audit.example"])

    def test_a_lookup_left_hanging_does_not_hold_up_the_next_ones(self) -> None:
        server = TricklingServer()
        self.addCleanup(server.close)
        port = int(server.url.split(":")[2].split("/")[0])
        release = threading.Event()
        self.addCleanup(release.set)

        def resolve(host: str, port: int) -> Any:
            if host == "stuck.example":
                release.wait()
            return socket.getaddrinfo("127.0.0.1", port, type=socket.SOCK_STREAM)

        stuck = AuditClient(f"http://stuck.example:{port}/graphql", "token", batching=False, resolve=resolve)
        self.assert_gives_up(lambda: stuck.run("run-1", timeout=1), lambda: not server.trickling.is_set())
        client = AuditClient(f"http://audit.example:{port}/graphql", "token", batching=False, resolve=resolve)
        self.assert_gives_up(lambda: client.run("run-1", timeout=1), server.trickling.is_set)

    def test_the_resolver_given_is_what_the_client_connects_by(self) -> None:
        server = TricklingServer()
        self.addCleanup(server.close)
        port = server.url.split(":")[2].split("/")[0]
        client = AuditClient(f"http://audit.example:{port}/graphql", "token", batching=False,
                             resolve=lambda host, port: socket.getaddrinfo("127.0.0.1", port, type=socket.SOCK_STREAM))
        self.assert_gives_up(lambda: client.run("run-1", timeout=1), server.trickling.is_set)

    def test_a_redirect_is_not_followed_and_names_where_it_points(self) -> None:
        server = RedirectingServer()
        self.addCleanup(server.close)
        client = AuditClient(server.url, "token", batching=False)
        with self.assertRaises(AuditApiError) as raised:
            client.finish_run(_lease(60), "INTERRUPTED", timeout=30)
        self.assertEqual(raised.exception.code, "TRANSPORT_ERROR")
        self.assertFalse(raised.exception.retryable)
        self.assertEqual(raised.exception.http_status, 302)
        self.assertIn("/graphql/1", str(raised.exception))
        self.assertEqual(server.requests, 1)


class TheLastFailureTest(unittest.TestCase):
    """A call given up at its ``timeout=`` while its attempts kept failing says why they failed (in
    its message, and as its ``__cause__``): "no answer" alone hides a wrong port or a gateway with
    no server behind it."""

    def assert_names_the_last_failure(self, url: str, failure: str, http_status: Optional[int]) -> None:
        for batching in (True, False):
            client = AuditClient(url, "token", batching=batching)
            self.addCleanup(client.close, 0)
            calls: List[Callable[[], Any]] = [lambda: client.finish_run(_lease(60), "INTERRUPTED", timeout=1),
                                              lambda: client.run("run-1", timeout=1)]
            for index, call in enumerate(calls):
                with self.subTest(batching=batching, call=index):
                    with self.assertRaises(AuditApiError) as raised:
                        call()
                    error = raised.exception
                    self.assertEqual((error.code, error.retryable), ("TRANSPORT_ERROR", True))
                    self.assertIn("no answer within 1 s", str(error))
                    self.assertIn(failure, str(error))
                    self.assertGreaterEqual(error.attempts, 2)
                    cause = error.__cause__
                    assert isinstance(cause, AuditApiError), cause
                    self.assertEqual((cause.code, cause.http_status), ("TRANSPORT_ERROR", http_status))
                    self.assertIn(failure, str(cause))

    def test_a_refused_connection_is_named(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.assert_names_the_last_failure(f"http://127.0.0.1:{port}/graphql", "ConnectionRefusedError", None)

    def test_a_gateways_503_is_named(self) -> None:
        server = GatewayServer()
        self.addCleanup(server.close)
        self.assert_names_the_last_failure(server.url, "HTTP 503", 503)


# The first lines of a child's atexit handler: prints whether this Python refuses to start a
# thread there ("real": Python 3.12) and, where it does not and `emulate` is true, makes
# Thread.start refuse as 3.12's does ("emulated").
_REFUSAL = """
def refusal(emulate):
    probe = threading.Thread(target=lambda: None)
    try:
        probe.start()
    except RuntimeError:
        print("refusal: real", flush=True)
        return
    probe.join()
    if emulate:
        def refuse(thread):
            raise RuntimeError("can't create new thread at interpreter shutdown")
        threading.Thread.start = refuse
    print("refusal: " + ("emulated" if emulate else "none"), flush=True)
"""

# Run by the interpreter under test: its first request is made while the interpreter shuts down
# (an atexit handler), where Python 3.12 starts no thread. Prints the error's code and message.
_AT_EXIT = """
import atexit, sys, threading
from datetime import datetime, timedelta, timezone
from agent_audit import AuditApiError, AuditClient, RunLease
""" + _REFUSAL + """
now = datetime.now(timezone.utc)
lease = RunLease(run_id="run-1", epoch=1, owner="worker", expires_at=(now + timedelta(seconds=60)).isoformat(), granted_at=now.isoformat())
client = AuditClient(sys.argv[1], "token", batching=sys.argv[2] == "batching")

def finish() -> None:
    refusal(emulate=False)
    try:
        client.finish_run(lease, "INTERRUPTED", timeout=1)
    except AuditApiError as error:
        print(error.code, error, flush=True)

atexit.register(finish)
"""


class InterpreterShutdownTest(unittest.TestCase):
    """Each child runs on every installed Python (tests/interpreters.py), at once: Python 3.12's
    refusal to start a thread at shutdown is met for real only where 3.12 is installed, and is
    emulated elsewhere. The interpreters that ran, and how each refused, are written to stderr."""

    refusals: Dict[str, Set[str]] = {}

    @classmethod
    def tearDownClass(cls) -> None:
        lines = [f"{interpreter}: refusal {', '.join(sorted(kinds))}" for interpreter, kinds in cls.refusals.items()]
        if not any("real" in kinds for kinds in cls.refusals.values()):
            lines.append("no Python here refuses a thread at shutdown (3.12 does): that refusal was only emulated")
        sys.stderr.write("\nInterpreterShutdownTest ran on:\n  " + "\n  ".join(lines) + "\n")

    def run_everywhere(self, script: str, *args: str, calls: int = 1) -> None:
        """Runs ``script`` with ``args`` and "batching", then "alone", on every installed Python
        at once, and checks each exited 0 having printed TRANSPORT_ERROR 'no answer within 1 s'
        for each of its ``calls``."""
        jobs = [(interpreter, batching) for interpreter in installed() for batching in ("batching", "alone")]

        def run(job: Tuple[Interpreter, str]) -> "subprocess.CompletedProcess[str]":
            return subprocess.run([job[0].path, "-c", script, *args, job[1]], capture_output=True, text=True,
                                  timeout=PATIENCE * 3, cwd=Path(__file__).resolve().parents[1])

        with ThreadPoolExecutor(len(jobs)) as pool:
            children = list(pool.map(run, jobs))
        for (interpreter, batching), child in zip(jobs, children):
            with self.subTest(interpreter=str(interpreter), batching=batching):
                self.assertEqual(child.returncode, 0, child.stderr)
                refusal = re.search(r"^refusal: (\w+)$", child.stdout, re.MULTILINE)
                assert refusal is not None, child.stdout
                self.refusals.setdefault(str(interpreter), set()).add(refusal[1])
                self.assertEqual(child.stdout.count("TRANSPORT_ERROR FinishRun: no answer within 1 s"), calls, child.stdout + child.stderr)

    def test_a_call_from_an_atexit_handler_gives_up_at_its_timeout(self) -> None:
        server = TricklingServer()
        self.addCleanup(server.close)
        # By name: the lookup, which needs a thread to be bounded, is made too.
        self.run_everywhere(_AT_EXIT, server.url.replace("127.0.0.1", "localhost"))

    def test_a_lookup_at_interpreter_shutdown_is_given_up_at_the_timeout(self) -> None:
        # Where no thread can start, a lookup made on the caller's thread would wait as long as the
        # resolver does (a system resolver's timeouts, here for ever). Each child calls twice.
        self.run_everywhere(_AT_EXIT_LOOKUP, calls=2)


# Run by the interpreter under test, which starts no thread at interpreter shutdown (Python 3.12;
# made to refuse elsewhere): the client is made at start, its first call from an atexit handler,
# a second after, the host looked up by a resolver that never answers. Prints each error's code
# and message.
_AT_EXIT_LOOKUP = """
import atexit, sys, threading, time
from datetime import datetime, timedelta, timezone
from agent_audit import AuditApiError, AuditClient, RunLease
from agent_audit import transport
""" + _REFUSAL + """
transport._lookups.idle_seconds = 0.1  # idle lookup threads end at once
now = datetime.now(timezone.utc)
lease = RunLease(run_id="run-1", epoch=1, owner="worker", expires_at=(now + timedelta(seconds=60)).isoformat(), granted_at=now.isoformat())
client = AuditClient("http://audit.example:4000/graphql", "token", batching=sys.argv[1] == "batching",
                     resolve=lambda host, port: threading.Event().wait() or [])
time.sleep(0.5)  # the process works a while

def finish():
    refusal(emulate=True)
    for _ in range(2):
        try:
            client.finish_run(lease, "INTERRUPTED", timeout=1)
        except AuditApiError as error:
            print(error.code, error, flush=True)

atexit.register(finish)
"""


# Run with HTTPS_PROXY set (urllib reads the proxies from the environment once, at import). Prints
# the error's code and message.
_THROUGH_PROXY = """
import sys
from agent_audit import AuditApiError, AuditClient

try:
    AuditClient(sys.argv[1], "token", batching=False).run("run-1", timeout=float(sys.argv[2]))
except AuditApiError as error:
    print(error.code, error, flush=True)
"""


class ThroughAProxyTest(unittest.TestCase):
    def call_through(self, proxy_url: str, server_url: str, timeout: float) -> str:
        environment = {**os.environ, "https_proxy": proxy_url, "HTTPS_PROXY": proxy_url, "no_proxy": "", "NO_PROXY": ""}
        child = subprocess.run([sys.executable, "-c", _THROUGH_PROXY, server_url, str(timeout)], capture_output=True, text=True,
                               timeout=PATIENCE * 3, cwd=Path(__file__).resolve().parents[1], env=environment)
        self.assertEqual(child.returncode, 0, child.stderr)
        return child.stdout

    def test_an_https_server_is_reached_through_the_proxys_tunnel(self) -> None:
        server = TLSServer()
        self.addCleanup(server.close)
        proxy = TunnelingProxy()
        self.addCleanup(proxy.close)
        answer = self.call_through(proxy.url, server.url, 30)
        # The handshake went through the tunnel to the server, whose certificate no one trusts.
        self.assertIn("TRANSPORT_ERROR", answer)
        self.assertIn("CERTIFICATE_VERIFY_FAILED", answer)
        port = server.url.split(":")[2].split("/")[0]
        self.assertEqual(proxy.requests, [f"CONNECT 127.0.0.1:{port} HTTP/1.1"])

    def test_a_proxy_that_trickles_its_tunnels_answer_is_given_up_on_at_the_timeout(self) -> None:
        proxy = StallingPeer(b"HTTP/1.1 200 Connection established\r\n", b"X")
        self.addCleanup(proxy.close)
        answer = self.call_through(f"http://127.0.0.1:{proxy.port}", "https://audit.example:443/graphql", 1)
        self.assertTrue(proxy.trickling.is_set())
        self.assertIn("TRANSPORT_ERROR", answer)
        self.assertIn("no answer within 1 s", answer)


if __name__ == "__main__":
    unittest.main()
