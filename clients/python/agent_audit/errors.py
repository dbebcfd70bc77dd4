"""Errors of the audit server's API, as exceptions carrying the contract's code."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Type

#: The ``extensions.code`` values the contract defines (docs/runtime-authors.md, "Errors and whether to retry").
AUDIT_ERROR_CODES = (
    "UNAUTHENTICATED",
    "FORBIDDEN",
    "NOT_FOUND",
    "BAD_USER_INPUT",
    "LEASE_LOST",
    "LEASE_EXPIRED",
    "MODEL_NOT_FOUND",
    "NAMESPACE_REJECTED",
    "CONFLICT",
    "INVALID_TRANSITION",
    "UNAVAILABLE",
    "INTERNAL_SERVER_ERROR",
)

#: No GraphQL answer arrived: the connection failed or was reset, the attempt timed out, a gateway
#: answered 502/503/504, or the body was not a GraphQL response.
TRANSPORT_ERROR = "TRANSPORT_ERROR"

#: Answers after which the run is no longer this worker's: stop its work, send nothing more for it.
LEASE_GONE_CODES = ("LEASE_LOST", "LEASE_EXPIRED")

#: A run session's write answers after which no write of its run can succeed: the lease gone, or
#: NOT_FOUND, the run no longer existing (its thread was deleted: docs/deletion.md).
RUN_GONE_CODES = LEASE_GONE_CODES + ("NOT_FOUND",)


class AuditApiError(Exception):
    """A failed API call.

    ``code`` is the GraphQL ``extensions.code`` of the first error, or ``TRANSPORT_ERROR`` when no
    GraphQL answer arrived. ``retryable`` is true only for transport failures and ``UNAVAILABLE``
    (the server's database cannot be reached for the moment; ``retry_after`` is the seconds it asked
    to wait), after which the byte-identical request may be sent again; every other GraphQL error
    is final. ``attempts`` says how
    many times the request was sent.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        operation: str,
        retryable: bool,
        http_status: Optional[int] = None,
        errors: Optional[List[Dict[str, Any]]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.operation = operation
        self.retryable = retryable
        self.http_status = http_status
        self.errors: List[Dict[str, Any]] = errors or []
        self.retry_after = retry_after
        self.attempts = 1

    def _extension(self, name: str) -> Optional[str]:
        for error in self.errors:
            extensions: Dict[str, Any] = error.get("extensions") or {}
            value = extensions.get(name)
            if isinstance(value, str):
                return value
        return None

    @property
    def request_id(self) -> Optional[str]:
        """The server's correlation id of an INTERNAL_SERVER_ERROR (report it), else None."""
        return self._extension("requestId")

    @property
    def run_status(self) -> Optional[str]:
        """A LEASE_LOST because the run has ended: how it ended (``extensions.runStatus``), else None.

        A worker cannot read a run it no longer leases; after a lost ``finish_run`` answer this
        says whether the run ended as the finish asked.
        """
        return self._extension("runStatus")

    @property
    def lease_gone(self) -> bool:
        """True for LEASE_LOST and LEASE_EXPIRED: the run is no longer this worker's."""
        return self.code in LEASE_GONE_CODES

    def __reduce__(self) -> Tuple[Any, ...]:
        # Pickled (a process pool sending its worker's exception back, copy.copy) without calling
        # __init__ again: the default would call it with the message alone, and unpickling fail.
        return (_unpickled, (type(self), self.args), self.__dict__)

    def __str__(self) -> str:
        return f"{super().__str__()} ({self.code}{', retryable' if self.retryable else ''}, {self.attempts} attempt{'s' if self.attempts != 1 else ''})"


class LeaseLostError(AuditApiError):
    """The run's lease is gone (LEASE_LOST or LEASE_EXPIRED; NOT_FOUND: its thread was deleted): stop
    the agent's work for this run.

    Raised by a run session's calls once its lease keeper or one of its writes found the lease
    gone; ``code`` says which, ``cause`` is the API error that said so. Never retryable.
    """

    def __init__(self, run_id: str, cause: AuditApiError) -> None:
        super().__init__(
            f"run {run_id}: the lease is gone; stop working on this run",
            code=cause.code,
            operation=cause.operation,
            retryable=False,
            http_status=cause.http_status,
            errors=cause.errors,
        )
        self.attempts = cause.attempts
        self.run_id = run_id
        self.cause = cause


def _unpickled(kind: Type[AuditApiError], args: Tuple[Any, ...]) -> AuditApiError:
    return kind.__new__(kind, *args)  # its args, then its attributes as pickled


def no_answer_within(operation: str, timeout: float, last_failure: Optional[AuditApiError] = None) -> AuditApiError:
    """A call given up after ``timeout`` seconds (its ``timeout=``, a shutdown's bound): it may or
    may not have been applied, as after any transport failure. ``last_failure``, how its last
    failed attempt failed (a refused connection, a gateway's 503), is named in the message and is
    the error's ``__cause__``: "no answer" alone would hide why."""
    message = f"{operation}: no answer within {timeout:g} s; given up"
    if last_failure is not None:
        reason = str(last_failure.args[0]) if last_failure.args else ""
        message += f"; the last attempt failed: {reason.removeprefix(f'{last_failure.operation}: ')}"
    error = AuditApiError(message, code=TRANSPORT_ERROR, operation=operation, retryable=True)
    if last_failure is not None:
        error.attempts = last_failure.attempts
    error.__cause__ = last_failure  # None hides the context: the attempt's own timeout says no more
    return error
