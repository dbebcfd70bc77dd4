# call <token> <query> [<variables as JSON>]: prints the answer's data; on an error, prints
# "CODE: message" to stderr and stops the script. Sourced by the scripts beside it; needs curl
# and jq, and URL set to the GraphQL endpoint.
call() {
  local answer
  answer=$(curl -sS --fail-with-body "$URL" -H 'content-type: application/json' -H "authorization: Bearer $1" \
    -d "$(jq -nc --arg query "$2" --argjson variables "${3:-{\}}" '{$query, $variables}')") || {
    echo "HTTP request failed: $answer" >&2
    exit 1
  }
  if jq -e '.errors' <<<"$answer" >/dev/null; then
    jq -r '.errors[] | "\(.extensions.code): \(.message)"' <<<"$answer" >&2
    exit 1
  fi
  jq -c .data <<<"$answer"
}
