"""Short-lived tokens: ``token`` may be a function the client calls before each request, so
one client (and its lease) outlives any one token; a request refused for a token that expired
meanwhile is sent again once with the fresh one."""

from __future__ import annotations

import unittest
from typing import List

from agent_audit import AuditApiError, AuditClient

from .live_server import live_server, unique


class TokenProviderTest(unittest.TestCase):
    def setUp(self) -> None:
        self.server = live_server()

    def test_a_workers_run_survives_its_tokens_renewal(self) -> None:
        owner = AuditClient(self.server.url, self.server.token(unique("py-owner"), "superadmin"))
        run_id = owner.create_run(owner.create_thread("renewed tokens").id).id
        worker_sub = unique("py-worker")
        given: List[str] = []
        current = [self.server.token(worker_sub, "worker", 3600)]

        def provider() -> str:
            given.append(current[0])
            return current[0]

        worker = AuditClient(self.server.url, provider, batching=False)
        lease = worker.claim_run(run_id, 60)
        first = current[0]
        # The identity service renewed it (same sub, a later exp): the lease is the sub's.
        current[0] = self.server.token(worker_sub, "worker", 7200)
        self.assertNotEqual(current[0], first)
        worker.renew_lease(lease, 60)
        run = worker.finish_run(lease, "COMPLETED")
        self.assertEqual(run.status, "COMPLETED")
        self.assertEqual(given, [first, current[0], current[0]])

    def test_a_refused_token_is_replaced_once_by_the_providers_fresh_one(self) -> None:
        sub = unique("py-owner")
        expired = self.server.token(sub, "superadmin", -60)
        fresh = self.server.token(sub, "superadmin")
        queue = [expired, fresh]
        given: List[str] = []

        def provider() -> str:
            given.append(queue.pop(0) if queue else fresh)
            return given[-1]

        thread = AuditClient(self.server.url, provider).create_thread("refreshed")
        self.assertEqual(thread.owner_id, sub)
        self.assertEqual(given, [expired, fresh])
        # A provider with nothing newer: the refusal is the answer.
        with self.assertRaises(AuditApiError) as refused:
            AuditClient(self.server.url, lambda: expired).create_thread("stale")
        self.assertEqual(refused.exception.code, "UNAUTHENTICATED")


if __name__ == "__main__":
    unittest.main()
