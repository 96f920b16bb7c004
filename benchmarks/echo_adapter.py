"""The pipe floor: an adapter that speaks the protocol and does nothing else.

    python benchmarks/echo_adapter.py

Answers ``hello`` with one component (``queue``, every method declared) and every other
request with ``{"id": ..., "result": null}``, one line each, until EOF. What a search
against the reference adapter spends beyond a round trip with this process is the
harness's and the reference's own work (benchmarks/conformance.py prints the ratio).
"""

from __future__ import annotations

import json
import sys

HELLO = {
    "name": "echo",
    "version": "0",
    "components": {"queue": {"methods": ["add", "get_nowait", "done", "len", "shut_down"]}},
}


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in stdin:
        request = json.loads(line)
        result = (
            {**HELLO, "protocol": request.get("protocol")} if request.get("op") == "hello" else None
        )
        stdout.write(json.dumps({"id": request.get("id"), "result": result}).encode() + b"\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
