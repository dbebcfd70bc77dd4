"""GraphQL over HTTP with urllib, retrying replayable operations after transport failures and UNAVAILABLE answers."""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import queue
import random
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
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
    #: Seconds per attempt, from the host's lookup and the TLS handshake to the answer's last byte
    #: (a slow body included); a timed-out attempt is a transport failure.
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


#: Looks up a host for the client's connections (``AuditClient(url, token, resolve=...)``):
#: ``(host, port)`` to ``socket.getaddrinfo``'s list of addresses, tried in order.
Resolver = Callable[[str, int], List[Tuple[Any, ...]]]


def _getaddrinfo(host: str, port: int) -> List[Tuple[Any, ...]]:
    return list(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))


class _Attempt:
    """One send, bounded by its deadline (monotonic) from the host's lookup to the answer's last
    byte. A socket timeout bounds each read alone: a server that sends its headers late, or
    trickles its answer (or its TLS handshake) a byte at a time, would hold an attempt far longer
    (for ever). So every blocking step waits only for the time left, and needs no thread of its
    own, which Python 3.12 cannot start at interpreter shutdown; only the lookup, which nothing
    bounds in the standard library, is waited for on a thread."""

    def __init__(self, seconds: float, resolve: Resolver) -> None:
        self.deadline = time.monotonic() + seconds
        self._resolve = resolve

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def left(self) -> float:
        """Seconds to the deadline; past it, a timeout (an OSError, a transport failure)."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the attempt's deadline passed")
        return left

    def connect(self, address: Tuple[str, int]) -> socket.socket:
        """``socket.create_connection`` within the deadline, the socket's later steps too."""
        host, port = address
        failure: Optional[OSError] = None
        for family, kind, protocol, _, sockaddr in self._look_up(host, port):
            sock = _AttemptSocket(family, kind, protocol)
            sock.attempt = self
            try:
                sock.settimeout(self.left())
                sock.connect(sockaddr)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as error:
                sock.close()
                failure = error
                if self.expired:
                    break
        raise failure or OSError(f"{host}: the lookup gave no address")

    def _look_up(self, host: str, port: int) -> List[Tuple[Any, ...]]:
        if self._resolve is _getaddrinfo and _is_address(host):
            return _getaddrinfo(host, port)  # nothing to look up: no thread
        answers: List[Any] = []
        answered = threading.Event()

        def look_up() -> None:
            try:
                answers.append(self._resolve(host, port))
            except BaseException as error:  # noqa: BLE001 - raised on the caller's thread
                answers.append(error)
            answered.set()

        if not _lookups.run(look_up):
            # No lookup thread lives and none can start (Python 3.12 at interpreter shutdown, with
            # no client made before it): the resolver's own timeout bounds the lookup
            # (resolv.conf's timeout and attempts).
            look_up()
        if not answered.wait(self.left()):
            raise socket.timeout(f"looking up {host}: no answer")
        if isinstance(answers[0], BaseException):
            raise answers[0]
        return cast(List[Tuple[Any, ...]], answers[0])


class _LookupThreads:
    """Threads that look hosts up, each kept idle a minute for the next lookup: starting one per
    request cost more than the request did. A lookup that hangs holds its thread alone. One,
    started with the first client whose host is a name (``keep_one``), stays for good: where no
    thread can start (Python 3.12 at interpreter shutdown), a lookup waits for a living thread,
    within its attempt's bound, where on the caller's thread it would wait as long as the
    resolver does."""

    idle_seconds = 60.0

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # Also in a forked child: the parent's threads do not exist there.
        self._lock = threading.Lock()
        self._jobs: "queue.SimpleQueue[Callable[[], None]]" = queue.SimpleQueue()
        self._idle = 0  # threads waiting for a job, less the jobs queued with none waiting
        self._threads = 0
        self._kept = False

    def keep_one(self) -> None:
        """Starts the thread kept for good, unless it runs."""
        with self._lock:
            if self._kept:
                return
            self._kept = True
        self._start(None, kept=True)

    def run(self, job: Callable[[], None]) -> bool:
        """Runs ``job`` on a lookup thread, the first one free when none is idle and none can
        start; False when none lives and none can start."""
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._jobs.put(job)
                return True
        if self._start(job):
            return True
        with self._lock:
            if not self._threads:
                return False
            self._idle -= 1
            self._jobs.put(job)
            return True

    def _start(self, job: Optional[Callable[[], None]], kept: bool = False) -> bool:
        thread = threading.Thread(target=self._serve, args=(job, kept), name="agent-audit-lookup", daemon=True)
        with self._lock:
            self._threads += 1
        try:
            thread.start()
        except RuntimeError:
            with self._lock:
                self._threads -= 1
                if kept:
                    self._kept = False
            return False
        return True

    def _serve(self, job: Optional[Callable[[], None]], kept: bool) -> None:
        while True:
            if job is not None:
                job()
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=None if kept else self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    try:  # given while this one timed out: counted as idle, it is this one's
                        job = self._jobs.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        self._threads -= 1
                        return


