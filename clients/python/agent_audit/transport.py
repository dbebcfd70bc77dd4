"""GraphQL over HTTP with urllib, retrying replayable operations after transport failures and UNAVAILABLE answers."""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union, cast

from ._operations import Operation
from .errors import TRANSPORT_ERROR, AuditApiError, no_answer_within


@dataclass(frozen=True)
class RetryPolicy:
    """How a replayable request is retried after a transport failure.

    The default retries wait 8 to 16 s in all (about 12; 250 ms doubling to 4 s, with jitter), so
    a request outlasts a server restart of a few seconds (an embedded one takes about 4).
    """

    #: Total sends of one request, the first included.
    max_attempts: int = 8
    #: Backoff before the second attempt; it doubles per attempt up to ``max_delay``, with jitter.
    base_delay: float = 0.25
    max_delay: float = 4.0
    #: Seconds per attempt; a timed-out attempt is a transport failure.
    timeout: float = 30.0


def backoff_delay(policy: RetryPolicy, failed_attempt: int, rand: Callable[[], float] = random.random) -> float:
    """Jitter over the upper half of the doubled delay: spreads many workers' retries, never near zero."""
    ceiling = min(policy.max_delay, policy.base_delay * 2 ** (failed_attempt - 1))
    return ceiling / 2 + rand() * ceiling / 2


# What a proxy or load balancer answers when the server did not (or may not have).
_GATEWAY_STATUSES = (502, 503, 504)


def _unavailable_error(operation: str, status: int, text: bytes, retry_after: Optional[str]) -> Optional[AuditApiError]:
    try:
        payload: Any = json.loads(text)
    except ValueError:
        return None
    body: Dict[str, Any] = cast(Dict[str, Any], payload) if isinstance(payload, dict) else {}
    listed: Any = body.get("errors")
    errors: List[Any] = cast(List[Any], listed) if isinstance(listed, list) else []
    head: Any = errors[0] if errors else None
    first: Dict[str, Any] = cast(Dict[str, Any], head) if isinstance(head, dict) else {}
    given: Any = first.get("extensions")
    extensions: Dict[str, Any] = cast(Dict[str, Any], given) if isinstance(given, dict) else {}
    if extensions.get("code") != "UNAVAILABLE":
        return None
    try:
        seconds: Optional[float] = float(retry_after) if retry_after else None
    except ValueError:
        seconds = None
    return AuditApiError(
        f"{operation}: {first.get('message')}",
        code="UNAVAILABLE",
        operation=operation,
        retryable=True,
        http_status=status,
        errors=cast(List[Dict[str, Any]], errors),
        retry_after=seconds,
    )


