"""Every lifecycle event, recorded through a run session and read back as the debug UI reads it."""

from __future__ import annotations

from datetime import datetime, timezone

from agent_audit import ClockReading, DeclaredToolCall, ModelAudit, ToolAudit

from .support import LiveTestCase


class LifecycleTest(LiveTestCase):
    def test_a_run_with_model_calls_and_tools_reads_back_event_by_event(self) -> None:
        thread_id, run_id = self.queued_run()
        weather = DeclaredToolCall("call-weather", "get_weather", {"city": "Paris"})
        flights = DeclaredToolCall("call-flights", "find_flights", {"to": "CDG"})
        hotels = DeclaredToolCall("call-hotels", "find_hotels", {"city": "Paris"})
        hotels_error = {"type": "tool", "tool_call_id": "call-hotels", "content": "rate limited", "status": "error"}

        with self.worker.start_run(run_id, lease_seconds=30) as run:
            run.model_started("model-1", model="gpt-x", input={"messages": [{"role": "user", "content": "Trip to Paris?"}]})
            run.model_finished("model-1", output={"content": "", "tool_calls": ["…"]}, tool_calls=[weather, flights, hotels],
                               usage={"input_tokens": 12, "output_tokens": 30})
            run.tool_started("call-weather", "get_weather", effective_input={"city": "Paris", "units": "metric"})
            run.tool_finished("call-weather", {"type": "tool", "tool_call_id": "call-weather", "content": "Sunny, 21 °C", "status": "success"})
            run.tool_started("call-flights", "find_flights", effective_input={"to": "CDG"})
            run.tool_finished("call-flights", {"type": "tool", "tool_call_id": "call-flights", "content": "no seats", "status": "error"})
            run.tool_started("call-hotels", "find_hotels", effective_input={"city": "Paris"})
            run.tool_error("call-hotels", {"name": "TimeoutError", "message": "no answer in 10 s"})
            run.model_started("model-2", model="gpt-x", input={"messages": ["…"]})
            run.model_finished("model-2", output={"content": "Sunny; no flights."})
            # The final state settles the bare error: its last message for the call is an error.
            run.state_messages = [hotels_error]

        self.assertEqual(run.finished.status if run.finished else None, "COMPLETED")
        audits = self.owner.thread_audits(thread_id)
        self.assertFalse(audits.truncated)
        got = [(type(item).__name__, item.sequence, item.finished_sequence, item.status) for item in audits.items]
        self.assertEqual(got, [
            ("ModelAudit", 1, 2, "COMPLETED"),
            ("ToolAudit", 3, 4, "COMPLETED"),
            ("ToolAudit", 5, 6, "FAILED"),
            ("ToolAudit", 7, 8, "FAILED"),
            ("ModelAudit", 9, 10, "COMPLETED"),
        ])
        model, weather_audit, flights_audit, hotels_audit, _ = audits.items
        assert isinstance(model, ModelAudit) and isinstance(weather_audit, ToolAudit)
        assert isinstance(flights_audit, ToolAudit) and isinstance(hotels_audit, ToolAudit)
        self.assertEqual(model.model, "gpt-x")
        self.assertEqual(model.usage, {"input_tokens": 12, "output_tokens": 30})
        self.assertEqual([call.tool_call_id for call in model.tool_calls], ["call-weather", "call-flights", "call-hotels"])
        # Declared vs effective input, the declaring model call, durations on this process's clock.
        assert weather_audit.tool_call is not None
        self.assertEqual(weather_audit.tool_call.declared_input, {"city": "Paris"})
        self.assertEqual(weather_audit.effective_input, {"city": "Paris", "units": "metric"})
        self.assertEqual(weather_audit.tool_call.output, "Sunny, 21 °C")
        self.assertEqual(weather_audit.declared_by_operation_id, "model-1")
        self.assertIsNotNone(weather_audit.duration_ms)
        self.assertIsNotNone(model.duration_ms)
        # A controlled failure (status "error" in the envelope) and a bare error settled by the state.
        self.assertEqual(flights_audit.error, {"message": "no seats"})
        self.assertEqual(hotels_audit.output, hotels_error)
        self.assertFalse(hotels_audit.awaiting_run_terminal)

    def test_a_whole_checkpoint_past_the_body_limit_settles_the_bare_error(self) -> None:
        thread_id, run_id = self.queued_run()
        search = DeclaredToolCall("call-search", "search", {"q": "x"})
        settled = {"type": "tool", "tool_call_id": "call-search", "content": "quota exceeded", "status": "error"}
        # A long conversation: 12 MiB of messages (the server takes 8 MiB a request), one holding a
        # NUL (which PostgreSQL's JSON cannot store), and an earlier success the last error supersedes.
        history = [{"type": "human", "content": "x" * (1024 * 1024 - 100)} for _ in range(12)]
        history += [{"type": "ai", "content": "a\u0000b"}, {**settled, "status": "success"}, settled, {"type": "ai", "content": "done"}]
        with self.worker.start_run(run_id) as run:
            run.model_started("model-1", model="gpt-x", input={"messages": []})
            run.model_finished("model-1", output={"content": ""}, tool_calls=[search])
            run.tool_started("call-search", "search", effective_input={"q": "x"})
            run.tool_error("call-search", {"name": "HTTPError", "message": "429"})
            run.state_messages = history

        self.assertEqual(run.finished.status if run.finished else None, "COMPLETED")
        tool = self.owner.thread_audits(thread_id).items[1]
        assert isinstance(tool, ToolAudit)
        self.assertEqual((tool.status, tool.output), ("FAILED", settled))

    def test_an_interrupted_tool_runs_again_in_the_resumed_run(self) -> None:
        thread_id, run_id = self.queued_run()
        approval = DeclaredToolCall("call-approve", "ask_human", {"question": "Book it?"})
        with self.worker.start_run(run_id) as run:
            run.model_started("model-1", model="gpt-x", input={"messages": []})
            run.model_finished("model-1", output={"content": ""}, tool_calls=[approval])
            run.tool_started("call-approve", "ask_human", effective_input={"question": "Book it?"})
            run.tool_error("call-approve", {"name": "GraphInterrupt", "interrupts": [{"value": "Book it?"}]})
            run.finish("INTERRUPTED")

        interrupted = self.owner.run(run_id)
        assert interrupted is not None
        self.assertEqual(interrupted.status, "INTERRUPTED")
        self.assertEqual([call.status for call in interrupted.tool_calls], ["PENDING"])

        resumed_id = self.owner.create_run(thread_id, resume_from_run_id=run_id).id
        with self.worker.start_run(resumed_id) as resumed:
            audit = resumed.tool_started("call-approve", "ask_human", effective_input={"question": "Book it?", "answer": "yes"})
            self.assertEqual(audit.sequence, 1)
            resumed.tool_finished("call-approve", {"type": "tool", "tool_call_id": "call-approve", "content": "approved"})

        items = self.owner.thread_audits(thread_id).items
        self.assertEqual([(item.run_id, item.status) for item in items], [
            (run_id, "COMPLETED"), (run_id, "INTERRUPTED"), (resumed_id, "COMPLETED"),
        ])
        last = items[-1]
        assert isinstance(last, ToolAudit)
        self.assertEqual(last.declared_by_operation_id, "model-1")

    def test_events_observed_earlier_keep_their_sequence_time_and_clock(self) -> None:
        thread_id, run_id = self.queued_run()
        calls = [DeclaredToolCall("call-a", "fetch", {"n": 1}), DeclaredToolCall("call-b", "fetch", {"n": 2})]
        started = datetime(2026, 11, 29, 21, 0, 0, 123000, tzinfo=timezone.utc)
        with self.worker.start_run(run_id) as run:
            run.model_started("model-1", model="gpt-x", input={})
            run.model_finished("model-1", tool_calls=calls)
            # Two tools ran in parallel; b started first. Their events are sent afterwards,
            # each with the sequence, time and clock reading taken when it happened.
            run.tool_started("call-b", "fetch", effective_input={"n": 2}, sequence=10, observed_at=started,
                             clock=ClockReading("host-a/pid-1", 1_000_000_000))
            run.tool_started("call-a", "fetch", effective_input={"n": 1}, sequence=11, observed_at="2026-11-29T21:00:00.200Z",
                             clock=None)
            run.tool_finished("call-b", {"content": "b"}, sequence=12, clock=ClockReading("host-a/pid-1", 1_350_000_000))
            run.tool_finished("call-a", {"content": "a"}, sequence=13)
        tools = [item for item in self.owner.thread_audits(thread_id).items if isinstance(item, ToolAudit)]
        self.assertEqual([(t.tool_call_id, t.sequence, t.finished_sequence) for t in tools], [("call-b", 10, 12), ("call-a", 11, 13)])
        self.assertEqual(tools[0].started_at, "2026-11-29T21:00:00.123Z")
        self.assertEqual(tools[0].duration_ms, 350)
        # No reading at the start: the duration is unknown, never guessed from wall-clock times.
        self.assertIsNone(tools[1].duration_ms)

    def test_thread_audits_cursor_moves_with_each_change_of_the_thread(self) -> None:
        thread_id, run_id = self.queued_run()
        before = self.owner.thread_audits(thread_id).cursor
        lease = self.worker.claim_run(run_id, 30)
        self.worker.finish_run(lease, "COMPLETED")
        after = self.owner.thread_audits(thread_id).cursor
        # Sortable within a thread (SEMANTICS, "Change cursors"): threadChanges(after: before) gives the claim and the finish.
        self.assertLess(before, after)
