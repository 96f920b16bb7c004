"""A misbehaving adapter for tests/test_conformance_protocol.py.

    python tests/conformance_fake_adapter.py MODE[:TRIGGER] [MODE[:TRIGGER] ...]

Answers like the reference adapter until a request whose ``op`` or ``method`` equals
TRIGGER arrives, then misbehaves as MODE says (see ``misbehave``). MODE ``ignore-term``
makes the process ignore SIGTERM and stdin EOF, to test that the harness still ends it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from refimpl.conformance.protocol import encode
from refimpl.conformance.reference.dispatch import ReferenceDriver


def out(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def misbehave(mode: str, request: dict[str, Any], driver: ReferenceDriver) -> bool:
    """Do ``mode`` for ``request``; True if the request was answered (or never will be)."""
    rid = request.get("id")
    if mode == "hang":
        time.sleep(3600)
    elif mode == "crash":
        sys.stderr.write("fake adapter: simulated crash\n")
        sys.stderr.flush()
        os._exit(3)
    elif mode == "exit":
        os._exit(0)
    elif mode == "garbage":
        out(b"this is not json\n")
    elif mode == "huge":
        out(b"x" * 3_000_000)
        time.sleep(3600)
    elif mode == "huge-line":
        out(b'{"id":' + str(rid).encode() + b',"result":"' + b"y" * 2_000_000 + b'"}\n')
    elif mode == "partial":
        out(b'{"id": ' + str(rid).encode() + b', "resu')
        os._exit(0)
    elif mode == "partial-hang":
        out(b'{"id": ' + str(rid).encode() + b', "resu')
        time.sleep(3600)
    elif mode == "wrong-id":
        out(encode({"id": 10_000, "result": None}))
    elif mode == "both":
        out(encode({"id": rid, "result": None, "error": {"kind": "internal", "message": "?"}}))
    elif mode == "bad-kind":
        out(encode({"id": rid, "error": {"kind": "oops", "message": "?"}}))
    elif mode == "refuse":
        out(encode({"id": rid, "error": {"kind": "unsupported", "message": "not today"}}))
    elif mode == "v1-only":
        # An adapter written for protocol 1: it refuses any other version.
        if request.get("protocol") != 1:
            out(encode({"id": rid, "error": {"kind": "unsupported", "message": "speaks 1"}}))
        else:
            out(encode(driver.handle(request)))
    elif mode == "bad-observation":
        response = driver.handle(request)
        response["result"] = {**response["result"], "waiting": "soon"}
        out(encode(response))
    elif mode == "invent":
        response = driver.handle(request)
        call = {"handler": "h0", "kind": "add", "key": "zz", "rv": "99", "cache": "99"}
        response["result"]["calls"].append({**call, "initial": False})
        out(encode(response))
    elif mode == "extra-line":
        out(encode(driver.handle(request)))
        out(encode({"id": rid, "result": None}))
    elif mode == "not-object":
        out(b"[1, 2, 3]\n")
    elif mode == "bad-hello":
        out(encode({"id": rid, "result": {"protocol": 3, "name": "x", "version": "0"}}))
    elif mode == "narrow":  # a hello whose delta_fifo allows fewer option values
        response = driver.handle(request)
        caps = response["result"]["components"]["delta_fifo"]
        caps["option_values"] = {"emit_delta_type_replaced": [False]}
        out(encode(response))
    elif mode == "wrong-answer":
        response = driver.handle(request)
        response["result"] = "something else"
        out(encode(response))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
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
