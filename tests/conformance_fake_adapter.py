"""A misbehaving adapter for tests/test_conformance_protocol.py.

    python tests/conformance_fake_adapter.py MODE[:TRIGGER] [MODE[:TRIGGER] ...]

Answers like the reference adapter until a request whose ``op`` or ``method`` equals
TRIGGER arrives, then misbehaves as MODE says (see ``MISBEHAVIOURS``). MODE ``ignore-term``
makes the process ignore SIGTERM and stdin EOF, to test that the harness still ends it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from refimpl.conformance.protocol import encode
from refimpl.conformance.reference.dispatch import ReferenceDriver


def out(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


#: What a mode does instead of answering a request: given the request and the driver.
Misbehaviour = Callable[[dict[str, Any], ReferenceDriver], None]


# -- the process stops answering: it hangs, crashes or exits


def _hang(request: dict[str, Any], driver: ReferenceDriver) -> None:
    time.sleep(3600)


def _crash(request: dict[str, Any], driver: ReferenceDriver) -> None:
    sys.stderr.write("fake adapter: simulated crash\n")
    sys.stderr.flush()
    os._exit(3)


def _exit(request: dict[str, Any], driver: ReferenceDriver) -> None:
    os._exit(0)


# -- bytes that are not a response line


def _huge(request: dict[str, Any], driver: ReferenceDriver) -> None:
    out(b"x" * 3_000_000)
    time.sleep(3600)


def _huge_line(request: dict[str, Any], driver: ReferenceDriver) -> None:
    rid = str(request.get("id")).encode()
    out(b'{"id":' + rid + b',"result":"' + b"y" * 2_000_000 + b'"}\n')


def _partial(request: dict[str, Any], driver: ReferenceDriver) -> None:
    out(b'{"id": ' + str(request.get("id")).encode() + b', "resu')
    os._exit(0)


def _partial_hang(request: dict[str, Any], driver: ReferenceDriver) -> None:
    out(b'{"id": ' + str(request.get("id")).encode() + b', "resu')
    time.sleep(3600)


def _send(data: bytes) -> Misbehaviour:
    """Answer any request with ``data``, as it is."""
    return lambda request, driver: out(data)


# -- a well-formed line that breaks the protocol


def _reply(response: Callable[[Any], dict[str, Any]]) -> Misbehaviour:
    """Answer with ``response(the request's id)`` instead of the reference's answer."""
    return lambda request, driver: out(encode(response(request.get("id"))))


def _extra_line(request: dict[str, Any], driver: ReferenceDriver) -> None:
    out(encode(driver.handle(request)))
    out(encode({"id": request.get("id"), "result": None}))


def _v1_only(request: dict[str, Any], driver: ReferenceDriver) -> None:
    """An adapter written for protocol 1: it refuses any other version."""
    if request.get("protocol") != 1:
        error = {"kind": "unsupported", "message": "speaks 1"}
        out(encode({"id": request.get("id"), "error": error}))
    else:
        out(encode(driver.handle(request)))


# -- the reference's answer, doctored


def _doctored(change: Callable[[dict[str, Any]], None]) -> Misbehaviour:
    """Answer with the reference's response after ``change`` edited it."""

    def misbehaviour(request: dict[str, Any], driver: ReferenceDriver) -> None:
        response = driver.handle(request)
        change(response)
        out(encode(response))

    return misbehaviour


def _bad_observation(response: dict[str, Any]) -> None:
    response["result"] = {**response["result"], "waiting": "soon"}


def _invent(response: dict[str, Any]) -> None:
    call = {"handler": "h0", "kind": "add", "key": "zz", "rv": "99", "cache": "99"}
    response["result"]["calls"].append({**call, "initial": False})


def _narrow(response: dict[str, Any]) -> None:
    """A hello whose delta_fifo allows fewer option values."""
    caps = response["result"]["components"]["delta_fifo"]
    caps["option_values"] = {"emit_delta_type_replaced": [False]}


def _no_pause(response: dict[str, Any]) -> None:
    """A hello whose informer has no pause/resume (as the client-go adapter's)."""
    caps = response["result"]["components"]["informer"]
    caps["methods"] = [m for m in caps["methods"] if m not in ("pause", "resume")]


def _wrong_answer(response: dict[str, Any]) -> None:
    response["result"] = "something else"


#: What a hello may leave out, per component (docs/protocol.md: the harness then
#: compares any order, sends each check alone, and expects no ``initial`` in calls).
_OPTIONAL_CAPS = ("observe", "heap_order", "options", "initial")


def _omit_optional(request: dict[str, Any], driver: ReferenceDriver) -> None:
    """The reference's answer without every field docs/protocol.md makes optional: a
    pop's ``initial``, an informer add call's ``initial``, and the optional hello keys
    (as from an implementation without isInInitialList)."""
    response = driver.handle(request)
    result = response.get("result")
    if request.get("op") == "hello" and isinstance(result, dict):
        for caps in result.get("components", {}).values():
            for key in _OPTIONAL_CAPS:
                caps.pop(key, None)
    elif isinstance(result, dict):
        result.pop("initial", None)
        for call in result.get("calls", []) if isinstance(result.get("calls"), list) else []:
            call.pop("initial", None)
    out(encode(response))


#: Each MODE and what it does to the request that triggers it.
MISBEHAVIOURS: dict[str, Misbehaviour] = {
    "hang": _hang,
    "crash": _crash,
    "exit": _exit,
    "garbage": _send(b"this is not json\n"),
    "huge": _huge,
    "huge-line": _huge_line,
    "partial": _partial,
    "partial-hang": _partial_hang,
    "wrong-id": _reply(lambda rid: {"id": 10_000, "result": None}),
    "both": _reply(
        lambda rid: {"id": rid, "result": None, "error": {"kind": "internal", "message": "?"}}
    ),
    "bad-kind": _reply(lambda rid: {"id": rid, "error": {"kind": "oops", "message": "?"}}),
    "refuse": _reply(
        lambda rid: {"id": rid, "error": {"kind": "unsupported", "message": "not today"}}
    ),
    "v1-only": _v1_only,
    "bad-observation": _doctored(_bad_observation),
    "invent": _doctored(_invent),
    "extra-line": _extra_line,
    "not-object": _send(b"[1, 2, 3]\n"),
    "bad-hello": _reply(
        lambda rid: {"id": rid, "result": {"protocol": 3, "name": "x", "version": "0"}}
    ),
    "narrow": _doctored(_narrow),
    "no-pause": _doctored(_no_pause),
    "wrong-answer": _doctored(_wrong_answer),
    "omit-optional": _omit_optional,
}


def misbehave(mode: str, request: dict[str, Any], driver: ReferenceDriver) -> bool:
    """Do ``mode`` for ``request`` (see MISBEHAVIOURS); True if the request was answered
    (or never will be)."""
    misbehaviour = MISBEHAVIOURS.get(mode)
    if misbehaviour is None:
        raise SystemExit(f"unknown mode {mode!r}")
    misbehaviour(request, driver)
    return True


def main(argv: list[str]) -> int:
    triggers: dict[str, str] = {}
    for arg in argv:
        mode, _, trigger = arg.partition(":")
        if mode == "ignore-term":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            continue
        triggers[trigger or "*"] = mode
    driver = ReferenceDriver()
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            if "ignore-term" in argv:
                time.sleep(3600)
            return 0
        request = json.loads(line)
        keys = (str(request.get("op")), str(request.get("method")), "*")
        chosen = next((triggers[k] for k in keys if k in triggers), None)
        if chosen is not None and misbehave(chosen, request, driver):
            continue
        out(encode(driver.handle(request)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
