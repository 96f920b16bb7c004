"""A deliberately broken reference, served over the driver protocol.

    python adapters/broken/adapter.py --bug NAME     serve the variant with bug NAME
    python adapters/broken/adapter.py --bug A --bug B   with bugs A and B (see below)
    python adapters/broken/adapter.py --list         list the bugs (JSON lines)

Bugs are built in in the order given; two that swap the same part (two queue cores, two
limiter sets, two DeltaFIFO cores) cannot be combined: the last one wins. Two bugs in
different parts (an informer's processing and its reflector, say) give a run two
distinct findings (tests/test_conformance_findings.py).

Needs refimpl importable (run it with the project's virtualenv). ``refimpl conform``
must report a disagreement for every bug; tests/test_conformance_broken.py checks it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bugs import BUGS, describe

from refimpl.conformance.reference.adapter import serve
from refimpl.conformance.reference.dispatch import Parts, ReferenceDriver


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--bug", action="append", choices=sorted(BUGS), help="a bug to build in (repeatable)"
    )
    group.add_argument("--list", action="store_true", help="list the bugs and exit")
    args = parser.parse_args(argv)
    if args.list:
        for entry in describe():
            print(json.dumps(entry))
        return 0
    parts = Parts()
    for name in args.bug:
        BUGS[name].apply(parts)
    driver = ReferenceDriver(parts, name=f"refimpl-broken:{'+'.join(args.bug)}")
    return serve(driver, sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
