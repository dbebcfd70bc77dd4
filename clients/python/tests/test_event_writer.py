"""The client's batching writer, offline: a transport that holds its first request shows that the
events written meanwhile go together, each answered by its own result or error."""

from __future__ import annotations

import threading
import unittest
from typing import Any, List, Mapping

from agent_audit import AuditApiError
from agent_audit import _operations as ops
from agent_audit.event_writer import EventWriter


class HeldTransport:
    """Answers tool starts; the first request waits until ``release`` is set."""

    def __init__(self, refuse: Mapping[str, str]) -> None:
        self.requests: List[Any] = []
        self.in_flight = threading.Event()
        self.release = threading.Event()
        self.refuse = refuse

    def execute(self, operation: ops.Operation, variables: Mapping[str, Any]) -> Any:
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

    def test_an_event_goes_at_once_as_its_own_mutation_when_idle(self) -> None:
        transport = HeldTransport({})
        transport.release.set()
        writer = EventWriter(transport)  # type: ignore[arg-type]
        self.assertEqual(start(writer, "c9"), {"toolCallId": "c9"})
        self.assertEqual([name for name, _ in transport.requests], ["RecordToolStarted"])


if __name__ == "__main__":
    unittest.main()
