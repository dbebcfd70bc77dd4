"""Calls made where Python starts no new thread: Python 3.12 at interpreter shutdown (an atexit
handler, a thread still running after the main one returned) raises RuntimeError from
``Thread.start``. Here ``Thread.start`` is made to raise as it does there."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, List

from agent_audit import AuditClient

from .support import FAST_RETRY, LiveTestCase, LossyProxy


@contextmanager
def no_new_thread(refused: Callable[[str], bool] = lambda name: True) -> Iterator[None]:
    """``Thread.start`` raises, as at Python 3.12's interpreter shutdown, for the threads whose
    name ``refused`` takes."""
    start = threading.Thread.start

    def refusing_start(thread: threading.Thread) -> None:
        if refused(thread.name):
            raise RuntimeError("can't create new thread at interpreter shutdown")
        start(thread)

    threading.Thread.start = refusing_start  # type: ignore[method-assign]
    try:
        yield
    finally:
        threading.Thread.start = start  # type: ignore[method-assign]


class NoNewThreadTest(LiveTestCase):
    def fresh_worker(self) -> AuditClient:
        worker = AuditClient(self.server.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)
        self.addCleanup(worker.close)
        return worker

    def test_a_clients_first_calls_are_sent_from_the_callers_thread(self) -> None:
        _, run_id = self.queued_run()
        worker = self.fresh_worker()
        with no_new_thread():
            lease = worker.claim_run(run_id, 30)
            worker.finish_run(lease, "COMPLETED")
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")

    def test_start_run_leaves_the_run_queued_for_another_worker(self) -> None:
        # The client was used before (its writer's thread runs): the claim would go through, and
        # the run stay RUNNING with no thread renewing its lease.
        _, earlier = self.queued_run()
        _, run_id = self.queued_run()
        worker = self.fresh_worker()
        with worker.start_run(earlier):
            pass
        with no_new_thread():
            with self.assertRaisesRegex(RuntimeError, "interpreter shutdown"):
                worker.start_run(run_id)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "QUEUED")
        with self.worker.start_run(run_id):
            pass
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")

    def test_a_run_claimed_when_its_keeper_cannot_start_is_handed_back(self) -> None:
        # The keeper's thread alone fails (shutdown began after the claim; no resources left).
        _, run_id = self.queued_run()
        with no_new_thread(lambda name: name.startswith("lease-keeper-")):
            with self.assertRaisesRegex(RuntimeError, "interpreter shutdown"):
                self.worker.start_run(run_id)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")
        self.assertEqual(after.error, {"name": "RuntimeError", "message": "can't create new thread at interpreter shutdown"})

    def test_a_hand_back_the_server_does_not_answer_is_given_up_when_the_lease_expires(self) -> None:
        # The keeper's thread fails, and from then on the server does not answer (a partition):
        # the hand-back's finish would retry for the whole policy (here 4 attempts of 30 s). Past
        # the lease it could only be refused, so start_run raises then, and the expiry ends the run.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        worker = AuditClient(proxy.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)

        def keeper_refused(name: str) -> bool:
            if not name.startswith("lease-keeper-"):
                return False
            proxy.silent.set()
            return True

        raised: List[BaseException] = []

        def start() -> None:
            try:
                worker.start_run(run_id, lease_seconds=3)
            except BaseException as error:  # noqa: BLE001 - handed to the test
                raised.append(error)

        with no_new_thread(keeper_refused):
            starting = threading.Thread(target=start, daemon=True)
            starting.start()
            starting.join(60)
        self.assertFalse(starting.is_alive(), "start_run was still handing the run back past its lease")
        self.assertEqual([str(error) for error in raised], ["can't create new thread at interpreter shutdown"])
        after = self.run_once_ended(run_id)
        self.assertEqual((after.status, after.error and after.error.get("code")), ("FAILED", "LEASE_EXPIRED"))
