"""The run session as a context manager: how leaving the block ends the run."""

from __future__ import annotations

import signal
import sys
import textwrap
import time
from typing import List, Tuple

from agent_audit import DeclaredToolCall, Run

from .support import LiveTestCase, LossyProxy, carries


class Boom(Exception):
    pass


class RunSessionTest(LiveTestCase):
    def start_tool(self, run_id: str):
        """A session with one model call and one tool running in it."""
        session = self.worker.start_run(run_id)
        session.model_started("model-1", model="gpt-x", input={})
        session.model_finished("model-1", tool_calls=[DeclaredToolCall("call-1", "search", {"q": "x"})])
        session.tool_started("call-1", "search", effective_input={"q": "x"})
        return session

    def test_a_normal_exit_completes_the_run(self) -> None:
        _, run_id = self.queued_run()
        with self.start_tool(run_id) as run:
            run.tool_finished("call-1", {"content": "found", "status": "success"})
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "COMPLETED")
        self.assertEqual([call.status for call in after.tool_calls], ["COMPLETED"])

    def test_an_exception_fails_the_run_and_is_raised_again(self) -> None:
        thread_id, run_id = self.queued_run()
        with self.assertRaises(Boom):
            with self.start_tool(run_id):
                raise Boom("the tool crashed")
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "FAILED")
        self.assertEqual(after.error, {"name": "Boom", "message": "the tool crashed"})
        self.assertEqual([item.status for item in self.owner.thread_audits(thread_id).items], ["COMPLETED", "FAILED"])

    def test_keyboard_interrupt_interrupts_the_run_so_it_can_be_resumed(self) -> None:
        thread_id, run_id = self.queued_run()
        with self.assertRaises(KeyboardInterrupt):
            with self.start_tool(run_id):
                raise KeyboardInterrupt()
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")
        # The tool's call goes back to PENDING, for a resumed run to start it again.
        self.assertEqual([call.status for call in after.tool_calls], ["PENDING"])
        self.assertEqual([item.status for item in self.owner.thread_audits(thread_id).items], ["COMPLETED", "INTERRUPTED"])

    def test_sys_exit_interrupts_the_run_so_it_can_be_resumed(self) -> None:
        # A worker told to stop leaves the block by SystemExit: sys.exit() in a SIGTERM handler,
        # gunicorn's worker on SIGQUIT, Celery's WorkerShutdown. Its run is handed back, not failed.
        _, run_id = self.queued_run()
        with self.assertRaises(SystemExit):
            with self.start_tool(run_id):
                sys.exit(0)
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")
        self.assertEqual([call.status for call in after.tool_calls], ["PENDING"])

    def test_a_stream_its_consumer_stops_reading_interrupts_the_run(self) -> None:
        # An agent that streams its work as a generator, its run's block inside it: a consumer
        # that stops reading (a `break`, a client gone, the generator collected) closes it, and the
        # block is left by GeneratorExit, as an asyncio task's by CancelledError. Nothing failed.
        _, run_id = self.queued_run()

        def stream():
            with self.start_tool(run_id):
                for token in ("first", "second", "third"):
                    yield token

        tokens = stream()
        self.assertEqual(next(tokens), "first")
        tokens.close()
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")
        self.assertEqual(after.error, {"name": "GeneratorExit", "message": ""})
        self.assertEqual([call.status for call in after.tool_calls], ["PENDING"])

    def test_sigterm_as_keyboard_interrupt_interrupts_the_run_of_a_stopped_process(self) -> None:
        # The README's recipe for a process stopped by SIGTERM (a deploy, systemd, Kubernetes):
        # Python's default SIGTERM kills the process without leaving the block, and the run would
        # stay RUNNING until its lease expired.
        _, run_id = self.queued_run()
        agent = textwrap.dedent("""
            import signal, sys, time
            from agent_audit import AuditClient
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            worker = AuditClient(sys.argv[1], sys.argv[2])
            with worker.start_run(sys.argv[3]) as run:
                run.model_started("model-1", model="gpt-x", input={})
                print("working", flush=True)
                time.sleep(60)
        """)
        self.assert_signal_interrupts(agent, run_id, signal.SIGTERM)

    def test_sigterm_handler_calling_sys_exit_interrupts_the_run_of_a_stopped_process(self) -> None:
        # The README's other recipe: a SIGTERM handler that exits the process (as gunicorn's and
        # Celery's workers do on their stop signals).
        _, run_id = self.queued_run()
        agent = textwrap.dedent("""
            import signal, sys, time
            from agent_audit import AuditClient
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
            worker = AuditClient(sys.argv[1], sys.argv[2])
            with worker.start_run(sys.argv[3]) as run:
                run.model_started("model-1", model="gpt-x", input={})
                print("working", flush=True)
                time.sleep(60)
        """)
        self.assert_signal_interrupts(agent, run_id, signal.SIGTERM, stopped_by="stopped by SIGTERM")

    def test_a_second_sigterm_during_the_interrupted_finish_abandons_it_and_the_lease_expires(self) -> None:
        # As a second Ctrl-C abandons any cleanup: the finish (its first attempt answered by a
        # gateway's 503, its retry not yet sent) is given up with the process, and the run ends
        # when its lease expires, FAILED, not INTERRUPTED.
        _, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="gateway_first")
        self.addCleanup(proxy.close)
        agent = textwrap.dedent("""
            import signal, sys, time
            from agent_audit import AuditClient
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            worker = AuditClient(sys.argv[1], sys.argv[2])
            with worker.start_run(sys.argv[3], lease_seconds=2) as run:
                print("working", flush=True)
                time.sleep(60)
        """)
        process = self.start_agent(agent, proxy.url, run_id)

        def second_sigterm(body: bytes) -> None:
            if carries(body, "FinishRun"):
                process.send_signal(signal.SIGTERM)
                process.wait(30)

        proxy.on_first_send = second_sigterm
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
        self.assertIn("KeyboardInterrupt", stderr)
        after = self.run_once_ended(run_id)
        self.assertEqual(after.status, "FAILED")
        self.assertEqual((after.error or {}).get("code"), "LEASE_EXPIRED")

    def stop_out_of_reach(self, start_run_args: str, client_block: bool = False) -> Tuple[str, str, Run]:
        """Runs an agent whose block (``worker.start_run(run_id, <start_run_args>)``) has a tool
        running, makes the server stop answering (a partition: no answer, no reset) and sends it
        SIGTERM, whose handler calls ``sys.exit()``. Returns the thread, the agent's stderr once it
        exited, and the run once it ended. ``client_block``: the worker is used as ``with
        AuditClient(...) as worker:`` around the run's block. Callers ask for a lease of 10 s: its
        keeper must renew it until the agent works on a loaded machine (2 s left 1.3 s a renewal),
        and its expiry ends the run."""
        thread_id, run_id = self.queued_run()
        proxy = LossyProxy(self.server.url, mode="forward")
        self.addCleanup(proxy.close)
        agent = textwrap.dedent(f"""
            import signal, sys, time
            from contextlib import nullcontext
            from agent_audit import AuditClient, DeclaredToolCall
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
            with {"AuditClient(sys.argv[1], sys.argv[2]) as worker" if client_block else "nullcontext(AuditClient(sys.argv[1], sys.argv[2])) as worker"}, worker.start_run(sys.argv[3], {start_run_args}) as run:
                run.model_started("model-1", model="gpt-x", input={{}})
                run.model_finished("model-1", tool_calls=[DeclaredToolCall("call-1", "search", {{"q": "x"}})])
                run.tool_started("call-1", "search", effective_input={{"q": "x"}})
                print("working", flush=True)
                time.sleep(60)
        """)
        process = self.start_agent(agent, proxy.url, run_id)
        proxy.silent.set()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        return thread_id, stderr, self.run_once_ended(run_id)

    def test_a_stop_with_the_server_out_of_reach_finishes_within_stop_timeout_and_the_lease_expiry_closes_the_run(self) -> None:
        # Kubernetes sends SIGTERM, then SIGKILL after its grace period. With the server out of
        # reach, the finish on leaving the block would wait for the whole retry policy (8 attempts
        # of 30 s); ``stop_timeout`` bounds it, the process exits, and the run ends when its lease
        # expires: FAILED (LEASE_EXPIRED), its running tool ABANDONED.
        thread_id, stderr, after = self.stop_out_of_reach("lease_seconds=10, stop_timeout=1")
        self.assertIn("stopped by SIGTERM", stderr)
        self.assertEqual(after.status, "FAILED")
        self.assertEqual((after.error or {}).get("code"), "LEASE_EXPIRED")
        [tool] = [item for item in self.owner.thread_audits(thread_id).items if item.operation_id == "call-1"]
        self.assertEqual(tool.status, "ABANDONED")
        self.assertEqual([call.status for call in after.tool_calls], ["FAILED"])

    def test_with_audit_client_a_stop_with_the_server_out_of_reach_still_exits_within_stop_timeout(self) -> None:
        # Leaving ``with AuditClient(...)`` closes the client: once the bounded finish gave up,
        # its request still in flight (retried for the whole policy) must not hold the exit.
        _, stderr, after = self.stop_out_of_reach("lease_seconds=10, stop_timeout=1", client_block=True)
        self.assertIn("stopped by SIGTERM", stderr)
        self.assertEqual(after.status, "FAILED")
        self.assertEqual((after.error or {}).get("code"), "LEASE_EXPIRED")

    def test_a_stop_without_stop_timeout_with_the_server_out_of_reach_waits_no_longer_than_the_lease(self) -> None:
        # Without ``stop_timeout`` the same finish waited for the whole retry policy: the process
        # outlived Kubernetes' grace period. Past the lease's expiry the finish could only be
        # refused, so it waits no longer than that: the process exits and the expiry ends the run.
        _, stderr, after = self.stop_out_of_reach("lease_seconds=10")
        self.assertIn("stopped by SIGTERM", stderr)
        self.assertEqual(after.status, "FAILED")
        self.assertEqual((after.error or {}).get("code"), "LEASE_EXPIRED")

    def test_a_run_finished_inside_the_block_is_not_finished_again(self) -> None:
        _, run_id = self.queued_run()
        run = self.start_tool(run_id)
        with self.assertRaises(Boom):
            with run:
                run.finish("CANCELLED", error={"reason": "user stopped it"})
                raise Boom("after the finish")
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "CANCELLED")
        self.assertIsNone(run.finish_error)

    def test_a_call_after_the_session_finished_the_run_is_refused_without_reporting_the_lease_lost(self) -> None:
        # A late event (a tool's thread that outlived its cancelled task, say) after the session
        # ended the run: it cannot be recorded, and the lease was not taken away.
        _, run_id = self.queued_run()
        told: List[str] = []
        run = self.worker.start_run(run_id, on_lost=lambda error: told.append(error.code))
        run.model_started("model-1", model="gpt-x", input={})
        run.finish("INTERRUPTED")
        with self.assertRaisesRegex(RuntimeError, "finished"):
            run.model_finished("model-1")
        self.assertEqual(told, [])
        self.assertFalse(run.lost.is_set())
        after = self.owner.run(run_id)
        assert after is not None
        self.assertEqual(after.status, "INTERRUPTED")
