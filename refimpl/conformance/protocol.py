"""The driver protocol, version 2: message shapes, names and checks. No I/O here.

JSON lines: the harness writes one request object per line to the adapter's stdin; the
adapter writes exactly one response line per request to its stdout, in order. Every
request has an integer ``id``; the response echoes it with either ``result`` or
``error: {kind, message}``. ``docs/protocol.md`` is the full description; this module is
what both sides (the harness and the Python adapters) import to agree on it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "COMPONENTS",
    "ERROR_KINDS",
    "LIMITERS",
    "MAX_LINE_BYTES",
    "OBSERVE",
    "OPTIONAL_METHODS",
    "OPTIONAL_RESULT_FIELDS",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "SPEC_METHODS",
    "Handler",
    "ProtocolError",
    "check_response",
    "encode",
    "error_response",
    "limiter_names",
    "ok_response",
    "seconds_to_ns",
    "without_omitted",
]

PROTOCOL_VERSION: Final = 2

#: The reference's handler of one method of a component: ``(args, actual) -> result``
#: (``actual``: the adapter's response when the harness steers, else None).
Handler = Callable[[dict[str, Any], dict[str, Any] | None], Any]
#: Versions the harness and the reference speak. Version 2 adds the ``informer``
#: component; a version-1 adapter offers the others exactly as before.
PROTOCOL_VERSIONS: Final = (1, 2)

#: Longest line either side may send (bytes, excluding the newline). The harness treats
#: a longer response line as a protocol violation instead of buffering it without end.
MAX_LINE_BYTES: Final = 1 << 20

#: Error kinds. ``unsupported``, ``bad_request`` and ``no_instance`` say the request was
#: not carried out; ``invalid_argument`` and ``exception`` are answers of the
#: implementation under test and are compared with the reference's answer (by kind).
ERROR_KINDS: Final = frozenset(
    {
        "bad_request",  # not a well-formed request (unknown op, missing field, wrong type)
        "unsupported",  # well-formed, but this adapter does not implement it
        "no_instance",  # "instance" names nothing created since the last reset
        "invalid_argument",  # the implementation refused the arguments (ValueError, ...)
        "exception",  # the implementation raised / panicked while carrying it out
        "internal",  # the adapter itself failed (its own bug, not the implementation's)
    }
)

#: Both FIFOs speak the same operations (their answers differ, not their verbs).
_FIFO_OPERATIONS = (
    "add",
    "update",
    "delete",
    "replace",
    "resync",
    "pop_nowait",
    "has_synced",
    "close",
    "is_closed",
    "known_add",
    "known_delete",
)

_QUEUE_OPERATIONS = ("add", "get_nowait", "done", "len", "shut_down", "shutting_down")
_DELAYING_OPERATIONS = (*_QUEUE_OPERATIONS, "add_after")

#: Component -> the methods of ``call`` it may support, in a stable order.
COMPONENTS: Final[dict[str, tuple[str, ...]]] = {
    "queue": _QUEUE_OPERATIONS,
    "delaying_queue": _DELAYING_OPERATIONS,
    "rate_limiting_queue": (*_DELAYING_OPERATIONS, "add_rate_limited", "forget", "num_requeues"),
    "rate_limiter": ("when", "forget", "num_requeues"),
    "store": (
        "add",
        "update",
        "delete",
        "replace",
        "get_by_key",
        "list_keys",
        "list",
        "by_index",
        "index_keys",
        "list_index_func_values",
    ),
    "delta_fifo": _FIFO_OPERATIONS,
    "real_fifo": _FIFO_OPERATIONS,
    # Protocol 2. The methods answer the seam the informer's list/watch wait on.
    "informer": (
        "add_handler",
        "start",
        "list_reply",
        "list_error",
        "watch_open",
        "watch_error",
        "watch_event",
        "watch_end",
        "pause",
        "resume",
        "state",
    ),
}

_DRAIN = ("drain_start", "drain_returned")

#: Optional methods only the spec-driven walks (``refimpl conform --from-spec``) send:
#: the drain and pop pairs split a call that blocks its caller in two, so the walk can
#: take the spec's steps in between (ShutDownWithDrain waiting for in-flight items; an
#: atomic RealFIFO's Pop whose process function runs with the lock released);
#: ``pop_batch_nowait`` is RealFIFO.PopBatch, a step of its own in spec/RealFIFO.tla.
#: Random search never generates them, so an adapter that does not declare them is
#: tested as before.
SPEC_METHODS: Final[dict[str, tuple[str, ...]]] = {
    "queue": _DRAIN,
    "delaying_queue": _DRAIN,
    "rate_limiting_queue": _DRAIN,
    "real_fifo": ("pop_begin", "pop_end", "pop_batch_nowait"),
}

#: Every optional method by component: the walks' (SPEC_METHODS) and the informer's
#: ``pause``/``resume``. A walk of an adapter without some of them says how much more
#: of the graph they would drive (walks/run.py).
OPTIONAL_METHODS: Final[dict[str, tuple[str, ...]]] = {
    **SPEC_METHODS,
    "informer": ("pause", "resume"),
}

_QUEUE_READS = ("len", "shutting_down", "drain_returned")
_FIFO_READS = ("has_synced", "is_closed")

#: Methods a ``call`` may carry in its ``observe`` list (docs/protocol.md, "Observations
#: carried by a call"): no arguments, no effect. The walks attach their checks to the
#: step's last call instead of sending each as a request of its own.
OBSERVE: Final[dict[str, tuple[str, ...]]] = {
    "queue": _QUEUE_READS,
    "delaying_queue": _QUEUE_READS,
    "rate_limiting_queue": _QUEUE_READS,
    "delta_fifo": _FIFO_READS,
    "real_fifo": _FIFO_READS,
}

#: Result fields an adapter may leave out, by method: an omitted one is not compared
#: (docs/protocol.md). A FIFO pop's ``initial`` is Pop's isInInitialList, which
#: implementations before it (and ports without it) do not have.
OPTIONAL_RESULT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "pop_nowait": ("initial",),
    "pop_begin": ("initial",),
    "pop_batch_nowait": ("initial",),
}


def without_omitted(method: Any, expected: Any, actual: Any) -> Any:
    """``expected`` without the optional result fields ``actual`` omits (both results
    of ``method``), so that what an adapter leaves out is not compared."""
    fields = OPTIONAL_RESULT_FIELDS.get(method) if isinstance(method, str) else None
    if not fields or not isinstance(expected, dict) or not isinstance(actual, dict):
        return expected
    dropped = [f for f in fields if f in expected and f not in actual]
    return {k: v for k, v in expected.items() if k not in dropped} if dropped else expected


#: Rate limiter names and their parameters (durations in seconds).
LIMITERS: Final[dict[str, tuple[str, ...]]] = {
    "exponential": ("base", "max"),
    "fast_slow": ("fast", "slow", "max_fast"),
    "bucket": ("qps", "burst"),
    "max_of": ("limiters",),
    "with_max_wait": ("limiter", "max"),
    "default_controller": (),
    "default_item_based": (),
}


class ProtocolError(Exception):
    """A request that must be answered with ``error: {kind, message}``."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message


