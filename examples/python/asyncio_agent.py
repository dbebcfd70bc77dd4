"""The agent of agent.py on asyncio, with the standard library only: its two tools run at once.

    pip install ./clients/python
    AUDIT_URL=http://127.0.0.1:4000/graphql \
    AUDIT_OWNER_TOKEN=<superadmin token> AUDIT_WORKER_TOKEN=<worker token> \
    python3 examples/python/asyncio_agent.py

Prints the answer and how the run ended. Ctrl-C ends the run INTERRUPTED and the process exits,
within 5 s (stop_timeout) even while the server does not answer.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

from agent_audit import AuditClient, DeclaredToolCall, RunSession, to_thread
from agent import owner_and_worker  # this folder's agent.py

WEATHER = {"Paris": "Sunny, 21 °C", "Oslo": "Snow, -3 °C"}


async def get_weather(city: str) -> str:
    await asyncio.sleep(0.1)  # a tool that awaits (an HTTP call, a subprocess)
    return WEATHER.get(city, "unknown")


#region run-agent
async def run_tool(run: RunSession, call: DeclaredToolCall) -> Dict[str, Any]:
    await to_thread(run.tool_started, call.id, call.name, effective_input=call.args)
    content = await get_weather(**call.args)
    message = {"type": "tool", "role": "tool", "tool_call_id": call.id, "name": call.name, "content": content, "status": "success"}
    await to_thread(run.tool_finished, call.id, message)
    return message


async def run_agent(worker: AuditClient, run_id: str) -> str:
    # Leaving the block ends the run: COMPLETED, FAILED on an exception, INTERRUPTED when the
    # task is cancelled (Ctrl-C under asyncio.run), that finish given up after stop_timeout.
    async with worker.start_run_async(run_id, lease_seconds=30, stop_timeout=5) as run:
        messages: List[Dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris and Oslo?"}]
        calls = [DeclaredToolCall("call-paris", "get_weather", {"city": "Paris"}),
                 DeclaredToolCall("call-oslo", "get_weather", {"city": "Oslo"})]
        await to_thread(run.model_started, "model-1", model="scripted", input={"messages": messages})
        await to_thread(run.model_finished, "model-1", tool_calls=calls)
        results = await asyncio.gather(*(run_tool(run, call) for call in calls))  # the tools at once
        messages += results
        answer = "; ".join(f"{call.args['city']}: {result['content']}" for call, result in zip(calls, results))
        run.state_messages = messages  # the final state, sent with the run's end
        return answer
#endregion run-agent


def main() -> None:
    owner, worker = owner_and_worker()
    thread_id = owner.create_thread("asyncio example").id
    run_id = owner.create_run(thread_id).id
    print(f"run: {run_id}", flush=True)
    print(f"answer: {asyncio.run(run_agent(worker, run_id))}", flush=True)
    ended = owner.run(run_id)
    print(f"run: {run_id} {ended.status if ended else 'gone'}", flush=True)


if __name__ == "__main__":
    main()
