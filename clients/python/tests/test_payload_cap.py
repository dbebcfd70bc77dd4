"""A payload larger than the server stores (MAX_JSON_BYTES, 1 MiB by default) used to make its
event BAD_USER_INPUT: a model call whose prompt grew past 1 MiB vanished from the timeline with
every tool it declared. The client cuts such a value to a visible marker instead, as the
TypeScript client does: the event is recorded and its tools bind."""

from __future__ import annotations

from agent_audit import AuditClient, DeclaredToolCall, ModelAudit, ToolAudit
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

    def test_numbers_written_out_in_full_past_the_stored_bound_are_cut_and_the_event_recorded(self) -> None:
        # 42,001 bytes sent, 1.87 MB as the server stores it (1e308 is 309 digits): over 1.5 × 1 MiB.
        numbers = [1e308] * 6000
        thread_id, run_id = self.queued_run()
        with self.worker.start_run(run_id) as run:
            run.model_started("m1", input={"model": "m"})
            run.model_finished("m1", output={"status": "ok", "logits": numbers})
        model = self.owner.thread_audits(thread_id).items[0]
        assert isinstance(model, ModelAudit)
        self.assertEqual(model.status, "COMPLETED")
        output = model.output
        assert isinstance(output, dict)
        self.assertEqual(output["status"], "ok")
        self.assertEqual((output["logits"]["truncated"], output["logits"]["bytes"]), (True, 42_001))

    def test_a_nul_or_an_unpaired_surrogate_is_sent_as_u_fffd_and_the_rest_of_the_run_is_recorded(self) -> None:
        # The server cannot store either: one in a tool's output refused its end, and the next
        # model call, whose prompt repeats it, with every tool it declared.
        thread_id, run_id = self.queued_run()
        binary = {"content": "PK\u0003\u0004\u0000\ud800", "status": "success", "k\u0000": 1}
        with self.worker.start_run(run_id) as run:
            run.model_started("m1", input={"messages": []})
            run.model_finished("m1", tool_calls=[DeclaredToolCall("c1", "unzip", {"path": "a\u0000.zip"})])
            run.tool_started("c1", "unzip", effective_input={"path": "a\u0000.zip"})
            run.tool_finished("c1", binary)
            run.model_started("m2", input={"messages": [binary]})
            run.model_finished("m2", output={"content": "done"})
        audits = self.owner.thread_audits(thread_id).items
        self.assertEqual([(audit.operation_id, audit.status) for audit in audits], [("m1", "COMPLETED"), ("c1", "COMPLETED"), ("m2", "COMPLETED")])
        tool = audits[1]
        assert isinstance(tool, ToolAudit)
        self.assertEqual(tool.output, {"content": "PK\u0003\u0004\ufffd\ufffd", "status": "success", "k\ufffd": 1})
        self.assertEqual(tool.effective_input, {"path": "a\ufffd.zip"})

    def test_cap_json_measures_numbers_as_the_server_does(self) -> None:
        zeros = [0] * 1023  # 2,047 bytes sent, 3,069 stored: whole
        self.assertIs(cap_json(zeros, 2048), zeros)
        self.assertEqual(cap_json([1e308] * 200, 2048)["bytes"], 1401)  # type: ignore[index]
        # JavaScript writes 1e-05 as 0.00001: 7 bytes, not Python's 5.
        self.assertEqual(cap_json([1e-05] * 300, 2048)["bytes"], 2401)  # type: ignore[index]
        # JavaScript writes -0.0 as 0: 1,024 of them are 2,049 bytes, one over.
        self.assertEqual(cap_json([-0.0] * 1024, 2048)["bytes"], 2049)  # type: ignore[index]
        self.assertEqual(cap_json([-0.0] * 1023, 2048), [-0.0] * 1023)

