"""The reference as an adapter process: ``python -m refimpl.conformance.reference.adapter``.

Reads protocol requests from stdin and answers them with
:class:`~refimpl.conformance.reference.dispatch.ReferenceDriver` on stdout, one line each, until
EOF. Owns no state beyond the driver's; never reads the wall clock. ``refimpl conform``
against this process must always pass: CI uses it to prove the harness end to end.
"""

from __future__ import annotations

import json
import sys
from typing import BinaryIO

from refimpl.conformance.protocol import MAX_LINE_BYTES, encode, error_response
from refimpl.conformance.reference.dispatch import ReferenceDriver
from refimpl.eras import LATEST, ReleaseError, era_of

__all__ = ["main", "serve"]


def serve(driver: ReferenceDriver, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer every request line on ``stdin`` until EOF. Returns an exit status."""
    while True:
        raw = stdin.readline(MAX_LINE_BYTES + 2)
        if not raw:
            return 0
        if not raw.endswith(b"\n") and len(raw) > MAX_LINE_BYTES:
            stdout.write(encode(error_response(None, "bad_request", "request line too long")))
            stdout.flush()
            return 1
        line = raw.rstrip(b"\r\n")
        try:
            request = json.loads(line)
        except ValueError as exc:
            response = error_response(None, "bad_request", f"not JSON: {exc}")
        else:
            response = driver.handle(request)
        try:
            stdout.write(encode(response))
        except ValueError as exc:  # NaN in a result: our bug, say so in-protocol
            rid = request.get("id") if isinstance(request, dict) else None
            stdout.write(encode(error_response(rid, "internal", str(exc))))
        stdout.flush()


USAGE = (
    "usage: python -m refimpl.conformance.reference.adapter [--no-observe] [--release 1.NN]\n"
    "  --no-observe    declare no observations carried by a call "
    "(docs/protocol.md): every check is a request of its own\n"
    "  --release 1.NN  behave like that client-go release line and declare it "
    "(refimpl/eras.py)"
)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    observe = "--no-observe" not in args
    args = [a for a in args if a != "--no-observe"]
    era = LATEST
    try:
        if args[:1] == ["--release"] and len(args) == 2:
            era = era_of(args.pop())
            args.clear()
    except ReleaseError as exc:
        print(f"{exc}\n{USAGE}", file=sys.stderr)
        return 2
    if args:
        print(USAGE, file=sys.stderr)
        return 2
    driver = ReferenceDriver(observe=observe)
    driver.era = era
    return serve(driver, sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