_lookups = _LookupThreads()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_lookups._reset)  # pyright: ignore[reportPrivateUsage]  # its own state


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class _AttemptSocket(socket.socket):
    """Each send and read waits only for the time left in its attempt."""

    attempt: _Attempt

    def sendall(self, data: Any, flags: int = 0) -> None:
        self.settimeout(self.attempt.left())
        super().sendall(data, flags)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self.settimeout(self.attempt.left())
        return super().recv_into(buffer, nbytes, flags)


class _AttemptTLSSocket(ssl.SSLSocket):
    """As ``_AttemptSocket``, once its handshake is done (``_HTTPSConnection.secured``)."""

    attempt: _Attempt

    def send(self, data: Any, flags: int = 0) -> int:  # sendall sends by it
        self.settimeout(self.attempt.left())
        return super().send(data, flags)

    def recv_into(self, buffer: Any, nbytes: Optional[int] = None, flags: int = 0) -> int:
        self.settimeout(self.attempt.left())
        return super().recv_into(buffer, nbytes, flags)  # pyright: ignore[reportArgumentType]  # typeshed: int, default None


_tls_context: Optional[ssl.SSLContext] = None


def _tls() -> ssl.SSLContext:
    # One for the process, as http.client's default (certificates verified, HTTP/1.1), its
    # sockets bounded by their attempts.
    global _tls_context
    if _tls_context is None:
        context = ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        context.sslsocket_class = _AttemptTLSSocket
        _tls_context = context
    return _tls_context


class _AttemptRequest(urllib.request.Request):
    def __init__(self, url: str, body: bytes, headers: Dict[str, str], attempt: _Attempt) -> None:
        super().__init__(url, data=body, method="POST", headers=headers)
        self.attempt = attempt


class _HTTPConnection(http.client.HTTPConnection):
    """A connection whose socket is opened by its attempt (``_Attempt.connect``), through a
    proxy's CONNECT tunnel when urllib sets one: each of its steps waits only for the time left."""

    def __init__(self, host: str, *, attempt: Optional[_Attempt] = None, **options: Any) -> None:
        super().__init__(host, **options)
        assert attempt is not None, "opened by _HTTPHandler or _HTTPSHandler, with the request's attempt"
        self.attempt = attempt
        self.tunnel_to: Optional[Tuple[str, int, Mapping[str, str]]] = None

    def set_tunnel(self, host: str, port: Optional[int] = None, headers: Optional[Mapping[str, str]] = None, **options: Any) -> None:
        super().set_tunnel(host, port, dict(headers or {}), **options)  # Host headers name the tunnel's end
        if port is None:  # "host:port", as urllib gives it
            target, colon, given = host.rpartition(":")
            if colon and given.isdigit() and (":" not in target or target.endswith("]")):
                host, port = target, int(given)
        self.tunnel_to = (host.strip("[]"), port or self.default_port, headers or {})

    def connect(self) -> None:
        sock = self.attempt.connect((self.host, self.port))
        try:
            if self.tunnel_to is not None:
                _open_tunnel(sock, *self.tunnel_to)
            self.sock = self.secured(sock)
        except BaseException:
            sock.close()
            raise

    def secured(self, sock: socket.socket) -> socket.socket:
        return sock


class _HTTPSConnection(_HTTPConnection):
    default_port = http.client.HTTPS_PORT

    def secured(self, sock: socket.socket) -> socket.socket:
        server = self.host if self.tunnel_to is None else self.tunnel_to[0]
        sock.settimeout(self.attempt.left())  # the handshake's, whole
        tls = cast(_AttemptTLSSocket, _tls().wrap_socket(sock, server_hostname=server))
        tls.attempt = self.attempt
        return tls


def _open_tunnel(sock: socket.socket, host: str, port: int, headers: Mapping[str, str]) -> None:
    """Asks a proxy on ``sock`` for a tunnel to ``host:port`` (HTTP CONNECT); an answer other than 2xx raises."""
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}", *(f"{name}: {value}" for name, value in headers.items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    answer = http.client.HTTPResponse(sock, method="CONNECT")
    answer.begin()  # the status line and headers; the tunnel's bytes follow
    answer.close()  # its reader only: the socket stays open
    if not 200 <= answer.status < 300:
        raise OSError(f"the proxy refused a tunnel to {target}: HTTP {answer.status} {answer.reason}")


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req, attempt=cast(_AttemptRequest, req).attempt)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, attempt=cast(_AttemptRequest, req).attempt)


