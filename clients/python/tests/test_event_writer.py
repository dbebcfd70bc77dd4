"""The client's batching writer, offline: a transport that holds its first request shows that the
events written meanwhile go together, each answered by its own result or error."""

from __future__ import annotations

import threading
import unittest
from typing import Any, List, Mapping

from agent_audit import AuditApiError, AuditClient
from agent_audit import _operations as ops
from agent_audit.event_writer import EventWriter

from .support import call_while_first_is_held


class HeldTransport:
    """Answers tool starts; the first request waits until ``release`` is set."""

    def __init__(self, refuse: Mapping[str, str]) -> None:
        self.requests: List[Any] = []
        self.in_flight = threading.Event()
        self.release = threading.Event()
        self.refuse = refuse

    def execute(self, operation: ops.Operation, variables: Mapping[str, Any], **options: Any) -> Any:
        self.requests.append((operation.name, variables))
        if len(self.requests) == 1:
            self.in_flight.set()
            self.release.wait(5)
        if operation is ops.RECORD_EVENTS:
            results = []
            for index, event in enumerate(variables["events"]):
                call = event["toolStarted"]["toolCallId"]
                code = self.refuse.get(call)
                error = {"code": code, "message": f"refused {call}"} if code else None
                results.append({"index": index, "audit": None if code else {"toolCallId": call}, "run": None, "lease": None, "error": error})
            return results
        return {"toolCallId": variables["input"]["toolCallId"]}

    def execute_answered(self, operation: ops.Operation, variables: Mapping[str, Any], *options: Any) -> Any:
        """The result, the sends it took and the answer's HTTP status (one send, 200)."""
        return self.execute(operation, variables), 1, 200


def send_while_first_is_held(transport: HeldTransport, writer: EventWriter, names: List[str]) -> dict:
    """Writes ``names`` from threads: the first alone (held), the rest queued meanwhile, in order."""
    calls = [(name, lambda name=name: start(writer, name)) for name in names]
    return call_while_first_is_held(writer, transport.in_flight, transport.release, calls, wait_seconds=5)


def start(writer: EventWriter, call: str) -> Any:
    return writer.write("toolStarted", ops.RECORD_TOOL_STARTED, {"input": {"toolCallId": call, "name": "search"}})


