"""Arguments a call cannot send are refused before anything is sent and before the run's next
sequence number is taken: a keyword typo (TypeError), a value JSON cannot carry or an observed_at
that is not a time (AuditApiError BAD_USER_INPUT, naming the field and the value's type)."""

from __future__ import annotations

import decimal
from datetime import datetime
from typing import Any, Callable, List, Tuple

from agent_audit import AuditApiError, DeclaredToolCall
from agent_audit.session import RunSession

from .support import LiveTestCase


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


class EventArgumentsTest(LiveTestCase):
    def recorded(self, thread_id: str) -> List[Tuple[str, int]]:
        return [(audit.operation_id, audit.sequence) for audit in self.owner.thread_audits(thread_id).items]

    def test_a_keyword_typo_raises_before_the_sequence_number_is_taken(self) -> None:
        thread_id, run_id = self.queued_run()
        with self.worker.start_run(run_id) as run:
            run.model_started("m1", model="m")
            run.model_finished("m1", tool_calls=[DeclaredToolCall("c1", "search", {})])
            with self.assertRaises(TypeError):
                run.tool_started("c1", "search", effective_imput={"q": 1})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
            run.tool_started("c1", "search", effective_input={"q": 1})
            run.tool_finished("c1", {"content": "found"})
        self.assertEqual(self.recorded(thread_id), [("m1", 1), ("c1", 3)])

    def test_values_json_cannot_carry_are_bad_user_input_before_anything_is_sent(self) -> None:
        thread_id, run_id = self.queued_run()
        sent: List[str] = []
        execute = self.worker._transport.execute_answered  # noqa: SLF001 - the test counts the requests

        def counting(operation: Any, variables: Any, *options: Any) -> Any:
            sent.append(operation.name)
            return execute(operation, variables, *options)

        with self.worker.start_run(run_id) as run:
            self.worker._transport.execute_answered = counting  # type: ignore[method-assign]  # noqa: SLF001
            bad: List[Tuple[str, str, Callable[[RunSession], Any]]] = [
                ("input", "datetime", lambda run: run.model_started("m1", input={"at": datetime.now()})),
                ("input", "bytes", lambda run: run.model_started("m1", input=b"raw")),  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
                ("input", "set", lambda run: run.model_started("m1", input={1, 2})),  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
                ("input", "Decimal", lambda run: run.model_started("m1", input=[decimal.Decimal("1.5")])),  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
                ("input", "float", lambda run: run.model_started("m1", input=float("nan"))),
                ("input", "list", lambda run: run.model_started("m1", input=nested(100_000))),
                ("observed_at", "int", lambda run: run.model_started("m1", observed_at=12345)),  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
                ("observed_at", "datetime", lambda run: run.model_started("m1", observed_at=datetime.now())),
                ("error", "datetime", lambda run: run.finish("FAILED", error={"at": datetime.now()})),
            ]
            for field, type_name, call in bad:
                with self.subTest(field=field, type=type_name):
                    with self.assertRaises(AuditApiError) as refused:
                        call(run)
                    self.assertEqual((refused.exception.code, refused.exception.retryable), ("BAD_USER_INPUT", False))
                    self.assertIn(field, str(refused.exception))
                    self.assertIn(type_name, str(refused.exception))
            self.assertEqual(sent, [])
            run.model_started("m1", input={"ok": True})
        self.assertEqual(self.recorded(thread_id), [("m1", 1)])


class DeclaredToolCallShapesTest(LiveTestCase):
    def test_tool_calls_as_the_model_gave_them_are_declared_like_declared_tool_calls(self) -> None:
        # LangChain's AIMessage.tool_calls and the scripted replies of the examples are dicts
        # {"id", "name", "args"} (LangChain adds "type"); they declare as DeclaredToolCall does.
        thread_id, run_id = self.queued_run()
        with self.worker.start_run(run_id) as run:
            run.model_started("m1", model="m")
            declared = run.model_finished("m1", tool_calls=[
                {"id": "c1", "name": "search", "args": {"q": 1}, "type": "tool_call"},
                DeclaredToolCall("c2", "fetch", {"url": "u"}),
                {"id": "c3", "name": "noop"},
            ])
            self.assertEqual([(call.tool_call_id, call.name, call.declared_input) for call in declared.tool_calls],
                             [("c1", "search", {"q": 1}), ("c2", "fetch", {"url": "u"}), ("c3", "noop", None)])
            run.tool_started("c1", "search", effective_input={"q": 1})
            run.tool_finished("c1", {"content": "found"})
        self.assertEqual([audit.operation_id for audit in self.owner.thread_audits(thread_id).items], ["m1", "c1"])

    def test_a_tool_call_of_another_shape_is_a_type_error_naming_it_before_anything_is_sent(self) -> None:
        thread_id, run_id = self.queued_run()
        with self.worker.start_run(run_id) as run:
            run.model_started("m1", model="m")
            for bad, named in (({"name": "search"}, "id"), ("c1", "str"), ({"id": "c1", "function": {}}, "name")):
                with self.subTest(bad=bad):
                    with self.assertRaises(TypeError) as refused:
                        run.model_finished("m1", tool_calls=[bad])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
                    self.assertIn("tool_calls[0]", str(refused.exception))
                    self.assertIn(named, str(refused.exception))
            run.model_finished("m1", tool_calls=[])
        self.assertEqual([(audit.operation_id, audit.sequence) for audit in self.owner.thread_audits(thread_id).items], [("m1", 1)])
