#!/usr/bin/env bash
# An incident from a terminal, with curl and jq only (apt-get install -y curl jq): what failed in
# a thread, where an error text occurs across threads, what ran and failed in a time window, tool
# status live over server-sent events (resumed after a dropped connection), the Activity totals,
# and erasing a thread.
#
#   AUDIT_OWNER_TOKEN=<superadmin token> bash examples/curl/incident.sh <command> [argument]
#
#   failures <thread id>   the thread's FAILED, CANCELLED or ABANDONED runs and failed tool calls, one JSON line each
#   search <text>          every audit (in every thread the token owns) whose name, input, output or error holds <text>
#   window <since> <until> [status]   every audit whose start the server recorded from <since> up to, not including,
#                          <until> (RFC 3339, e.g. 2026-12-06T14:02:00Z), in every thread the token owns; [status]: FAILED, ...
#   follow <thread id>     every change of the thread as a JSON line, live; resumes after a dropped connection
#                          (AUDIT_AFTER=<cursor>, from an earlier line, starts right after that change)
#   activity [seconds]     the tool activity of the last <seconds> (60 to 604800, default 3600)
#   delete <thread id>     erases the thread, prints the receipt, then checks it is NOT_FOUND
#
# Audits are for a superadmin on its own threads. AUDIT_URL defaults to http://127.0.0.1:4000/graphql;
# a leading "Bearer " in the token is accepted.
set -euo pipefail

URL=${AUDIT_URL:-http://127.0.0.1:4000/graphql}
TOKEN=${AUDIT_OWNER_TOKEN:?set AUDIT_OWNER_TOKEN to a superadmin token}
TOKEN=${TOKEN#Bearer }

# call <token> <query> [<variables as JSON>]: the answer's data, or "CODE: message" and exit 1.
source "$(dirname "${BASH_SOURCE[0]}")/call.sh"

command=${1:-}
case "$command" in
failures)
  thread=${2:?usage: incident.sh failures <thread id>}
  # Runs come 500 at a time, in creation order: read on after the last one until a page is short.
  after=null
  while :; do
    page=$(call "$TOKEN" 'query($t: ID!, $after: ID) { thread(id: $t) { runs(first: 500, after: $after) {
        id status createdAt finishedAt error
        toolCalls { toolCallId name status durationMs error } } } }' \
      "$(jq -nc --arg t "$thread" --argjson after "$after" '{t: $t, after: $after}')")
    jq -c '.thread.runs[] | select(.status == "FAILED" or .status == "CANCELLED" or .status == "ABANDONED"
      or any(.toolCalls[]; .status == "FAILED")) | .toolCalls |= map(select(.status == "FAILED"))' <<<"$page"
    [ "$(jq '.thread.runs | length' <<<"$page")" -eq 500 ] || break
    after=$(jq '.thread.runs[-1].id' <<<"$page")
  done
  ;;
search)
  text=${2:?usage: incident.sh search <text>}
  # Newest first, 50 a page; `after` is the last hit's audit id.
  after=null
  while :; do
    page=$(call "$TOKEN" 'query($text: String!, $after: ID) { searchAudits(text: $text, first: 50, after: $after) {
        hasMore items { threadId threadTitle snippet audit { __typename id runId status startedAt } } } }' \
      "$(jq -nc --arg text "$text" --argjson after "$after" '{text: $text, after: $after}')")
    jq -c '.searchAudits.items[]' <<<"$page"
    [ "$(jq .searchAudits.hasMore <<<"$page")" = true ] || break
    after=$(jq '.searchAudits.items[-1].audit.id' <<<"$page")
  done
  ;;