class EventWriterTest(unittest.TestCase):
    def test_events_written_while_a_request_is_in_flight_go_together_each_with_its_own_answer(self) -> None:
        transport = HeldTransport({"c2": "LEASE_LOST"})
        writer = EventWriter(transport)  # type: ignore[arg-type]
        answers: dict = {}

        def call(name: str) -> None:
            try:
                answers[name] = start(writer, name)
            except AuditApiError as error:
                answers[name] = error

        first = threading.Thread(target=call, args=("c0",))
        first.start()
        self.assertTrue(transport.in_flight.wait(5))
        rest = []
        for name in ("c1", "c2", "c3"):
            thread = threading.Thread(target=call, args=(name,))
            thread.start()
            rest.append(thread)
            # Queued in this order before the first request is answered.
            while len(writer._queue) < len(rest):  # noqa: SLF001 - the test waits for its own writes
                threading.Event().wait(0.001)
        transport.release.set()
        for thread in [first, *rest]:
            thread.join(5)
        writer.flush()

        self.assertEqual([name for name, _ in transport.requests], ["RecordToolStarted", "RecordEvents"])
        self.assertEqual([event["toolStarted"]["toolCallId"] for event in transport.requests[1][1]["events"]], ["c1", "c2", "c3"])
        self.assertEqual(answers["c0"], {"toolCallId": "c0"})
        self.assertEqual(answers["c1"], {"toolCallId": "c1"})
        self.assertEqual(answers["c3"], {"toolCallId": "c3"})
        refused = answers["c2"]
        self.assertIsInstance(refused, AuditApiError)
        self.assertEqual((refused.code, refused.operation, refused.retryable), ("LEASE_LOST", "RecordToolStarted", False))

    def test_callers_answered_together_send_their_next_events_together(self) -> None:
        transport = HeldTransport({})
        writer = EventWriter(transport)  # type: ignore[arg-type]

        def run(name: str) -> None:
            start(writer, name)
            start(writer, "next-" + name)

        first = threading.Thread(target=start, args=(writer, "c0"))
        first.start()
        self.assertTrue(transport.in_flight.wait(5))
        runs = [threading.Thread(target=run, args=(name,)) for name in ("c1", "c2", "c3", "c4")]
        for count, thread in enumerate(runs, start=1):
            thread.start()
            while len(writer._queue) < count:  # noqa: SLF001 - the test waits for its own writes
                threading.Event().wait(0.001)
        transport.release.set()
        for thread in [first, *runs]:
            thread.join(5)
        writer.flush()

        sent = [
            sorted(event["toolStarted"]["toolCallId"] for event in variables["events"]) if name == "RecordEvents" else [variables["input"]["toolCallId"]]
            for name, variables in transport.requests[1:]
        ]
        # Each run's next event waits for its previous one's answer; answered in one request, the
        # four next events go in one request too, not the first alone and the rest after it.
        self.assertEqual(sent, [["c1", "c2", "c3", "c4"], ["next-c1", "next-c2", "next-c3", "next-c4"]])

    def test_an_event_goes_at_once_as_its_own_mutation_when_idle(self) -> None:
        transport = HeldTransport({})
        transport.release.set()
        writer = EventWriter(transport)  # type: ignore[arg-type]
        self.assertEqual(start(writer, "c9"), {"toolCallId": "c9"})
        self.assertEqual([name for name, _ in transport.requests], ["RecordToolStarted"])

    def test_a_full_queue_makes_a_writer_wait_for_room_and_order_is_kept(self) -> None:
        transport = HeldTransport({})
        writer = EventWriter(transport, max_queued=2)  # type: ignore[arg-type]
        threads = {name: threading.Thread(target=start, args=(writer, name)) for name in ("c0", "c1", "c2", "c3")}
        threads["c0"].start()
        self.assertTrue(transport.in_flight.wait(5))
        for name in ("c1", "c2"):
            threads[name].start()
            while name not in [event.variables["input"]["toolCallId"] for event in writer._queue]:  # noqa: SLF001
                threading.Event().wait(0.001)
        threads["c3"].start()
        threads["c3"].join(0.2)
        # The queue is full: c3's writer waits, unqueued, while the first request is in flight.
        self.assertTrue(threads["c3"].is_alive())
        self.assertEqual([event.variables["input"]["toolCallId"] for event in writer._queue], ["c1", "c2"])  # noqa: SLF001
        transport.release.set()
        for thread in threads.values():
            thread.join(5)
        writer.flush()
        sent = [
            [event["toolStarted"]["toolCallId"] for event in variables["events"]] if name == "RecordEvents" else [variables["input"]["toolCallId"]]
            for name, variables in transport.requests
        ]
        self.assertEqual([call for request in sent for call in request], ["c0", "c1", "c2", "c3"])
        self.assertEqual(sent[:2], [["c0"], ["c1", "c2"]])

    def test_a_request_that_fails_as_a_whole_gives_each_of_its_events_that_error(self) -> None:
        class FailingBatches(HeldTransport):
            def execute(self, operation: ops.Operation, variables: Mapping[str, Any], **options: Any) -> Any:
                if operation is ops.RECORD_EVENTS:
                    self.requests.append((operation.name, variables))
                    raise AuditApiError("RecordEvents: unreachable", code="TRANSPORT_ERROR", operation="RecordEvents", retryable=True)
                return super().execute(operation, variables)

        transport = FailingBatches({})
        writer = EventWriter(transport)  # type: ignore[arg-type]
        answers: dict = {}

        def call(name: str) -> None:
            try:
                answers[name] = start(writer, name)
            except AuditApiError as error:
                answers[name] = error

        threads = [threading.Thread(target=call, args=(name,)) for name in ("c0", "c1", "c2")]
        threads[0].start()
        self.assertTrue(transport.in_flight.wait(5))
        for count, thread in enumerate(threads[1:], start=1):
            thread.start()
            while len(writer._queue) < count:  # noqa: SLF001
                threading.Event().wait(0.001)
        transport.release.set()
        for thread in threads:
            thread.join(5)
        self.assertEqual(answers["c0"], {"toolCallId": "c0"})
        for name in ("c1", "c2"):
            self.assertIsInstance(answers[name], AuditApiError)
            self.assertEqual(answers[name].code, "TRANSPORT_ERROR")

    def test_a_batch_refused_whole_as_bad_user_input_is_sent_event_by_event_in_order(self) -> None:
        # One event's value its type refuses (an observed_at the DateTime scalar does not take)
        # makes the server refuse the whole recordEvents: only that caller's call may fail.
        class RefusedWhole(HeldTransport):
            def execute(self, operation: ops.Operation, variables: Mapping[str, Any], **options: Any) -> Any:
                calls = ([event["toolStarted"]["toolCallId"] for event in variables["events"]]
                         if operation is ops.RECORD_EVENTS else [variables["input"]["toolCallId"]])
                if "bad" in calls and len(self.requests) > 0:
                    self.requests.append((operation.name, variables))
                    raise AuditApiError(f"{operation.name}: got invalid value", code="BAD_USER_INPUT",
                                        operation=operation.name, retryable=False, http_status=400)
                return super().execute(operation, variables)

        transport = RefusedWhole({})
        writer = EventWriter(transport)  # type: ignore[arg-type]
        answers = send_while_first_is_held(transport, writer, ["c0", "c1", "bad", "c3"])
        self.assertEqual([answers[name] for name in ("c0", "c1", "c3")], [{"toolCallId": "c0"}, {"toolCallId": "c1"}, {"toolCallId": "c3"}])
        self.assertIsInstance(answers["bad"], AuditApiError)
        self.assertEqual((answers["bad"].code, answers["bad"].operation), ("BAD_USER_INPUT", "RecordToolStarted"))
        sent = [(name, variables["input"]["toolCallId"] if "input" in variables else None) for name, variables in transport.requests]
        self.assertEqual(sent, [("RecordToolStarted", "c0"), ("RecordEvents", None), ("RecordToolStarted", "c1"),
                                ("RecordToolStarted", "bad"), ("RecordToolStarted", "c3")])

    def test_events_a_batch_left_unapplied_are_sent_again(self) -> None:
        # UNAVAILABLE in a batch's answer: a later call of it failed for the moment (a lock wait's
        # timeout) after earlier ones committed; those events were not applied.
        class TailUnavailableOnce(HeldTransport):
            def execute(self, operation: ops.Operation, variables: Mapping[str, Any], **options: Any) -> Any:
                batches = sum(1 for name, _ in self.requests if name == "RecordEvents")
                self.refuse = {"c2": "UNAVAILABLE", "c3": "UNAVAILABLE"} if batches == 0 else {}
                return super().execute(operation, variables)

        transport = TailUnavailableOnce({})
        writer = EventWriter(transport)  # type: ignore[arg-type]
        answers = send_while_first_is_held(transport, writer, ["c0", "c1", "c2", "c3"])
        self.assertEqual([answers[name] for name in ("c0", "c1", "c2", "c3")], [{"toolCallId": name} for name in ("c0", "c1", "c2", "c3")])
        batches = [[event["toolStarted"]["toolCallId"] for event in variables["events"]] for name, variables in transport.requests if name == "RecordEvents"]
        self.assertEqual(batches, [["c1", "c2", "c3"], ["c2", "c3"]])

    def test_an_event_refused_in_a_batch_carries_the_batch_requests_attempts_and_http_status(self) -> None:
        # A batch sent twice (its first answer lost): a LEASE_LOST in the second answer may mean
        # the first send committed (docs/runtime-authors.md), which attempts > 1 tells.
        class SentTwice(HeldTransport):
            def execute_answered(self, operation: ops.Operation, variables: Mapping[str, Any], *options: Any) -> Any:
                return self.execute(operation, variables), 2, 200

        transport = SentTwice({"c2": "LEASE_LOST"})
        writer = EventWriter(transport)  # type: ignore[arg-type]
        answers = send_while_first_is_held(transport, writer, ["c0", "c1", "c2"])
        self.assertEqual(answers["c1"], {"toolCallId": "c1"})
        refused = answers["c2"]
        self.assertIsInstance(refused, AuditApiError)
        self.assertEqual((refused.code, refused.operation, refused.attempts, refused.http_status),
                         ("LEASE_LOST", "RecordToolStarted", 2, 200))
        self.assertEqual(refused.errors, [{"message": "refused c2", "extensions": {"code": "LEASE_LOST"}}])

    def test_claims_go_in_the_batch_beside_other_runs_events_each_with_its_own_lease_or_error(self) -> None:
        class Claims(HeldTransport):
            def execute(self, operation: ops.Operation, variables: Mapping[str, Any], **options: Any) -> Any:
                if operation is ops.RECORD_EVENTS:
                    self.requests.append((operation.name, variables))
                    results = []
                    for index, event in enumerate(variables["events"]):
                        claim = event.get("claimRun")
                        if claim and claim["runId"] == "run-3":
                            results.append({"index": index, "audit": None, "run": None, "lease": None,
                                            "error": {"code": "INVALID_TRANSITION", "message": "Run run-3 is RUNNING"}})
                        elif claim:
                            lease = {"runId": claim["runId"], "owner": "w", "epoch": 1, "expiresAt": "2026-12-03T12:00:00Z"}
                            results.append({"index": index, "audit": None, "run": None, "lease": lease, "error": None})
                        else:
                            call = event["toolStarted"]["toolCallId"]
                            results.append({"index": index, "audit": {"toolCallId": call}, "run": None, "lease": None, "error": None})
                    return results
                return super().execute(operation, variables)

        transport = Claims({})
        writer = EventWriter(transport)  # type: ignore[arg-type]
        # The client's claim_run, through this writer.
        client = AuditClient("http://audit.test/graphql", "worker-token")
        client._writer = writer  # noqa: SLF001 - the offline transport behind the client's writer
        answers: dict = {}

        def claim(run_id: str) -> None:
            try:
                answers[run_id] = client.claim_run(run_id, claim_id=f"claim-{run_id}")
            except AuditApiError as error:
                answers[run_id] = error

        def call(name: str) -> None:
            answers[name] = start(writer, name)

        threads = [threading.Thread(target=call, args=("c0",)), threading.Thread(target=claim, args=("run-2",)),
                   threading.Thread(target=claim, args=("run-3",)), threading.Thread(target=call, args=("c1",))]
        threads[0].start()
        self.assertTrue(transport.in_flight.wait(5))
        for count, thread in enumerate(threads[1:], start=1):
            thread.start()
            while len(writer._queue) < count:  # noqa: SLF001 - the test waits for its own writes
                threading.Event().wait(0.001)
        transport.release.set()
        for thread in threads:
            thread.join(5)
        writer.flush()

        self.assertEqual([name for name, _ in transport.requests], ["RecordToolStarted", "RecordEvents"])
        self.assertEqual(transport.requests[1][1]["events"], [
            {"claimRun": {"runId": "run-2", "claimId": "claim-run-2"}},
            {"claimRun": {"runId": "run-3", "claimId": "claim-run-3"}},
            {"toolStarted": {"toolCallId": "c1", "name": "search"}},
        ])
        self.assertEqual((answers["run-2"].run_id, answers["run-2"].epoch), ("run-2", 1))
        self.assertIsInstance(answers["run-3"], AuditApiError)
        self.assertEqual((answers["run-3"].code, answers["run-3"].operation), ("INVALID_TRANSITION", "ClaimRun"))
        self.assertEqual(answers["c1"], {"toolCallId": "c1"})


if __name__ == "__main__":
    unittest.main()


class InterruptedOnce(threading.Condition):
    """A Condition whose first ``notify_all`` raises KeyboardInterrupt: a Ctrl-C landing on the
    caller's thread right after its event was queued, before it waits for the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.interrupted = False

    def notify_all(self) -> None:
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        super().notify_all()


class InterruptedWriteTest(unittest.TestCase):
    def test_a_ctrl_c_right_after_queueing_an_event_does_not_hang_the_writer_for_every_other_caller(self) -> None:
        transport = HeldTransport({})
        transport.release.set()
        writer = EventWriter(transport)  # type: ignore[arg-type]
        writer._lock = InterruptedOnce()
        with self.assertRaises(KeyboardInterrupt):
            start(writer, "c0")
        answers: List[Any] = []
        later = threading.Thread(target=lambda: answers.append(start(writer, "c1")), daemon=True)
        later.start()
        later.join(5)
        self.assertEqual(answers, [{"toolCallId": "c1"}])