def encode_json(value: Any) -> bytes:
    """``value`` as the client sends JSON: compact UTF-8, with no NaN or infinity. A text holding an
    unpaired surrogate, which UTF-8 cannot carry, goes as ASCII (``\\u`` escapes), for the server
    to refuse by name; escaping every text would make an emoji 12 bytes instead of 4, and a large
    payload in another script pass the server's request size limit."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")


#: Gives the token for the next request (``AuditClient(url, token=provider)``): called before
#: each send, so it may cache a token and mint a new one near its ``exp``.
TokenProvider = Callable[[], str]


def _authorization(token: str) -> str:
    return token if token.startswith("Bearer ") else f"Bearer {token}"


class Transport:
    def __init__(self, url: str, token: Union[str, TokenProvider], policy: RetryPolicy) -> None:
        self.url = url
        self._token = token
        self.policy = policy
        #: Set by ``AuditClient.close``: every later request raises RuntimeError.
        self.closed = False

    def execute(self, operation: Operation, variables: Mapping[str, Any], policy: Optional[RetryPolicy] = None, timeout: Optional[float] = None) -> Any:
        """The operation's root field value. The body is serialised once, so every attempt sends
        the byte-identical request, which the server recognises as a replay. ``policy`` replaces
        the client's for this request; ``timeout`` bounds all its attempts together (seconds)."""
        if policy is None and timeout is None:
            return self.execute_answered(operation, variables)[0]
        return self._execute(operation, variables, policy or self.policy, timeout)[0]

    def execute_answered(self, operation: Operation, variables: Mapping[str, Any]) -> Tuple[Any, int, int]:
        """As ``execute``: the root field value, with the sends it took and the answer's HTTP status."""
        return self._execute(operation, variables, self.policy)

    def _execute(self, operation: Operation, variables: Mapping[str, Any], policy: RetryPolicy, timeout: Optional[float] = None) -> Tuple[Any, int, int]:
        # Every request goes through here.
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.closed:
            raise RuntimeError(f"{operation.name}: the AuditClient is closed")
        body = encode_json({"query": operation.document, "operationName": operation.name, "variables": variables})
        max_attempts = max(1, policy.max_attempts) if operation.replayable else 1
        token = self._current_token()
        asked_for_fresh_token = False
        attempt = 1
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise no_answer_within(operation.name, cast(float, timeout))
            try:
                result, status = self._send_once(operation, body, token, policy.timeout if left is None else min(policy.timeout, left))
                return result, attempt, status
            except AuditApiError as error:
                error.attempts = attempt
                # A refused token changed nothing: the provider's newer token (if it has one) gets
                # the request once more, replayable or not (a token that expired in flight).
                if error.code == "UNAUTHENTICATED" and callable(self._token) and not asked_for_fresh_token:
                    asked_for_fresh_token = True
                    fresh = self._token()
                    if fresh != token:
                        token = fresh
                        continue
                if not error.retryable or attempt >= max_attempts:
                    raise
                # A server that says when to come back (UNAVAILABLE's Retry-After) is not asked sooner.
                retry_after = min(error.retry_after or 0.0, policy.max_delay)
            pause = max(backoff_delay(policy, attempt), retry_after)
            time.sleep(pause if deadline is None else max(0.0, min(pause, deadline - time.monotonic())))
            token = self._current_token()
            attempt += 1

    def _current_token(self) -> str:
        return self._token() if callable(self._token) else self._token

    def _send_once(self, operation: Operation, body: bytes, token: str, timeout: float) -> Tuple[Any, int]:
        def transport_failure(message: str, retryable: bool, status: Optional[int] = None) -> AuditApiError:
            return AuditApiError(
                f"{operation.name}: {message}",
                code=TRANSPORT_ERROR,
                operation=operation.name,
                retryable=retryable,
                http_status=status,
            )

        request = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/graphql-response+json, application/json",
                "Authorization": _authorization(token),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status: int = response.status
                text = response.read()
        except urllib.error.HTTPError as answer:
            # An HTTP error status: GraphQL errors arrive this way too (400, 413, ...).
            status = answer.code
            try:
                text = answer.read()
            except (OSError, http.client.HTTPException) as error:
                raise transport_failure(f"HTTP {status}, its body lost: {error!r}", True, status) from error
            if status in _GATEWAY_STATUSES:
                # The server's own 503 UNAVAILABLE (its database cannot be reached for the moment)
                # is retried like a gateway's answer, after its Retry-After.
                unavailable = _unavailable_error(operation.name, status, text, answer.headers.get("Retry-After"))
                if unavailable is not None:
                    raise unavailable from answer
                raise transport_failure(f"HTTP {status}", True, status) from answer
        except (OSError, http.client.HTTPException) as error:
            # Refused, reset, timed out, closed before the answer: it may or may not have committed.
            raise transport_failure(f"network error: {error!r}", True) from error

        try:
            payload: Any = json.loads(text)
            if not isinstance(payload, dict):
                raise ValueError("not an object")
        except ValueError as error:
            # A server error page may pass; any other answer that is not GraphQL will not.
            raise transport_failure(f"HTTP {status} with a body that is not a GraphQL response", status >= 500, status) from error
        response_json = cast(Dict[str, Any], payload)
        errors: List[Dict[str, Any]] = response_json.get("errors") or []
        if errors:
            first = errors[0]
            extensions: Dict[str, Any] = first.get("extensions") or {}
            raise AuditApiError(
                f"{operation.name}: {first.get('message')}",
                code=extensions.get("code") or "UNKNOWN",
                operation=operation.name,
                retryable=False,
                http_status=status,
                errors=errors,
            )
        data: Dict[str, Any] = response_json.get("data") or {}
        if operation.field not in data:
            raise transport_failure(f"HTTP {status} without data.{operation.field}", False, status)
        return data[operation.field], status
