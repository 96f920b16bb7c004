#!/usr/bin/env python3
"""A template adapter (docs/adapters.md): a toy work queue behind the JSON-lines protocol
of docs/protocol.md. Put your queue where ``ToyQueue`` is, declare in ``hello`` only what
it supports: ``refimpl conform --component queue -- python3 queue_adapter.py``.
"""

import json
import sys
from typing import Any

#: The methods of ``call`` this adapter answers for its one component.
METHODS = ["add", "get_nowait", "done", "len", "shut_down", "shutting_down"]


class ToyQueue:
    """client-go's ``workqueue.Typed[string]`` in miniature: a line of items waiting,
    the *dirty* set (queued, or added again while processing) and the *processing* set."""

    def __init__(self) -> None:
        self.line: list[str] = []
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.closing = False

    def add(self, item: str) -> None:
        if self.closing or item in self.dirty:
            return
        self.dirty.add(item)
        if item not in self.processing:
            self.line.append(item)

    def get_nowait(self) -> dict[str, Any]:
        if not self.line:  # where client-go's Get would block, or return shutdown=true
            return {"kind": "shutdown"} if self.closing else {"kind": "empty"}
        item = self.line.pop(0)
        self.processing.add(item)
        self.dirty.discard(item)
        return {"kind": "item", "item": item}

    def done(self, item: str) -> None:
        self.processing.discard(item)
        if item in self.dirty:  # added again while it was processed: queue it now
            self.line.append(item)

    def len(self) -> int:
        return len(self.line)

    def shut_down(self) -> None:
        self.closing = True

    def shutting_down(self) -> bool:
        return self.closing


class Refused(Exception):
    """An ``error`` answer of one of protocol.md's kinds: ``Refused(kind, message)``."""


def answer(request: dict[str, Any], instances: dict[str, ToyQueue]) -> Any:
    op = request.get("op")
    if op == "hello":
        if request.get("protocol") != 2:
            raise Refused("unsupported", "this adapter speaks protocol 2")
        offered = {"queue": {"methods": METHODS}}  # per component: protocol.md's keys
        about = {"name": "toy-queue", "version": "0.1.0", "implementation": "ToyQueue"}
        return {"protocol": 2, **about, "components": offered}
    if op == "reset":  # forget every instance
        instances.clear()
        return None
    if op == "create":
        if request.get("component") != "queue":
            raise Refused("unsupported", f"no component {request.get('component')!r}")
        instances[request["instance"]] = ToyQueue()
        return None
    if op == "call":
        queue = instances.get(request["instance"])
        if queue is None:
            raise Refused("no_instance", f"no instance {request['instance']!r}")
        if request["method"] not in METHODS:
            raise Refused("unsupported", f"no method {request['method']!r}")
        return getattr(queue, request["method"])(**request.get("args", {}))
    raise Refused("bad_request", f"unknown op {op!r}")


def main() -> None:
    instances: dict[str, ToyQueue] = {}
    for line in sys.stdin:  # EOF: the harness is done, exit
        request = json.loads(line)
        try:
            response = {"id": request["id"], "result": answer(request, instances)}
        except Refused as refused:
            kind, message = refused.args
            response = {"id": request["id"], "error": {"kind": kind, "message": message}}
        print(json.dumps(response), flush=True)


if __name__ == "__main__":
    main()