window)
  usage='usage: incident.sh window <since> <until> [status]'
  since=${2:?$usage}
  until=${3:?$usage}
  # The server's clock when it recorded each start, not the worker's startedAt (docs/debug-ui.md,
  # "An incident window"). Newest first, 50 a page; the same window with `after`, the last hit's audit id.
  after=null
  while :; do
    page=$(call "$TOKEN" 'query($since: DateTime!, $until: DateTime!, $status: AuditStatus, $after: ID) {
        searchAudits(since: $since, until: $until, status: $status, first: 50, after: $after) {
        hasMore items { threadId threadTitle audit { __typename id runId status startedAt finishedAt
          ... on ToolAudit { name error } ... on ModelAudit { model error } } } } }' \
      "$(jq -nc --arg since "$since" --arg until "$until" --arg status "${4:-}" --argjson after "$after" \
        '{$since, $until, status: (if $status == "" then null else $status end), after: $after}')")
    jq -c '.searchAudits.items[]' <<<"$page"
    [ "$(jq .searchAudits.hasMore <<<"$page")" = true ] || break
    after=$(jq '.searchAudits.items[-1].audit.id' <<<"$page")
  done
  ;;
follow)
  thread=${2:?usage: incident.sh follow <thread id>}
  query='subscription($t: ID!) { threadChanges(threadId: $t) {
    cursor run { id status error } audit { __typename id status ... on ToolAudit { name error } } } }'
  body=$(jq -nc --arg query "$query" --arg t "$thread" '{$query, variables: {t: $t}}')
  cursor=${AUDIT_AFTER:-}
  # -N: print each event as it arrives. Each event's `id:` line is its cursor; sent back as
  # Last-Event-ID after a dropped connection, the stream resumes right after it: nothing is
  # missed or repeated. `event: complete` (or an error) ends the stream for good.
  while :; do
    ended=$(mktemp)
    curl -sS -N --fail-with-body "$URL" -H 'accept: text/event-stream' -H 'content-type: application/json' \
      -H "authorization: Bearer $TOKEN" ${cursor:+-H "last-event-id: $cursor"} -d "$body" 2>/dev/null |
      while IFS= read -r line; do
        case "$line" in
        'id: '*) echo "${line#id: }" >"$ended.cursor" ;;
        'event: complete') [ -s "$ended" ] || echo complete >"$ended" ;;
        'data: {'*)
          data=${line#data: }
          if jq -e '.errors' <<<"$data" >/dev/null; then
            jq -r '.errors[] | "\(.extensions.code)\(.extensions.reason // "" | if . == "" then "" else " (\(.))" end): \(.message)"' <<<"$data" >&2
            jq -e '.errors[0].extensions.reason == "SERVER_STOPPING"' <<<"$data" >/dev/null || echo error >"$ended"
          else
            jq -c .data.threadChanges <<<"$data"
          fi
          ;;
        '{"errors"'*) jq -r '.errors[] | "\(.extensions.code): \(.message)"' <<<"$line" >&2; echo error >"$ended" ;;
        esac
      done || true
    [ -s "$ended.cursor" ] && cursor=$(cat "$ended.cursor")
    outcome=$(cat "$ended")
    rm -f "$ended" "$ended.cursor"
    [ "$outcome" = complete ] && exit 0
    [ "$outcome" = error ] && exit 1
    echo "disconnected; resuming after ${cursor:-now} in 1 s" >&2
    sleep 1
  done
  ;;
activity)
  call "$TOKEN" 'query($w: Int!) { toolActivity(windowSeconds: $w) {
      at since runningCount
      running(first: 20) { id name startedAt run { id thread { id title } } }
      recentFailures(first: 20) { id name finishedAt error run { id thread { id title } } }
      tools { name running completed failed otherEnded p50DurationMs p95DurationMs maxDurationMs } } }' \
    "$(jq -nc --argjson w "${2:-3600}" '{w: $w}')" | jq .toolActivity
  ;;
delete)
  thread=${2:?usage: incident.sh delete <thread id>}
  vars=$(jq -nc --arg id "$thread" '{id: $id}')
  call "$TOKEN" 'mutation($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }' "$vars" | jq -c .deleteThread
  # From the deletion on, the thread is as if it never existed; its open streams ended with
  # SUBSCRIPTION_INTERRUPTED (reason THREAD_DELETED).
  answer=$( (call "$TOKEN" 'query($id: ID!) { thread(id: $id) { id } }' "$vars") 2>&1 || true)
  if [[ $answer == 'NOT_FOUND: '* ]]; then
    echo "thread $thread: NOT_FOUND (gone)"
  else
    echo "thread $thread is still readable" >&2
    exit 1
  fi
  ;;
*)
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
