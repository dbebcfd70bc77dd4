#!/usr/bin/env bash
# A whole run with curl and jq: the owner creates a thread and a run, the worker claims it and
# records a model call that declares a tool call, the tool's execution and the run's end; then
# the owner reads the timeline. Needs bash, curl and jq (apt-get install -y curl jq).
#
#   AUDIT_OWNER_TOKEN=<superadmin token> AUDIT_WORKER_TOKEN=<worker token> bash examples/curl/walkthrough.sh
#
# The tokens are the ones `npm start` prints on its first start (or `npm run -s token -- …`);
# a leading "Bearer " is accepted. AUDIT_URL defaults to http://127.0.0.1:4000/graphql.
set -euo pipefail

URL=${AUDIT_URL:-http://127.0.0.1:4000/graphql}
OWNER=${AUDIT_OWNER_TOKEN:?set AUDIT_OWNER_TOKEN to a superadmin token}
WORKER=${AUDIT_WORKER_TOKEN:?set AUDIT_WORKER_TOKEN to a worker token}
OWNER=${OWNER#Bearer } WORKER=${WORKER#Bearer }

# call <token> <query> [<variables as JSON>]: the answer's data, or "CODE: message" and exit 1.
source "$(dirname "${BASH_SOURCE[0]}")/call.sh"

THREAD=$(call "$OWNER" 'mutation { createThread(input: {title: "curl"}) { id } }' | jq -r .createThread.id)
# A retry of this request with the same createId (after a lost answer) gets the run it created,
# not a second one that nobody would claim.
CREATE_ID=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
RUN=$(call "$OWNER" 'mutation($t: ID!, $k: String) { createRun(input: {threadId: $t, createId: $k}) { id } }' \
  "$(jq -nc --arg t "$THREAD" --arg k "$CREATE_ID" '{t: $t, k: $k}')" | jq -r .createRun.id)
echo "thread $THREAD, run $RUN"

# The worker claims the run: the lease's epoch goes into every later write. A retry of this
# request with the same claimId (after a lost answer) gets the same lease back. Any unique
# string will do; this one is 16 random bytes in hex.
CLAIM_ID=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
EPOCH=$(call "$WORKER" 'mutation($r: ID!, $c: String) { claimRun(input: {runId: $r, leaseSeconds: 60, claimId: $c}) { epoch } }' \
  "$(jq -nc --arg r "$RUN" --arg c "$CLAIM_ID" '{r: $r, c: $c}')" | jq -r .claimRun.epoch)
LEASE=$(jq -nc --arg r "$RUN" --argjson e "$EPOCH" '{runId: $r, epoch: $e}')
echo "lease $LEASE"

call "$WORKER" 'mutation($i: ModelStartedInput!) { recordModelStarted(input: $i) { id status } }' "$(jq -nc --argjson lease "$LEASE" '{i: {
  lease: $lease, operationId: "model-1", sequence: "1", model: "gpt-x",
  input: {messages: [{role: "user", content: "Weather in Paris?"}]},
  observedAt: "2026-11-29T21:00:00.000Z", clock: {clockId: "host-a/pid-4242", nanos: "1000000000"}}}')"

call "$WORKER" 'mutation($i: ModelFinishedInput!) { recordModelFinished(input: $i) { status durationMs toolCalls { toolCallId status } } }' "$(jq -nc --argjson lease "$LEASE" '{i: {
  lease: $lease, operationId: "model-1", status: "COMPLETED", sequence: "2",
  output: {content: "", tool_calls: [{id: "call-1", name: "get_weather", args: {city: "Paris"}}]},
  toolCalls: [{id: "call-1", name: "get_weather", args: {city: "Paris"}}],
  observedAt: "2026-11-29T21:00:00.800Z", clock: {clockId: "host-a/pid-4242", nanos: "1800000000"}}}')"

call "$WORKER" 'mutation($i: ToolStartedInput!) { recordToolStarted(input: $i) { id status } }' "$(jq -nc --argjson lease "$LEASE" '{i: {
  lease: $lease, toolCallId: "call-1", name: "get_weather", effectiveInput: {city: "Paris", units: "metric"},
  sequence: "3", observedAt: "2026-11-29T21:00:00.900Z", clock: {clockId: "host-a/pid-4242", nanos: "1900000000"}}}')"

call "$WORKER" 'mutation($i: ToolFinishedInput!) { recordToolFinished(input: $i) { status durationMs toolCall { status output } } }' "$(jq -nc --argjson lease "$LEASE" '{i: {
  lease: $lease, toolCallId: "call-1", sequence: "4",
  output: {type: "tool", tool_call_id: "call-1", name: "get_weather", content: "Sunny, 21 °C", status: "success"},
  observedAt: "2026-11-29T21:00:01.250Z", clock: {clockId: "host-a/pid-4242", nanos: "2250000000"}}}')"

call "$WORKER" 'mutation($i: FinishRunInput!) { finishRun(input: $i) { status } }' \
  "$(jq -nc --argjson lease "$LEASE" '{i: {lease: $lease, status: "COMPLETED"}}')"

# The timeline, as a debug UI reads it (superadmin, own thread):
call "$OWNER" 'query($t: ID!) { threadAudits(threadId: $t) { items { __typename operationId sequence status durationMs } } }' \
  "$(jq -nc --arg t "$THREAD" '{t: $t}')" | jq .
