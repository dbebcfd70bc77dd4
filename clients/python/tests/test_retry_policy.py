"""The default retry window: long enough to outlast a server restart of a few seconds."""

from __future__ import annotations

import json
import socket
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, List

from agent_audit import RetryPolicy
from agent_audit import _operations as ops
from agent_audit.transport import Transport, backoff_delay


class DefaultRetryPolicyTest(unittest.TestCase):
    def test_the_default_retries_wait_between_about_8_and_16_seconds_in_all(self) -> None:
        policy = RetryPolicy()
        shortest = [backoff_delay(policy, attempt, lambda: 0.0) for attempt in range(1, policy.max_attempts)]
        longest = [backoff_delay(policy, attempt, lambda: 1.0) for attempt in range(1, policy.max_attempts)]
        # An embedded server restarts in about 4 s; even the shortest jitter waits well past that.
        self.assertGreaterEqual(sum(shortest), 7.0)
        self.assertLessEqual(sum(longest), 16.0)
        self.assertEqual(max(longest), policy.max_delay)

    def test_a_request_sent_while_the_server_is_down_for_3_seconds_is_answered_once_it_is_back(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        bodies: List[bytes] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                answer = json.dumps({"data": {"run": {"id": "run-1"}}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
                pass

        servers: List[ThreadingHTTPServer] = []

        def come_back() -> None:
            time.sleep(3)
            server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
            servers.append(server)
            server.serve_forever()

        threading.Thread(target=come_back, daemon=True).start()
        try:
            # Nothing listens on the port for 3 s: every attempt until then is refused.
            result = Transport(f"http://127.0.0.1:{port}/graphql", "token", RetryPolicy()).execute(ops.RUN, {"id": "run-1"})
        finally:
            for server in servers:
                server.shutdown()
                server.server_close()
        self.assertEqual(result, {"id": "run-1"})
        self.assertEqual(len(bodies), 1)


if __name__ == "__main__":
    unittest.main()
