"""The batching writer against the server: runs driven at once from several threads through one
client are recorded whole, in order, and a late call gets its own LEASE_LOST; large events are cut
into requests under the server's body limit."""

from __future__ import annotations

import asyncio
import json
import signal
import textwrap
import threading
import time
from typing import Any, Dict, List, Tuple

from agent_audit import AuditApiError, AuditClient, DeclaredToolCall, ToolAudit, parse_rfc3339

from .support import LiveTestCase, LossyProxy, call_while_first_is_held


class BatchingLiveTest(LiveTestCase):
    def test_runs_driven_from_threads_through_one_client_are_recorded_whole(self) -> None:
        runs = [self.queued_run("batching") for _ in range(6)]
        outcomes: Dict[int, Any] = {}
        sent: List[str] = []
        execute = self.worker._transport.execute_answered  # noqa: SLF001 - the test counts the requests

        def counting(operation: Any, variables: Any, *options: Any) -> Any:
            sent.append(operation.name)
            return execute(operation, variables, *options)

        self.worker._transport.execute_answered = counting  # type: ignore[method-assign]  # noqa: SLF001

        def drive(index: int, run_id: str) -> None:
            lease = self.worker.claim_run(run_id, 60)
            self.worker.record_model_started(lease, f"m{index}", 1)
            self.worker.record_model_finished(lease, f"m{index}", tool_calls=[DeclaredToolCall(f"c{index}", "search", {"q": index})])
            self.worker.record_tool_started(lease, f"c{index}", "search", 2, effective_input={"q": index})
            tool = self.worker.record_tool_finished(lease, f"c{index}", {"content": "found"})
            run = self.worker.finish_run(lease, "COMPLETED")
            try:
                self.worker.renew_lease(lease)
                late: Any = None
            except AuditApiError as error:
                late = error
            outcomes[index] = (tool, run, late)

        threads = [threading.Thread(target=drive, args=(index, run_id)) for index, (_, run_id) in enumerate(runs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.worker.close()

        for index, (tool, run, late) in outcomes.items():
            self.assertEqual((tool.tool_call_id, tool.status), (f"c{index}", "COMPLETED"))
            self.assertEqual(run.status, "COMPLETED")
            self.assertIsInstance(late, AuditApiError)
            self.assertEqual(late.code, "LEASE_LOST")
        self.assertEqual(len(outcomes), len(runs))
        # 36 lifecycle calls in fewer requests: those that met in flight went together.
        self.assertIn("RecordEvents", sent)
        self.assertLess(len([name for name in sent if name != "ClaimRun"]), 36)
        for thread_id, _ in runs:
            self.assertEqual([audit.status for audit in self.owner.thread_audits(thread_id).items], ["COMPLETED", "COMPLETED"])

    def test_close_with_a_timeout_gives_up_what_the_server_does_not_answer(self) -> None:
        # A process exiting with the server out of reach (no answer: a partition) must not wait for
        # the whole retry policy (8 attempts of 30 s) of every event still queued.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        worker = AuditClient(proxy.url, self.server.token(self.worker_sub, "worker"))
        lease = worker.claim_run(run_id, 30)
        proxy.silent.set()
        outcomes: Dict[str, Any] = {}

        def call(name: str) -> None:
            try:
                outcomes[name] = worker.record_model_started(lease, name, len(outcomes) + 1, model="m", input={})
            except AuditApiError as error:
                outcomes[name] = error

        threads = [threading.Thread(target=call, args=(name,)) for name in ("in-flight", "queued")]
        writer: Any = worker._writer  # noqa: SLF001 - one call in flight, the other queued behind it
        threads[0].start()
        while not writer._sending:
            time.sleep(0.01)
        threads[1].start()
        while not writer._queue:
            time.sleep(0.01)
        self.assertFalse(worker.flush(timeout=0.2))
        worker.close(timeout=0.5)
        threads[1].join(30)
        self.assertEqual(outcomes["queued"].code, "TRANSPORT_ERROR")
        self.assertIn("no answer within", str(outcomes["queued"]))
        with self.assertRaises(RuntimeError):
            worker.finish_run(lease, "INTERRUPTED")

    def test_record_calls_with_a_timeout_give_up_when_the_server_does_not_answer(self) -> None:
        # A worker recording its tool's error on its way out (SIGTERM) with the server out of reach
        # (no answer: a partition) would wait for the whole retry policy (8 attempts of 30 s) per
        # call. ``timeout`` bounds each, as it bounds ``finish``: batched or not, the session's
        # event methods as the client's; and a worker starting another run then (its claim) gives
        # up alike, that run not taken.
        thread_id, run_id = self.queued_run()
        other_run = self.owner.create_run(thread_id).id
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        token = self.server.token(self.worker_sub, "worker")
        worker = AuditClient(proxy.url, token)
        self.addCleanup(worker.close, 0)
        unbatched = AuditClient(proxy.url, token, batching=False)
        run = worker.start_run(run_id, lease_seconds=10)
        run.model_started("model-1", model="m", input={})
        run.model_finished("model-1", tool_calls=[DeclaredToolCall("call-1", "search", {})])
        run.tool_started("call-1", "search", effective_input={})
        lease = run.lease
        proxy.silent.set()

        async def start_async() -> None:
            async with worker.start_run_async(other_run, timeout=0.3):
                pass

        calls = {
            "run.tool_error": lambda: run.tool_error("call-1", {"message": "stopped"}, timeout=0.3),
            "record_model_started": lambda: unbatched.record_model_started(lease, "model-2", 10, model="m", input={}, timeout=0.3),
            "record_model_finished": lambda: unbatched.record_model_finished(lease, "model-2", timeout=0.3),
            "record_tool_started": lambda: unbatched.record_tool_started(lease, "call-2", "search", 11, timeout=0.3),
            "record_tool_finished": lambda: unbatched.record_tool_finished(lease, "call-1", {"status": "success"}, timeout=0.3),
            "record_tool_error": lambda: unbatched.record_tool_error(lease, "call-1", {"message": "stopped"}, timeout=0.3),
            "run.finish": lambda: run.finish("INTERRUPTED", timeout=0.3),  # also stops its lease keeper
            "claim_run": lambda: worker.claim_run(other_run, timeout=0.3),
            "claim_run unbatched": lambda: unbatched.claim_run(other_run, timeout=0.3),
            "start_run": lambda: worker.start_run(other_run, timeout=0.3),
            "start_run_async": lambda: asyncio.run(start_async()),
        }
        for name, call in calls.items():
            with self.subTest(name):
                with self.assertRaises(AuditApiError) as raised:
                    call()
                self.assertEqual(raised.exception.code, "TRANSPORT_ERROR")
                self.assertIn("no answer within 0.3 s", str(raised.exception))
        other = self.owner.run(other_run)
        assert other is not None
        self.assertEqual(other.status, "QUEUED")

    def test_a_call_left_by_a_stop_while_queued_is_never_sent_and_closing_does_not_wait_for_it(self) -> None:
        # A worker whose call gave up (its timeout) with the server out of reach, that request still
        # retrying, makes another call, queued behind it, and is stopped (SIGTERM's sys.exit()):
        # leaving ``with AuditClient(...)`` waited for the queued call to be sent, so for the
        # request ahead of it, through the whole retry policy (8 attempts of 30 s).
        self.assert_stopped_with_the_server_silent_exits(textwrap.dedent("""
            import signal, sys, threading, time
            from agent_audit import AuditApiError, AuditClient
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
            with AuditClient(sys.argv[1], sys.argv[2]) as worker:
                try:
                    worker.claim_run(sys.argv[3], timeout=0.3)
                except AuditApiError:
                    pass  # given up; its request goes on

                def say_when_queued():
                    while not worker._writer._queue:
                        time.sleep(0.01)
                    print("working", flush=True)

                threading.Thread(target=say_when_queued, daemon=True).start()
                worker.claim_run(sys.argv[3])  # queued behind it, left by the stop
        """))

    def test_leaving_with_audit_client_close_timeout_on_a_stop_gives_up_another_threads_call(self) -> None:
        # A worker's daemon thread waits, with no timeout, for a call the server does not answer,
        # and the main thread is stopped (SIGTERM's sys.exit()): leaving ``with AuditClient(...)``
        # waited for that call through the whole retry policy (8 attempts of 30 s).
        # ``close_timeout`` bounds that close.
        self.assert_stopped_with_the_server_silent_exits(textwrap.dedent("""
            import signal, sys, threading, time
            from agent_audit import AuditClient
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
            with AuditClient(sys.argv[1], sys.argv[2], close_timeout=1) as worker:
                threading.Thread(target=worker.claim_run, args=(sys.argv[3],), daemon=True).start()
                while not worker._writer._sending:
                    time.sleep(0.01)
                print("working", flush=True)
                while True:
                    time.sleep(1)
        """))

    def assert_stopped_with_the_server_silent_exits(self, agent: str) -> None:
        """Runs ``agent`` (see ``start_agent``; its SIGTERM handler exits with "stopped by SIGTERM")
        with a new run's every request held unanswered, sends it SIGTERM, and checks it exited
        with the run still QUEUED."""
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        proxy.silent.set()
        process = self.start_agent(agent, proxy.url, run_id)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        self.assertIn("stopped by SIGTERM", stderr)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "QUEUED")

    def test_a_request_held_in_flight_does_not_stop_another_runs_renewals(self) -> None:
        # Run A's event is answered slowly (a slow link, a large upload) while run B, with a short
        # lease, only renews it: B's lease must outlive its length and the server's sweeps.
        thread_id, run_a = self.queued_run("a held request")
        run_b = self.owner.create_run(thread_id).id
        lease_a = self.worker.claim_run(run_a, 60)
        execute = self.worker._transport.execute_answered  # noqa: SLF001 - the test holds A's request
        in_flight = threading.Event()
        release = threading.Event()

        def holding(operation: Any, variables: Any, *options: Any) -> Any:
            if operation.name == "RecordModelStarted" and not in_flight.is_set():
                in_flight.set()
                release.wait(60)
            return execute(operation, variables, *options)

        self.worker._transport.execute_answered = holding  # type: ignore[method-assign]  # noqa: SLF001
        # Renewed every 5 s, each renewal with 10 s to commit before the lease expires: room for a
        # loaded machine (a 4 s lease left 2.7 s).
        lease_seconds = 15
        with self.worker.start_run(run_b, lease_seconds=lease_seconds) as run:
            first_expiry = run.lease.expires_at
            slow = threading.Thread(target=lambda: self.worker.record_model_started(lease_a, "a1", 1))
            slow.start()
            try:
                self.assertTrue(in_flight.wait(10), "run A's request was never held in flight")
                time.sleep(lease_seconds + 1.5)  # past B's first lease, and past a sweep (every second)
                self.assertFalse(run.lost.is_set())
                during = self.owner.run(run_b)
                assert during is not None
                self.assertEqual(during.status, "RUNNING")
                self.assertGreater(parse_rfc3339(run.lease.expires_at), parse_rfc3339(first_expiry))
            finally:
                release.set()
                slow.join(30)
        after = self.owner.run(run_b)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")
        self.assertEqual(self.worker.finish_run(lease_a, "COMPLETED").status, "COMPLETED")

    def test_one_threads_bad_value_fails_only_its_own_call_in_a_shared_batch(self) -> None:
        # C's event held in flight makes the three calls below queue and go in one recordEvents,
        # which the server refuses whole for the one observed_at its DateTime scalar does not take.
        thread_id, run_a = self.queued_run("one bad value in a batch")
        run_b = self.owner.create_run(thread_id).id
        run_c = self.owner.create_run(thread_id).id
        lease_a, lease_b, lease_c = (self.worker.claim_run(run_id, 60) for run_id in (run_a, run_b, run_c))
        sent: List[str] = []
        execute = self.worker._transport.execute_answered  # noqa: SLF001 - the test holds C's event
        in_flight = threading.Event()
        release = threading.Event()

        def holding(operation: Any, variables: Any, *options: Any) -> Any:
            sent.append(operation.name)
            if operation.name == "RecordModelStarted" and not in_flight.is_set():
                in_flight.set()
                release.wait(10)
            return execute(operation, variables, *options)

        self.worker._transport.execute_answered = holding  # type: ignore[method-assign]  # noqa: SLF001
        calls = [
            ("c", lambda: self.worker.record_model_started(lease_c, "c1", 1, model="m")),
            ("a1", lambda: self.worker.record_model_started(lease_a, "a1", 1, model="m", input={"healthy": True})),
            ("b1", lambda: self.worker.record_model_started(lease_b, "b1", 1, model="m", observed_at="2026-12-05 13:00:00")),
            ("a2", lambda: self.worker.record_model_started(lease_a, "a2", 2, model="m", input={"healthy": True})),
        ]
        writer = self.worker._writer  # noqa: SLF001 - the test waits for the calls to queue
        assert writer is not None
        outcomes = call_while_first_is_held(writer, in_flight, release, calls)

        self.assertEqual(sent[:2], ["RecordModelStarted", "RecordEvents"])
        self.assertEqual(outcomes["c"].operation_id, "c1")
        self.assertEqual([outcomes[name].operation_id for name in ("a1", "a2")], ["a1", "a2"])
        self.assertIsInstance(outcomes["b1"], AuditApiError)
        self.assertEqual((outcomes["b1"].code, outcomes["b1"].operation), ("BAD_USER_INPUT", "RecordModelStarted"))
        stored = [(audit.run_id, audit.operation_id) for audit in self.owner.thread_audits(thread_id).items]
        self.assertEqual(sorted(stored), sorted([(run_a, "a1"), (run_a, "a2"), (run_c, "c1")]))

    def test_concurrent_large_events_are_cut_into_requests_under_the_body_limit(self) -> None:
        thread_id, run_id = self.queued_run("batches by bytes")
        self.worker.max_json_bytes = 16 * 1024 * 1024  # the client's own cut further off than the server's limits
        calls = [f"c{index}" for index in range(12)] + ["huge"]
        sent: List[Tuple[str, int, List[str]]] = []
        execute = self.worker._transport.execute_answered  # noqa: SLF001 - the test measures the requests

        def measuring(operation: Any, variables: Any, *options: Any) -> Any:
            events = [next(iter(event.values()))["toolCallId"] for event in variables["events"]] if "events" in variables else [variables["input"]["toolCallId"]]
            body = json.dumps({"query": operation.document, "operationName": operation.name, "variables": variables}, separators=(",", ":"))
            sent.append((operation.name, len(body.encode("utf-8")), events))
            return execute(operation, variables, *options)

        lease = self.worker.claim_run(run_id, 120)
        self.worker.record_model_started(lease, "m", 1)
        self.worker.record_model_finished(lease, "m", tool_calls=[DeclaredToolCall(call, "fetch", {}) for call in calls])
        for index, call in enumerate(calls):
            self.worker.record_tool_started(lease, call, "fetch", 10 + index)

        # Twelve outputs of 900 kB from twelve threads at once (each accepted alone; 10.8 MB
        # together, over the server's 8 MiB body limit), and one of 9 MB, which no request can carry.
        self.worker._transport.execute_answered = measuring  # type: ignore[method-assign]  # noqa: SLF001
        outcomes: Dict[str, Any] = {}
        gate = threading.Barrier(len(calls))

        def finish(index: int, call: str) -> None:
            content = "x" * (9_000_000 if call == "huge" else 900_000)
            gate.wait()
            try:
                outcomes[call] = self.worker.record_tool_finished(lease, call, {"content": content}, sequence=100 + index)
            except AuditApiError as error:
                outcomes[call] = error

        threads = [threading.Thread(target=finish, args=(index, call)) for index, call in enumerate(calls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        self.worker._transport.execute_answered = execute  # type: ignore[method-assign]  # noqa: SLF001

        for call in calls[:12]:
            self.assertNotIsInstance(outcomes[call], AuditApiError, call)
            self.assertEqual((outcomes[call].tool_call_id, outcomes[call].status), (call, "COMPLETED"))
        # What its own mutation answers: the server's 413, for it alone.
        huge = outcomes["huge"]
        self.assertIsInstance(huge, AuditApiError)
        self.assertEqual((huge.code, huge.http_status, huge.operation), ("BAD_USER_INPUT", 413, "RecordToolFinished"))
        # Every request under the limit but the huge event's, which went alone; the large events
        # still shared requests; each sent once.
        limit = 8 * 1024 * 1024
        self.assertEqual([(name, events) for name, size, events in sent if size >= limit], [("RecordToolFinished", ["huge"])])
        self.assertTrue(any(name == "RecordEvents" and len(events) > 1 for name, _, events in sent))
        self.assertEqual(sorted(event for _, _, events in sent for event in events), sorted(calls))
        self.worker.finish_run(lease, "COMPLETED")
        self.worker.close()

        tools = [item for item in self.owner.thread_audits(thread_id).items if isinstance(item, ToolAudit) and item.tool_call_id != "huge"]
        self.assertEqual(
            [(tool.tool_call_id, tool.status, len(tool.output["content"])) for tool in tools],  # type: ignore[index,arg-type]
            [(call, "COMPLETED", 900_000) for call in calls[:12]],
        )

    def test_small_events_written_at_once_go_together(self) -> None:
        _, run_id = self.queued_run("small batches")
        calls = [f"c{index}" for index in range(12)]
        sent: List[str] = []
        execute = self.worker._transport.execute_answered  # noqa: SLF001 - the test counts the requests

        def counting(operation: Any, variables: Any, *options: Any) -> Any:
            sent.append(operation.name)
            return execute(operation, variables, *options)

        lease = self.worker.claim_run(run_id, 120)
        self.worker.record_model_started(lease, "m", 1)
        self.worker.record_model_finished(lease, "m", tool_calls=[DeclaredToolCall(call, "fetch", {}) for call in calls])
        self.worker._transport.execute_answered = counting  # type: ignore[method-assign]  # noqa: SLF001
        gate = threading.Barrier(len(calls))

        def start(index: int, call: str) -> None:
            gate.wait()
            self.worker.record_tool_started(lease, call, "fetch", 10 + index)

        threads = [threading.Thread(target=start, args=(index, call)) for index, call in enumerate(calls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.worker.close()
        self.assertIn("RecordEvents", sent)
        self.assertLess(len(sent), len(calls))
