"""A payload larger than the server stores (MAX_JSON_BYTES, 1 MiB by default) used to make its
event BAD_USER_INPUT: a model call whose prompt grew past 1 MiB vanished from the timeline with
every tool it declared. The client cuts such a value to a visible marker instead, as the
TypeScript client does: the event is recorded and its tools bind."""

from __future__ import annotations

from agent_audit import AuditClient, DeclaredToolCall, ModelAudit
from agent_audit.payloads import cap_json

from .support import FAST_RETRY, LiveTestCase


class PayloadCapTest(LiveTestCase):
    def test_a_prompt_over_the_limit_is_recorded_cut_and_its_tools_bind(self) -> None:
        thread_id, run_id = self.queued_run()
        history = [{"role": "tool", "tool_call_id": f"t{i}", "content": "x" * 700_000} for i in range(2)]
        with self.worker.start_run(run_id) as run:
            run.model_started("m1", model="m", input={"model": "m", "messages": history})
            run.model_finished("m1", tool_calls=[DeclaredToolCall("c1", "search", {"q": "y" * 1_500_000})])
            run.tool_started("c1", "search")
            run.tool_finished("c1", {"content": "found", "status": "success"})
        audits = self.owner.thread_audits(thread_id).items
        self.assertEqual([(audit.operation_id, audit.status) for audit in audits], [("m1", "COMPLETED"), ("c1", "COMPLETED")])
        model = audits[0]
        assert isinstance(model, ModelAudit)
        recorded = model.input
        assert isinstance(recorded, dict)
        self.assertEqual(recorded["model"], "m")  # the small members kept
        self.assertEqual(recorded["messages"]["truncated"], True)
        self.assertGreater(recorded["messages"]["bytes"], 1_400_000)
        self.assertTrue(recorded["messages"]["preview"].startswith('[{"role":"tool"'))

    def test_a_smaller_max_json_bytes_cuts_sooner_and_a_value_within_it_is_sent_whole(self) -> None:
        worker = AuditClient(self.server.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY, max_json_bytes=2048)
        try:
            thread_id, run_id = self.queued_run()
            with worker.start_run(run_id) as run:
                run.model_started("m1", input={"small": "kept"})
                run.model_finished("m1", output="z" * 5000)
            model = self.owner.thread_audits(thread_id).items[0]
            assert isinstance(model, ModelAudit)
            self.assertEqual(model.input, {"small": "kept"})
            output = model.output
            assert isinstance(output, dict)
            self.assertEqual((output["truncated"], output["bytes"]), (True, 5002))
        finally:
            worker.close()

    def test_cap_json_keeps_an_objects_small_members_and_counts_utf8_bytes(self) -> None:
        self.assertEqual(cap_json({"a": 1}, 1024), {"a": 1})
        capped = cap_json({"status": "error", "tool_call_id": "c1", "content": "é" * 1000}, 1024)
        assert isinstance(capped, dict)
        self.assertEqual((capped["status"], capped["tool_call_id"]), ("error", "c1"))
        self.assertEqual(capped["content"]["bytes"], 2002)  # two bytes a character, and the quotes
        self.assertEqual(cap_json("q" * 2000, 1024)["bytes"], 2002)  # type: ignore[index]
