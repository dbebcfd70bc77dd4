"""A small agent recorded by the audit server, with the standard library only.

    pip install ./clients/python
    AUDIT_URL=http://127.0.0.1:4000/graphql \
    AUDIT_OWNER_TOKEN=<superadmin token> AUDIT_WORKER_TOKEN=<worker token> \
    python3 examples/python/agent.py

The owner creates a thread and a run; the worker claims the run and records each model call and
tool execution as it happens. The "model" is scripted (no API key needed): it asks for the
weather in two cities at once, then answers from the tools' results. Prints the timeline.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Tuple

from agent_audit import AuditClient, DeclaredToolCall, RunSession

TOOLS = {"get_weather": lambda city: {"Paris": "Sunny, 21 °C", "Oslo": "Snow, -3 °C"}.get(city, "unknown")}


def scripted_model(messages: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Stands in for a chat model: first two tool calls, then an answer from their results."""
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call-paris", "name": "get_weather", "args": {"city": "Paris"}},
            {"id": "call-oslo", "name": "get_weather", "args": {"city": "Oslo"}},
        ]}
    return {"role": "assistant", "content": "Paris: " + results[0] + "; Oslo: " + results[1], "tool_calls": []}


#region run-agent
def run_agent(run: RunSession, question: str) -> str:
    messages: List[Dict[str, Any]] = [{"role": "user", "content": question}]
    for step in range(1, 5):
        run.check()  # stop here if the lease is gone (run cancelled, expired)
        operation_id = f"model-{step}"
        run.model_started(operation_id, model="scripted", input={"messages": messages})
        reply = scripted_model(messages)
        calls = [DeclaredToolCall(call["id"], call["name"], call["args"]) for call in reply["tool_calls"]]
        run.model_finished(operation_id, output=reply, tool_calls=calls)
        messages.append(reply)
        if not calls:
            run.state_messages = messages  # the final state, sent with the run's end
            return reply["content"]
        for call in calls:
            run.tool_started(call.id, call.name, effective_input=call.args)
            try:
                content = TOOLS[call.name](**call.args)
            except Exception as error:  # a bare error: the run's end settles it
                run.tool_error(call.id, {"name": type(error).__name__, "message": str(error)})
                raise
            message = {"type": "tool", "role": "tool", "tool_call_id": call.id, "name": call.name,
                       "content": content, "status": "success"}
            run.tool_finished(call.id, message)
            messages.append(message)
    raise RuntimeError("the model did not answer in 4 steps")
#endregion run-agent


def owner_and_worker() -> Tuple[AuditClient, AuditClient]:
    """The owner's and the worker's clients of AUDIT_URL, with AUDIT_OWNER_TOKEN and
    AUDIT_WORKER_TOKEN, or one line saying which to set (rather than a KeyError)."""
    url = os.environ.get("AUDIT_URL", "http://127.0.0.1:4000/graphql")
    for name, role in (("AUDIT_OWNER_TOKEN", "superadmin"), ("AUDIT_WORKER_TOKEN", "worker")):
        if not os.environ.get(name):
            sys.exit(f"{name} is not set: give it a {role} token (`npm start` prints one on its first start;"
                     f" `npm run -s token -- --sub me --role {role}` mints more)")
    return AuditClient(url, os.environ["AUDIT_OWNER_TOKEN"]), AuditClient(url, os.environ["AUDIT_WORKER_TOKEN"])


def main() -> None:
    owner, worker = owner_and_worker()

    thread = owner.create_thread("python example")
    run_id = owner.create_run(thread.id).id

    #region start-run
    # Leaving the block ends the run: COMPLETED, FAILED on an exception, INTERRUPTED on Ctrl-C.
    with worker.start_run(run_id, lease_seconds=30) as run:
        answer = run_agent(run, "What is the weather in Paris and Oslo?")
    #endregion start-run

    print(f"answer: {answer}")
    print(f"thread: {thread.id}")
    print(f"run: {run_id} {run.finished.status if run.finished else 'ended'}")
    for item in owner.thread_audits(thread.id).items:  # superadmin owners only
        name = getattr(item, "name", None) or getattr(item, "model", None)
        print(f"  {item.sequence:>2} {type(item).__name__:<10} {item.operation_id:<10} {name:<12} {item.status} {item.duration_ms} ms")


if __name__ == "__main__":
    main()
