"""A worker its platform stops, with the standard library only: Kubernetes sends SIGTERM, then
SIGKILL after the grace period (a user's Ctrl-C is SIGINT). On either it leaves the run's block,
which hands the run back INTERRUPTED (the tool's call PENDING again, for a resume) within a
bound, and exits; a process frozen past its lease and thawed (a paused container, a laptop
asleep) finds the run gone and exits without sending anything more.

    AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> python3 examples/python/shutdown.py

Once its tool runs it prints ``{"working": true, "pid": …, "threadId": …, "runId": …}`` (the pid
to signal), then waits. AUDIT_URL defaults to http://127.0.0.1:4000/graphql; AUDIT_SHUTDOWN_MS
(default 5000) bounds the hand-back and AUDIT_LEASE_SECONDS (default 30) is the lease asked for.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from types import FrameType
from typing import Optional

from agent_audit import AuditClient, DeclaredToolCall


def main() -> None:
    for name, role in (("AUDIT_OWNER_TOKEN", "superadmin"), ("AUDIT_WORKER_TOKEN", "worker")):
        if not os.environ.get(name):
            sys.exit(f"{name} is not set: give it a {role} token (`npm start` prints one on its first start;"
                     f" `npm run -s token -- --sub me --role {role}` mints more)")
    url = os.environ.get("AUDIT_URL", "http://127.0.0.1:4000/graphql")
    owner = AuditClient(url, os.environ["AUDIT_OWNER_TOKEN"])
    worker = AuditClient(url, os.environ["AUDIT_WORKER_TOKEN"])
    shutdown_seconds = int(os.environ.get("AUDIT_SHUTDOWN_MS", "5000")) / 1000
    lease_seconds = int(os.environ.get("AUDIT_LEASE_SECONDS", "30"))

    thread_id = owner.create_thread("shutdown example").id
    run_id = owner.create_run(thread_id).id

    #region worker
    # The platform's stop leaves the run's block by SystemExit: the run ends INTERRUPTED.
    def stop(signum: int, frame: Optional[FrameType]) -> None:
        sys.exit(f"stopped by {signal.Signals(signum).name}")

    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop_signal, stop)

    # stop_timeout bounds the hand-back: past it (the server out of reach) the block is left
    # anyway, and the lease's expiry ends the run FAILED (LEASE_EXPIRED).
    run = worker.start_run(run_id, lease_seconds=lease_seconds, stop_timeout=shutdown_seconds)
    try:
        with run:
            run.model_started("model-1", model="example-model", input={})
            calls = [DeclaredToolCall("call-1", "long_job", {})]
            run.model_finished("model-1", output={"tool_calls": [{"id": "call-1", "name": "long_job", "args": {}}]}, tool_calls=calls)
            run.tool_started("call-1", "long_job", effective_input={})
            print(json.dumps({"working": True, "pid": os.getpid(), "threadId": thread_id, "runId": run_id}), flush=True)
            # The long tool (a download, a build) stops when the lease is gone: cancelled, or expired
            # while the process was frozen. Nothing more is sent then: every write would be refused.
            if run.lost.wait(3600):
                gone = run.lost_error
                sys.exit(f"run {run_id}: the lease is gone ({gone.code if gone else 'lost'}: {gone}); stopping")
    finally:
        if run.finished:
            print(f"run {run_id}: handed back {run.finished.status}", file=sys.stderr)
        elif run.finish_error:
            print(f"run {run_id}: not handed back ({run.finish_error}); its lease's expiry will end it", file=sys.stderr)
        # What is still unanswered is given up within the bound, so that the process exits.
        worker.close(timeout=shutdown_seconds)
    #endregion worker


if __name__ == "__main__":
    main()
