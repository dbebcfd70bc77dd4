"""GraphQL over HTTP with urllib, retrying replayable operations after transport failures and UNAVAILABLE answers."""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generator, List, Mapping, Optional, Tuple, Union, cast

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
    #: Seconds per attempt, from sending the request to the answer's last byte (a slow body
    #: included); a timed-out attempt is a transport failure.
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


class _Attempt:
    """One send: its deadline (monotonic) and, once connected, its socket."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.sock: Optional[socket.socket] = None
        self.expired = False


class _Watchdog:
    """Shuts down each attempt's socket at its deadline, from one daemon thread for the process.
    A socket timeout bounds each read alone: a server that sends its headers late, or trickles its
    answer a byte at a time, would hold an attempt far longer (for ever). The attempt's next read
    then finds the connection closed."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # Also in a forked child: the parent's thread does not exist there, and it may have held the lock.
        self._lock = threading.Condition()
        self._armed: List[_Attempt] = []
        self._thread: Optional[threading.Thread] = None

    @contextmanager
    def attempt(self, seconds: float) -> Generator[_Attempt, None, None]:
        attempt = _Attempt(time.monotonic() + seconds)
        with self._lock:
            if self._thread is None:
                self._start_thread()
            self._armed.append(attempt)
            self._lock.notify()
        try:
            yield attempt
        finally:
            with self._lock:
                if attempt in self._armed:
                    self._armed.remove(attempt)

    def watch(self, attempt: _Attempt, sock: socket.socket) -> None:
        with self._lock:
            attempt.sock = sock
            if attempt.expired:
                _shut_down(sock)

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._run, name="agent-audit-deadlines", daemon=True)
        try:
            thread.start()
        except RuntimeError:
            # No thread starts at interpreter shutdown (Python 3.12): the socket timeout still bounds each read.
            return
        self._thread = thread

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for attempt in [attempt for attempt in self._armed if attempt.deadline <= now]:
                    self._armed.remove(attempt)
                    attempt.expired = True
                    if attempt.sock is not None:
                        _shut_down(attempt.sock)
                self._lock.wait(min((attempt.deadline - now for attempt in self._armed), default=None))


def _shut_down(sock: socket.socket) -> None:
    try:
        # The plain socket's method, also for a TLS one: SSLSocket.shutdown would unwrap its TLS
        # state under the thread still reading it.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


_watchdog = _Watchdog()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_watchdog._reset)  # pyright: ignore[reportPrivateUsage]  # its own state


class _AttemptRequest(urllib.request.Request):
    def __init__(self, url: str, body: bytes, headers: Dict[str, str], attempt: _Attempt) -> None:
        super().__init__(url, data=body, method="POST", headers=headers)
        self.attempt = attempt


def _attempt_of(request: urllib.request.Request) -> Optional[_Attempt]:
    # None for a request urllib made itself (a redirect's): the socket timeout alone bounds it.
    return request.attempt if isinstance(request, _AttemptRequest) else None


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, *, attempt: Optional[_Attempt] = None, **options: Any) -> None:
        super().__init__(host, **options)
        self._attempt = attempt

    def connect(self) -> None:
        super().connect()
        if self._attempt is not None:
            _watchdog.watch(self._attempt, self.sock)


class _HTTPSConnection(_HTTPConnection, http.client.HTTPSConnection):
    """Watched once its TLS handshake is done (``connect`` wraps ``HTTPSConnection.connect``)."""


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req, attempt=_attempt_of(req))


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, attempt=_attempt_of(req))


# urlopen's opener (proxies from the environment, redirects), its connections watched.
_opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)


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
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/graphql-response+json, application/json",
            "Authorization": _authorization(token),
        }
        with _watchdog.attempt(timeout) as attempt:
            try:
                status, text = _exchange(operation, _AttemptRequest(self.url, body, headers, attempt), timeout)
            except AuditApiError:
                if attempt.expired:
                    raise no_answer_within(operation.name, timeout) from None
                raise
        if attempt.expired:  # an answer cut short may still read as a whole one (no Content-Length)
            raise no_answer_within(operation.name, timeout)

        try:
            payload: Any = json.loads(text)
            if not isinstance(payload, dict):
                raise ValueError("not an object")
        except ValueError as error:
            # A server error page may pass; any other answer that is not GraphQL will not.
            raise _transport_failure(operation, f"HTTP {status} with a body that is not a GraphQL response", status >= 500, status) from error
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
            raise _transport_failure(operation, f"HTTP {status} without data.{operation.field}", False, status)
        return data[operation.field], status


def _exchange(operation: Operation, request: urllib.request.Request, timeout: float) -> Tuple[int, bytes]:
    """The answer's status and body; a transport failure, or the server's UNAVAILABLE, raises."""
    try:
        with _opener.open(request, timeout=timeout) as response:
            status: int = response.status
            text = response.read()
    except urllib.error.HTTPError as answer:
        # An HTTP error status: GraphQL errors arrive this way too (400, 413, ...).
        status = answer.code
        try:
            text = answer.read()
        except (OSError, http.client.HTTPException) as error:
            raise _transport_failure(operation, f"HTTP {status}, its body lost: {error!r}", True, status) from error
        if status in _GATEWAY_STATUSES:
            # The server's own 503 UNAVAILABLE (its database cannot be reached for the moment)
            # is retried like a gateway's answer, after its Retry-After.
            unavailable = _unavailable_error(operation.name, status, text, answer.headers.get("Retry-After"))
            if unavailable is not None:
                raise unavailable from answer
            raise _transport_failure(operation, f"HTTP {status}", True, status) from answer
    except (OSError, http.client.HTTPException) as error:
        # Refused, reset, timed out, closed before the answer: it may or may not have committed.
        raise _transport_failure(operation, f"network error: {error!r}", True) from error
    return status, text


def _transport_failure(operation: Operation, message: str, retryable: bool, status: Optional[int] = None) -> AuditApiError:
    return AuditApiError(f"{operation.name}: {message}", code=TRANSPORT_ERROR, operation=operation.name, retryable=retryable,
                         http_status=status)