#: json.dumps with these options builds an encoder per call; one serves every line.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line: compact JSON, UTF-8, newline-terminated.

    Refuses NaN/Infinity (not JSON) with ValueError rather than emitting them.
    """
    return (_ENCODER.encode(message) + "\n").encode()


def ok_response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"id": request_id, "result": result}


def error_response(request_id: Any, kind: str, message: str) -> dict[str, Any]:
    return {"id": request_id, "error": {"kind": kind, "message": message}}


def check_response(message: Any, expected_id: int) -> str | None:
    """Why ``message`` is not a valid response to request ``expected_id`` (None if it is)."""
    if not isinstance(message, dict):
        return f"a response must be a JSON object, got {type(message).__name__}"
    if "id" not in message:
        return "response has no 'id'"
    rid = message["id"]
    if rid != expected_id or isinstance(rid, bool):
        return f"response id {rid!r} does not match request id {expected_id}"
    has_result = "result" in message
    has_error = "error" in message
    if has_result == has_error:
        return "a response must have exactly one of 'result' and 'error'"
    if has_error:
        error = message["error"]
        if not isinstance(error, dict):
            return "'error' must be an object {kind, message}"
        kind = error.get("kind")
        if not isinstance(kind, str) or kind not in ERROR_KINDS:
            return f"error kind {kind!r} is not one of {sorted(ERROR_KINDS)}"
        if not isinstance(error.get("message"), str):
            return "error 'message' must be a string"
    return None


def seconds_to_ns(value: Any, what: str) -> int:
    """A protocol duration (JSON number of seconds) as integer nanoseconds.

    Both sides round to the nearest nanosecond, as Go's ``time.Duration`` holds them,
    so 0.005 s is exactly 5_000_000 ns everywhere.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError("bad_request", f"{what} must be a number of seconds, got {value!r}")
    if not math.isfinite(value):
        raise ProtocolError("bad_request", f"{what} must be finite, got {value!r}")
    if abs(value) > 9.2e9:  # Go's Duration holds about 292 years
        raise ProtocolError("invalid_argument", f"{what} out of range: {value!r} s")
    return round(value * 1_000_000_000)


def limiter_names(spec: Any) -> set[str]:
    """Every limiter name used in a (possibly nested) limiter spec."""
    if not isinstance(spec, dict):
        return set()
    names = {str(spec.get("name"))}
    for child in spec.get("limiters", []) or []:
        names |= limiter_names(child)
    if "limiter" in spec:
        names |= limiter_names(spec["limiter"])
    return names
