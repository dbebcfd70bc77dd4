"""An asyncio runtime: its tasks are cancelled (task.cancel(), asyncio.wait_for's timeout, Ctrl-C
under asyncio.run), and its loop must not wait on the client's requests."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import List

from agent_audit import AuditClient, DeclaredToolCall, RunSession

from .support import FAST_RETRY, LiveTestCase, LossyProxy, carries


EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python" / "asyncio_agent.py"


class AsyncioTest(LiveTestCase):
    def start_example(self, url: str) -> "subprocess.Popen[str]":
        """examples/python/asyncio_agent.py (the README's asyncio example) as a user runs it, against
        ``url``, killed when the test ends."""
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "AUDIT_URL": url,
                 "AUDIT_OWNER_TOKEN": self.server.token(self.owner_sub, "superadmin"),
                 "AUDIT_WORKER_TOKEN": self.server.token(self.worker_sub, "worker")})
        self.addCleanup(process.kill)
        return process

    def test_the_readme_example_records_its_run(self) -> None:
        process = self.start_example(self.server.url)
        stdout, stderr = process.communicate(timeout=60)
        self.assertEqual(process.returncode, 0, stderr)
        self.assertIn("answer: Paris: Sunny, 21 °C; Oslo: Snow, -3 °C", stdout)
        self.assertRegex(stdout, r"(?m)^run: \S+ COMPLETED$")

    def test_ctrl_c_while_an_event_hangs_lets_the_readme_example_exit(self) -> None:
        # The server stops answering (a partition) when the tools' results are sent: each such call
        # would retry for the whole policy (minutes). Ctrl-C cancels the agent; the run's
        # INTERRUPTED finish is given up after stop_timeout, and the process must then exit, not
        # wait for the calls still hanging on their threads.
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        hanging = threading.Event()

        def hold(body: bytes) -> None:
            if carries(body, "RecordToolFinished"):
                proxy.silent.set()  # its retries too, and the finish
                hanging.set()
                proxy._closing.wait()  # noqa: SLF001 - held until the proxy closes

        proxy.on_first_send = hold
        process = self.start_example(proxy.url)
        if not hanging.wait(90):  # generous: a loaded machine's server answers slowly
            process.kill()
            self.fail(f"the tools' results were never sent: {process.communicate()}")
        process.send_signal(signal.SIGINT)
        try:
            _, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.fail("the process did not exit within 60 s of Ctrl-C while a call hung")
        self.assertIn("KeyboardInterrupt", stderr)

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

        async def agent(tool_running: asyncio.Event) -> None:
            with self.start_tool(run_id):
                tool_running.set()
                await asyncio.sleep(3600)  # the tool, cancelled

        async def main() -> None:
            tool_running = asyncio.Event()  # made in the loop: Python 3.9's binds to the loop current when it is made
            task = asyncio.ensure_future(agent(tool_running))
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
        self.assert_signal_interrupts(agent, run_id, signal.SIGINT)

    def test_async_with_ends_the_run_while_the_loop_runs_on(self) -> None:
        # The run's finish is held at a proxy until a coroutine of the loop lets it through: a
        # block that ended the run on the loop's thread would hold the loop, and nothing would.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        worker = AuditClient(proxy.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)
        self.addCleanup(worker.close)
        finish_held = threading.Event()
        released = threading.Event()
        released_by_the_loop: List[bool] = []

        def hold(body: bytes) -> None:
            if carries(body, "FinishRun"):
                finish_held.set()
                released_by_the_loop.append(released.wait(20))

        proxy.on_first_send = hold

        async def release_the_finish() -> None:
            while not finish_held.is_set():
                await asyncio.sleep(0.01)
            released.set()

        async def main() -> None:
            run = await asyncio.to_thread(worker.start_run, run_id)
            releaser = asyncio.ensure_future(release_the_finish())
            async with run:
                await asyncio.to_thread(run.model_started, "model-1", model="gpt-x", input={})
            await releaser

        asyncio.run(main())
        self.assertEqual(released_by_the_loop, [True])
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")

    def test_a_task_cancelled_while_its_claim_is_in_flight_leaves_no_lease_renewed_behind(self) -> None:
        # The claim, held at the proxy, is answered only after its task was cancelled (a shutdown,
        # a timeout around the agent): the claimed run is handed back INTERRUPTED, not kept
        # RUNNING by a lease keeper that no code holds any more.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        worker = AuditClient(proxy.url, self.server.token(self.worker_sub, "worker"), retry=FAST_RETRY)
        self.addCleanup(worker.close)
        claim_held = threading.Event()
        cancelled = threading.Event()

        def hold(body: bytes) -> None:
            if carries(body, "ClaimRun"):
                claim_held.set()
                cancelled.wait(20)

        proxy.on_first_send = hold
        entered: List[bool] = []

        async def agent() -> None:
            async with worker.start_run_async(run_id, lease_seconds=10):
                entered.append(True)

        async def main() -> None:
            task = asyncio.ensure_future(agent())
            while not claim_held.is_set() and not task.done():
                await asyncio.sleep(0.01)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            cancelled.set()

        asyncio.run(main())
        self.assertEqual(entered, [])
        worker.flush()
        # The lease runs out unless renewed; the sweeper then ends the run, FAILED. 10 s: a loaded
        # machine's hand-back took longer than a 2 s lease allows.
        self.assertEqual(self.run_once_ended(run_id, seconds=30).status, "INTERRUPTED")

    def test_a_task_cancelled_while_its_claim_hangs_lets_asyncio_run_return(self) -> None:
        # The server does not answer (a partition): the claim would retry for the whole policy.
        # Cancelled, the task gives it up, and asyncio.run's shutdown does not wait for it.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        proxy.silent.set()
        agent = textwrap.dedent("""
            import asyncio, sys
            from agent_audit import AuditClient
            worker = AuditClient(sys.argv[1], sys.argv[2])
            async def agent():
                async with worker.start_run_async(sys.argv[3]):
                    print("entered", flush=True)
            async def main():
                task = asyncio.ensure_future(agent())
                await asyncio.sleep(0.5)  # the claim is sent, and hangs
                print("working", flush=True)
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    print("cancelled", flush=True)
            asyncio.run(main())
        """)
        process = self.start_agent(agent, proxy.url, run_id)
        # Not communicate(): it reads the pipe past what start_agent's readline() buffered, and a
        # "cancelled" printed before that readline ran (a loaded machine) was lost with the buffer.
        process.wait(timeout=30)
        assert process.stdout is not None and process.stderr is not None
        self.assertEqual((process.stdout.read().strip(), process.returncode), ("cancelled", 0), process.stderr.read())

    def test_a_stop_while_the_blocks_finish_hangs_lets_asyncio_run_return(self) -> None:
        # The block ended and its COMPLETED finish is sent, but the server does not answer (a
        # partition): SIGTERM must still end the process, whose asyncio.run would otherwise wait for
        # the finish's thread through the whole retry policy. The lease's expiry ends the run.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        finish_held = threading.Event()

        def hold(body: bytes) -> None:
            if carries(body, "FinishRun"):
                proxy.silent.set()  # its retries too
                finish_held.set()
                proxy._closing.wait()  # noqa: SLF001 - held until the proxy closes

        proxy.on_first_send = hold
        agent = textwrap.dedent("""
            import asyncio, signal, sys
            from agent_audit import AuditClient
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
            worker = AuditClient(sys.argv[1], sys.argv[2])
            async def main():
                async with worker.start_run_async(sys.argv[3], lease_seconds=2):
                    print("working", flush=True)
            asyncio.run(main())
        """)
        process = self.start_agent(agent, proxy.url, run_id)
        self.assertTrue(finish_held.wait(30), "the finish was never sent")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        self.assertIn("stopped by SIGTERM", stderr)
        after = self.run_once_ended(run_id)
        self.assertEqual((after.status, (after.error or {}).get("code")), ("FAILED", "LEASE_EXPIRED"))
