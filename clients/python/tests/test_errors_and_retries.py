"""Errors carry the contract's code and whether to retry; only transport failures are retried."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import socket
import threading
import urllib.request
import uuid
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Dict, List, Tuple

from agent_audit import TRANSPORT_ERROR, AuditApiError, AuditClient, DeclaredToolCall, LeaseLostError, RetryPolicy

from .support import FAST_RETRY, LiveTestCase, LossyProxy, call_while_first_is_held


class ClaimTest(LiveTestCase):
    def test_a_claim_resent_with_its_claim_id_gets_the_same_lease(self) -> None:
        _, run_id = self.queued_run()
        claim_id = str(uuid.uuid4())
        first = self.worker.claim_run(run_id, 30, claim_id)
        again = self.worker.claim_run(run_id, 30, claim_id)
        self.assertEqual((again.run_id, again.epoch, again.owner), (first.run_id, first.epoch, self.worker_sub))

    def test_a_second_claim_without_the_claim_id_is_invalid_and_not_retried(self) -> None:
        _, run_id = self.queued_run()
        self.worker.claim_run(run_id, 30)
        with self.assertRaises(AuditApiError) as raised:
            self.worker.claim_run(run_id, 30)
        self.assertEqual((raised.exception.code, raised.exception.retryable, raised.exception.attempts),
                         ("INVALID_TRANSITION", False, 1))


class LostAnswersTest(LiveTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.proxy = LossyProxy(self.server.url)
        self.addCleanup(self.proxy.close)
        self.lossy_worker = AuditClient(self.proxy.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)

    def test_every_call_whose_answer_is_lost_is_resent_byte_identical_and_recorded_once(self) -> None:
        thread_id, run_id = self.queued_run()
        with self.lossy_worker.start_run(run_id, lease_seconds=60) as run:
            run.model_started("model-1", model="gpt-x", input={"messages": [{"role": "user", "content": "hi"}]})
            run.model_finished("model-1", output={"content": ""}, tool_calls=[DeclaredToolCall("call-1", "echo", {"x": 1})])
            run.tool_started("call-1", "echo", effective_input={"x": 1})
            run.tool_finished("call-1", {"content": "1", "status": "success"})
        # Each body went out twice, the same bytes: its first answer was lost, the resend answered.
        sent = [json.loads(body)["operationName"] for body in self.proxy.bodies]
        self.assertEqual(sent, [name for name in ("ClaimRun", "RecordModelStarted", "RecordModelFinished",
                                                  "RecordToolStarted", "RecordToolFinished", "FinishRun")
                                for _ in range(2)])
        self.assertTrue(all(self.proxy.bodies[i] == self.proxy.bodies[i + 1] for i in range(0, len(self.proxy.bodies), 2)))
        # The claim's retry got its lease back, and the finish's retry found the run ended by it.
        self.assertIsNone(run.finished)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")
        self.assertEqual([(item.operation_id, item.status) for item in self.owner.thread_audits(thread_id).items],
                         [("model-1", "COMPLETED"), ("call-1", "COMPLETED")])

    def test_an_event_refused_in_a_batch_sent_twice_says_it_was_sent_twice(self) -> None:
        # The batch's first answer is lost (the server committed it) and the batch is sent again:
        # a LEASE_LOST in the second answer carries attempts 2, the documented hint that the first
        # send may have committed.
        thread_id, run_a = self.queued_run()
        run_b = self.owner.create_run(thread_id).id
        lease_a = self.worker.claim_run(run_a, 60)
        lease_b = self.worker.claim_run(run_b, 60)
        self.worker.finish_run(lease_b, "COMPLETED")
        transport = self.lossy_worker._transport  # noqa: SLF001 - the test holds the first request
        writer = self.lossy_worker._writer  # noqa: SLF001
        assert writer is not None
        execute = transport.execute_answered
        in_flight = threading.Event()
        release = threading.Event()

        def holding(operation: Any, variables: Any, *options: Any) -> Any:
            if not in_flight.is_set():
                in_flight.set()
                release.wait(10)
            return execute(operation, variables, *options)

        transport.execute_answered = holding  # type: ignore[method-assign]
        calls: List[Tuple[str, Callable[[], Any]]] = [
            ("warm", lambda: self.lossy_worker.record_model_started(lease_a, "a0", 1, model="m")),
            ("a1", lambda: self.lossy_worker.record_model_started(lease_a, "a1", 2, model="m")),
            ("b", lambda: self.lossy_worker.record_model_started(lease_b, "b1", 1, model="m")),
        ]
        outcomes = call_while_first_is_held(writer, in_flight, release, calls)

        sent = [json.loads(body)["operationName"] for body in self.proxy.bodies]
        self.assertEqual(sent, ["RecordModelStarted", "RecordModelStarted", "RecordEvents", "RecordEvents"])
        self.assertEqual(outcomes["a1"].operation_id, "a1")
        refused = outcomes["b"]
        self.assertIsInstance(refused, AuditApiError)
        self.assertEqual((refused.code, refused.operation, refused.attempts, refused.http_status, refused.run_status),
                         ("LEASE_LOST", "RecordModelStarted", 2, 200, "COMPLETED"))

    def test_a_finish_whose_answer_is_lost_does_not_report_the_lease_lost(self) -> None:
        # The retry's LEASE_LOST says the run ended as asked: the session ended it, nobody took
        # it away, so on_lost is not called and ``lost`` stays clear.
        _, run_id = self.queued_run()
        told: List[str] = []
        with self.lossy_worker.start_run(run_id, lease_seconds=60, on_lost=lambda error: told.append(error.code)) as run:
            run.model_started("model-1", model="gpt-x", input={})
        self.assertIsNone(run.finished)
        self.assertEqual(told, [])
        self.assertFalse(run.lost.is_set())

    def test_a_finish_whose_retry_finds_the_run_ended_otherwise_raises_with_how_it_ended(self) -> None:
        # The finish's first send never reaches the server, the owner cancels meanwhile, and the
        # resend answers LEASE_LOST after two attempts: the refusal's run status tells this
        # apart from a finish whose own first send ended the run (the test above).
        self.proxy.mode = "gateway_first"
        _, run_id = self.queued_run()
        with self.lossy_worker.start_run(run_id, lease_seconds=60) as run:
            def cancel_before_the_resend(body: bytes) -> None:
                if json.loads(body)["operationName"] == "FinishRun":
                    self.owner.cancel_run(run_id)

            self.proxy.on_first_send = cancel_before_the_resend
            with self.assertRaises(LeaseLostError) as raised:
                run.finish("COMPLETED")
        self.assertEqual((raised.exception.attempts, raised.exception.run_status), (2, "CANCELLED"))

    def test_a_gateway_answer_is_retried(self) -> None:
        self.proxy.mode = "gateway_first"
        _, run_id = self.queued_run()
        lease = self.lossy_worker.claim_run(run_id, 30)
        self.assertEqual(lease.owner, self.worker_sub)
        self.assertEqual(len(self.proxy.bodies), 2)

    def test_an_unavailable_answer_is_retried_and_the_write_replays(self) -> None:
        self.proxy.mode = "unavailable_first"
        thread_id, run_id = self.queued_run()
        with self.lossy_worker.start_run(run_id, lease_seconds=60) as run:
            run.model_started("model-1", model="gpt-x", input={"messages": []})
        # Each body went out twice: UNAVAILABLE first, then the resend, recorded once.
        sent = [json.loads(body)["operationName"] for body in self.proxy.bodies]
        self.assertEqual(sent, [name for name in ("ClaimRun", "RecordModelStarted", "FinishRun") for _ in range(2)])
        self.assertEqual([item.operation_id for item in self.owner.thread_audits(thread_id).items], ["model-1"])

    def test_creations_whose_answers_are_lost_are_resent_and_make_one_thread_with_one_run(self) -> None:
        owner = AuditClient(self.proxy.url, self.server.token(self.owner_sub, "superadmin"), retry=FAST_RETRY)
        thread = owner.create_thread("lost")
        run = owner.create_run(thread.id)
        sent = [json.loads(body)["operationName"] for body in self.proxy.bodies]
        self.assertEqual(sent, ["CreateThread", "CreateThread", "CreateRun", "CreateRun"])
        self.assertEqual(self.proxy.bodies[0], self.proxy.bodies[1])
        self.assertEqual(self.proxy.bodies[2], self.proxy.bodies[3])
        self.assertEqual([t["id"] for t in self.owner_threads()], [thread.id])
        self.assertEqual(self.run_ids(thread.id), [run.id])

    def test_creations_answered_unavailable_are_resent_and_make_one_thread_with_one_run(self) -> None:
        self.proxy.mode = "unavailable_first"
        owner = AuditClient(self.proxy.url, self.server.token(self.owner_sub, "superadmin"), retry=FAST_RETRY)
        thread = owner.create_thread("unavailable")
        run = owner.create_run(thread.id)
        sent = [json.loads(body)["operationName"] for body in self.proxy.bodies]
        self.assertEqual(sent, ["CreateThread", "CreateThread", "CreateRun", "CreateRun"])
        self.assertEqual([t["id"] for t in self.owner_threads()], [thread.id])
        self.assertEqual(self.run_ids(thread.id), [run.id])

    def test_a_create_id_kept_by_the_caller_gets_the_same_thread_and_run_again(self) -> None:
        thread = self.owner.create_thread("kept", create_id="order-42/thread")
        run = self.owner.create_run(thread.id, create_id="order-42/run-1")
        self.assertEqual(self.owner.create_thread("kept", create_id="order-42/thread").id, thread.id)
        self.assertEqual(self.owner.create_run(thread.id, create_id="order-42/run-1").id, run.id)
        with self.assertRaises(AuditApiError) as raised:
            self.owner.create_thread("another title", create_id="order-42/thread")
        self.assertEqual((raised.exception.code, raised.exception.attempts), ("CONFLICT", 1))
        self.assertEqual(self.run_ids(thread.id), [run.id])

    def test_a_message_is_not_retried(self) -> None:
        thread = self.owner.create_thread("message")
        owner = AuditClient(self.proxy.url, self.server.token(self.owner_sub, "superadmin"), retry=FAST_RETRY)
        with self.assertRaises(AuditApiError) as raised:
            owner.append_message(thread.id, "USER", "hello")
        self.assertEqual((raised.exception.code, raised.exception.retryable, raised.exception.attempts),
                         (TRANSPORT_ERROR, True, 1))
        self.assertEqual(len(self.proxy.bodies), 1)

    def read(self, query: str, variables: Dict[str, Any]) -> Dict[str, Any]:
        """What the server holds, read as the owner straight from it (not through the proxy)."""
        request = urllib.request.Request(
            self.server.url, data=json.dumps({"query": query, "variables": variables}).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.server.token(self.owner_sub, 'superadmin')}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["data"]

    def owner_threads(self) -> List[Dict[str, Any]]:
        return [edge["node"] for edge in self.read(
            "query($o: String!) { threads(first: 100, ownerId: $o) { edges { node { id } } } }",
            {"o": self.owner_sub})["threads"]["edges"]]

    def run_ids(self, thread_id: str) -> List[str]:
        thread = self.read("query($id: ID!) { thread(id: $id) { runCount runs { id } } }", {"id": thread_id})["thread"]
        self.assertEqual(thread["runCount"], len(thread["runs"]))
        return [run["id"] for run in thread["runs"]]


class RefusedTest(LiveTestCase):
    def test_no_server_is_a_retryable_transport_error_after_every_attempt(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        client = AuditClient(f"http://127.0.0.1:{port}/graphql", "x", retry=RetryPolicy(max_attempts=3, base_delay=0.01))
        with self.assertRaises(AuditApiError) as raised:
            client.claim_run("any", 30)
        self.assertEqual((raised.exception.code, raised.exception.retryable, raised.exception.attempts),
                         (TRANSPORT_ERROR, True, 3))

    def test_a_bad_token_is_unauthenticated(self) -> None:
        client = AuditClient(self.server.url, self.server.token(self.worker_sub, "worker") + "x")
        with self.assertRaises(AuditApiError) as raised:
            client.claim_run("any", 30)
        self.assertEqual((raised.exception.code, raised.exception.retryable), ("UNAUTHENTICATED", False))

    def test_an_owner_may_not_claim(self) -> None:
        _, run_id = self.queued_run()
        with self.assertRaises(AuditApiError) as raised:
            self.owner.claim_run(run_id, 30)
        self.assertEqual(raised.exception.code, "FORBIDDEN")

    def test_a_replay_with_other_content_is_a_conflict_sent_once(self) -> None:
        _, run_id = self.queued_run()
        with self.worker.start_run(run_id) as run:
            run.model_started("model-1", model="gpt-x", input={"n": 1}, sequence=1)
            with self.assertRaises(AuditApiError) as raised:
                run.model_started("model-1", model="gpt-x", input={"n": 2}, sequence=1)
            self.assertEqual((raised.exception.code, raised.exception.retryable, raised.exception.attempts), ("CONFLICT", False, 1))

    def test_a_tool_start_nobody_declared_is_model_not_found(self) -> None:
        _, run_id = self.queued_run()
        with self.worker.start_run(run_id) as run:
            with self.assertRaises(AuditApiError) as raised:
                run.tool_started("call-unknown", "search", effective_input={})
            self.assertEqual(raised.exception.code, "MODEL_NOT_FOUND")

    def test_a_json_value_over_the_limit_is_bad_user_input(self) -> None:
        _, run_id = self.queued_run()
        self.worker.max_json_bytes = 16 * 1024 * 1024  # a client told a larger limit than the server's
        with self.worker.start_run(run_id) as run:
            with self.assertRaises(AuditApiError) as raised:
                run.model_started("model-1", model="gpt-x", input={"pad": "x" * (1024 * 1024 + 1)})
            self.assertEqual((raised.exception.code, raised.exception.retryable), ("BAD_USER_INPUT", False))

    def test_a_body_over_the_server_limit_is_a_413_that_is_not_retried_and_changes_nothing(self) -> None:
        thread_id, run_id = self.queued_run()
        self.worker.max_json_bytes = 16 * 1024 * 1024  # the client's own cut further off than the server's limits
        with self.worker.start_run(run_id) as run:
            run.model_started("model-1", model="gpt-x", input={})
            run.model_finished("model-1", tool_calls=[DeclaredToolCall("call-1", "dump", {})])
            run.tool_started("call-1", "dump", effective_input={})
            with self.assertRaises(AuditApiError) as raised:
                run.tool_finished("call-1", {"content": "x" * (9 * 1024 * 1024), "status": "success"})
            error = raised.exception
            self.assertEqual((error.code, error.http_status, error.retryable, error.attempts), ("BAD_USER_INPUT", 413, False, 1))
            self.assertIn("Request body exceeds", str(error))
            tool = self.owner.thread_audits(thread_id).items[-1]
            self.assertEqual((tool.operation_id, tool.status), ("call-1", "RUNNING"))
            run.tool_finished("call-1", {"content": "too large to keep", "status": "error"})


def _write_after_a_cancel(url: str, worker_token: str, owner_token: str, run_id: str) -> None:
    """In a pool's process: a run's write after its owner cancelled it raises LeaseLostError."""
    worker, owner = AuditClient(url, worker_token), AuditClient(url, owner_token)
    with worker.start_run(run_id) as run:
        owner.cancel_run(run_id)
        run.model_started("model-1")


class ProcessPoolTest(LiveTestCase):
    def test_an_error_raised_in_a_pools_process_reaches_the_caller_whole(self) -> None:
        # A process pool sends its worker's exception back pickled: an error that cannot be
        # unpickled breaks the whole pool (BrokenProcessPool) instead.
        _, run_id = self.queued_run()
        tokens = (self.server.token(self.worker_sub, "worker"), self.server.token(self.owner_sub, "superadmin"))
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            with self.assertRaises(LeaseLostError) as raised:
                pool.submit(_write_after_a_cancel, self.server.url, *tokens, run_id).result(timeout=120)
        error = raised.exception
        self.assertEqual((error.run_id, error.code, error.operation, error.retryable, error.run_status),
                         (run_id, "LEASE_LOST", "RecordModelStarted", False, "CANCELLED"))
        self.assertEqual((error.cause.code, error.cause.http_status), ("LEASE_LOST", error.http_status))
        self.assertIn("stop working on this run", str(error))
        copied = pickle.loads(pickle.dumps(error.cause))
        self.assertEqual((type(copied), str(copied), copied.errors, copied.attempts),
                         (AuditApiError, str(error.cause), error.cause.errors, error.cause.attempts))
