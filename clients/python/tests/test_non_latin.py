"""Text in any script goes to the server as UTF-8: with every character escaped as ASCII, an
emoji took 12 bytes instead of 4 and CJK 6 instead of 3, so a model call whose values the
TypeScript client sends in 4 MB went past the server's 8 MiB request limit (BAD_USER_INPUT)."""

from __future__ import annotations

from agent_audit import DeclaredToolCall, ModelAudit, ToolAudit

from .support import LiveTestCase


class NonLatinTextTest(LiveTestCase):
    def test_values_round_trip_and_a_large_emoji_model_call_fits_one_request(self) -> None:
        title = "スレッド 🧵 עברית وعربي"
        thread = self.owner.create_thread(title)
        self.assertEqual(thread.title, title)
        run_id = self.owner.create_run(thread.id).id
        big = "🦊" * 250_000  # 1,000,002 bytes of JSON: within MAX_JSON_BYTES
        calls = [DeclaredToolCall(f"调用-{i}", "工具🔧", {"t": big}) for i in range(3)]
        with self.worker.start_run(run_id) as run:
            run.model_started("呼出-1", model="モデル", input={"messages": [{"role": "user", "content": "مرحبا 👋"}]})
            run.model_finished("呼出-1", output={"content": big}, tool_calls=calls)
            run.tool_started("调用-0", "工具🔧", effective_input={"質問": "שָׁלוֹם"})
            run.tool_finished("调用-0", {"content": "东京 ☀️ 👨‍👩‍👧", "status": "success"})
        model, tool = self.owner.thread_audits(thread.id).items[:2]
        assert isinstance(model, ModelAudit) and isinstance(tool, ToolAudit)
        self.assertEqual((model.operation_id, model.output), ("呼出-1", {"content": big}))
        self.assertEqual((tool.name, tool.effective_input, tool.output), ("工具🔧", {"質問": "שָׁלוֹם"}, {"content": "东京 ☀️ 👨‍👩‍👧", "status": "success"}))
