"""API errors and the predicates client-go branches on.

Ports the part of ``k8s.io/apimachinery/pkg/api/errors`` that ``tools/cache`` reads:
``StatusError`` with an HTTP code, a status reason and status causes (here an
:class:`ApiError` subclass per reason), and ``IsResourceExpired`` / ``IsGone`` (client-go
``isExpiredError``), ``IsTooManyRequests``, ``IsInternalError`` and the
``ResourceVersionTooLarge`` cause. A neutral module: the informer stack
(``refimpl/cache/``) reads these, the in-memory API server (``refimpl/apiserver.py``)
raises them, and neither imports the other for them. Not in the TLA+ specs beyond the
410 of ``spec/Informer.tla``'s ``List`` / ``Connect``.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Expired",
    "Gone",
    "InternalError",
    "Invalid",
    "ListError",
    "NotFound",
    "TooLargeResourceVersion",
    "TooManyRequests",
    "is_expired",
    "is_internal_error",
    "is_too_large_resource_version",
    "is_too_many_requests",
]


class ApiError(Exception):
    """An error answer of the API server: an HTTP ``code`` and a status ``reason``."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __init__(self, message: str = "", *, causes: tuple[str, ...] = ()) -> None:
        super().__init__(message or self.reason)
        self.message = message or self.reason
        #: Status cause types (e.g. ``"ResourceVersionTooLarge"``).
        self.causes = causes

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class BadRequest(ApiError):
    code = 400
    reason = "BadRequest"


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    """A precondition (resourceVersion or uid) did not match the stored object."""

    code = 409
    reason = "Conflict"


class Gone(ApiError):
    """410 with reason Gone (servers before 1.18 used it for expired versions)."""

    code = 410
    reason = "Gone"


class Expired(Gone):
    """410 with reason Expired: a resourceVersion or continue token older than the
    compaction point."""

    reason = "Expired"


class Invalid(ApiError):
    code = 422
    reason = "Invalid"


class TooManyRequests(ApiError):
    code = 429
    reason = "TooManyRequests"


class InternalError(ApiError):
    code = 500
    reason = "InternalError"


class ListError(ApiError):
    """The default injected list failure (a 503: the server could not answer)."""

    code = 503
    reason = "ServiceUnavailable"


class TooLargeResourceVersion(ApiError):
    """The requested resourceVersion is newer than anything the server has (a 504
    Timeout carrying the ``ResourceVersionTooLarge`` cause)."""

    code = 504
    reason = "Timeout"

    def __init__(self, message: str = "Too large resource version") -> None:
        super().__init__(message, causes=("ResourceVersionTooLarge",))


def is_expired(err: BaseException) -> bool:
    """client-go ``isExpiredError``: reason Expired *or* Gone (both are 410)."""
    return isinstance(err, Gone)


def is_too_large_resource_version(err: BaseException) -> bool:
    return isinstance(err, ApiError) and "ResourceVersionTooLarge" in err.causes


def is_too_many_requests(err: BaseException) -> bool:
    return isinstance(err, TooManyRequests)


def is_internal_error(err: BaseException) -> bool:
    return isinstance(err, InternalError)
