"""An asyncio runtime: its tasks are cancelled (task.cancel(), asyncio.wait_for's timeout, Ctrl-C
under asyncio.run), and its loop must not wait on the client's requests."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from agent_audit import DeclaredToolCall, RunSession

from .support import LiveTestCase


class AsyncioTest(LiveTestCase):
    def start_tool(self, run_id: str) -> RunSession:
        """A session with one model call and one tool running in it."""
        session = self.worker.start_run(run_id)
        session.model_started("model-1", model="gpt-x", input={})
        session.model_finished("model-1", tool_calls=[DeclaredToolCall("call-1", "search", {"q": "x"})])
        session.tool_started("call-1", "search", effective_input={"q": "x"})
        return session

    def test_a_cancelled_task_interrupts_the_run_so_it_can_be_resumed(self) -> None:
        # asyncio delivers a stop as CancelledError (not an Exception): the run is interrupted, as
        # by KeyboardInterrupt, and its running tool's call goes back to PENDING for a resume.
        thread_id, run_id = self.queued_run()
        tool_running = asyncio.Event()

        async def agent() -> None:
            with self.start_tool(run_id):
                tool_running.set()
                await asyncio.sleep(3600)  # the tool, cancelled

        async def main() -> None:
            task = asyncio.ensure_future(agent())
            await tool_running.wait()
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")
        self.assertEqual([call.status for call in after.tool_calls], ["PENDING"])
        self.assertEqual([item.status for item in self.owner.thread_audits(thread_id).items], ["COMPLETED", "INTERRUPTED"])

    def test_ctrl_c_under_asyncio_run_interrupts_the_run(self) -> None:
        # asyncio.run (3.11+) turns Ctrl-C into the main task's cancellation, then raises
        # KeyboardInterrupt: the README's "INTERRUPTED on Ctrl-C" holds for an asyncio agent too.
        _, run_id = self.queued_run()
        agent = textwrap.dedent("""
            import asyncio, sys
            from agent_audit import AuditClient
            worker = AuditClient(sys.argv[1], sys.argv[2])
            async def main():
                with worker.start_run(sys.argv[3]) as run:
                    await asyncio.to_thread(run.model_started, "model-1", model="gpt-x", input={})
                    print("working", flush=True)
                    await asyncio.sleep(60)
            asyncio.run(main())
        """)
        process = subprocess.Popen(
            [sys.executable, "-c", agent, self.server.url, self.server.token(self.worker_sub, "worker"), run_id],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        assert process.stdout is not None
        self.assertEqual(process.stdout.readline().strip(), "working")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        self.assertIn("KeyboardInterrupt", stderr)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")