class _RedirectRefused(urllib.request.HTTPRedirectHandler):
    """A redirect answers as an HTTP error (``_exchange``): followed, a POST would arrive as a GET
    without its body, and each hop would be an attempt of its own."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None


# urlopen's opener (proxies from the environment), its connections bounded by their attempts.
_opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler, _RedirectRefused)


class Transport:
    def __init__(self, url: str, token: Union[str, TokenProvider], policy: RetryPolicy, resolve: Optional[Resolver] = None) -> None:
        self.url = url
        self._token = token
        self.policy = policy
        self._resolve = resolve or _getaddrinfo
        if resolve is not None or not _is_address(urllib.parse.urlsplit(url).hostname or ""):
            _lookups.keep_one()
        #: Set by ``AuditClient.close``: every later request raises RuntimeError.
        self.closed = False

    def execute(self, operation: Operation, variables: Mapping[str, Any], policy: Optional[RetryPolicy] = None, timeout: Optional[float] = None,
                on_failure: Optional[Callable[[AuditApiError], None]] = None) -> Any:
        """The operation's root field value. The body is serialised once, so every attempt sends
        the byte-identical request, which the server recognises as a replay. ``policy`` replaces
        the client's for this request; ``timeout`` bounds all its attempts together (seconds);
        ``on_failure`` is given each failed attempt's error (the last cause of a caller's timeout)."""
        if policy is None and timeout is None:
            return self.execute_answered(operation, variables, on_failure)[0]
        return self._execute(operation, variables, policy or self.policy, timeout, on_failure)[0]

    def execute_answered(self, operation: Operation, variables: Mapping[str, Any],
                         on_failure: Optional[Callable[[AuditApiError], None]] = None) -> Tuple[Any, int, int]:
        """As ``execute``: the root field value, with the sends it took and the answer's HTTP status."""
        return self._execute(operation, variables, self.policy, None, on_failure)

    def _execute(self, operation: Operation, variables: Mapping[str, Any], policy: RetryPolicy, timeout: Optional[float] = None,
                 on_failure: Optional[Callable[[AuditApiError], None]] = None) -> Tuple[Any, int, int]:
        # Every request goes through here.
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.closed:
            raise RuntimeError(f"{operation.name}: the AuditClient is closed")
        body = encode_json({"query": operation.document, "operationName": operation.name, "variables": variables})
        max_attempts = max(1, policy.max_attempts) if operation.replayable else 1
        token = self._current_token()
        asked_for_fresh_token = False
        attempt = 1
        failure: Optional[AuditApiError] = None  # the last failed attempt's: why a call given up at its timeout got no answer
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise no_answer_within(operation.name, cast(float, timeout), failure)
            # Given up at the caller's bound, the error names it, not what was left of it.
            bounded_by_caller = left is not None and left <= policy.timeout
            try:
                result, status = self._send_once(operation, body, token, cast(float, left) if bounded_by_caller else policy.timeout)
                return result, attempt, status
            except _AttemptExpired:
                if bounded_by_caller:
                    given_up = no_answer_within(operation.name, cast(float, timeout), failure)
                    given_up.attempts = attempt
                    raise given_up
                error = no_answer_within(operation.name, policy.timeout)
            except AuditApiError as refused:
                error = refused
            error.attempts = attempt
            failure = error
            if on_failure is not None:
                on_failure(error)
            # A refused token changed nothing: the provider's newer token (if it has one) gets
            # the request once more, replayable or not (a token that expired in flight).
            if error.code == "UNAUTHENTICATED" and callable(self._token) and not asked_for_fresh_token:
                asked_for_fresh_token = True
                fresh = self._token()
                if fresh != token:
                    token = fresh
                    continue
            if not error.retryable or attempt >= max_attempts:
                raise error
            # A server that says when to come back (UNAVAILABLE's Retry-After) is not asked sooner.
            pause = max(backoff_delay(policy, attempt), min(error.retry_after or 0.0, policy.max_delay))
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
        attempt = _Attempt(timeout, self._resolve)
        try:
            status, text = _exchange(operation, _AttemptRequest(self.url, body, headers, attempt), timeout)
        except AuditApiError:
            if attempt.expired:
                raise _AttemptExpired() from None
            raise

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


class _AttemptExpired(Exception):
    """An attempt got no answer within its bound (``_Attempt``): a transport failure named by that
    bound, the caller's ``timeout=`` or the policy's."""


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
        if 300 <= status < 400:
            raise _transport_failure(operation, f"HTTP {status}, a redirect to {answer.headers.get('Location')}, not followed (a POST "
                                     "would arrive there as a GET without its body): give the client the address it names", False,
                                     status) from answer
        if status in _GATEWAY_STATUSES:
            # The server's own 503 UNAVAILABLE (its database cannot be reached for the moment)
            # is retried like a gateway's answer, after its Retry-After.
            unavailable = _unavailable_error(operation.name, status, text, answer.headers.get("Retry-After"))
            if unavailable is not None:
                raise unavailable from answer
            raise _transport_failure(operation, f"HTTP {status}", True, status) from answer
    except (OSError, http.client.HTTPException) as error:
        if isinstance(getattr(error, "reason", error), ssl.SSLCertVerificationError):
            # Nothing was sent, and no retry would be trusted sooner.
            raise _transport_failure(operation, f"the server's TLS certificate is not trusted: {error!r}", False) from error
        # Refused, reset, timed out, closed before the answer: it may or may not have committed.
        raise _transport_failure(operation, f"network error: {error!r}", True) from error
    return status, text


def _transport_failure(operation: Operation, message: str, retryable: bool, status: Optional[int] = None) -> AuditApiError:
    return AuditApiError(f"{operation.name}: {message}", code=TRANSPORT_ERROR, operation=operation.name, retryable=retryable,
                         http_status=status)
