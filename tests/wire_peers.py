"""What the peers' wire tests (tests/test_conform_wire_<peer>.py) share: a seeded wire
run against a peer's ``--wire`` adapter, the assertions of a pass, and the adapter's
``hello`` components. Not a test module (no ``test_`` prefix)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any

from refimpl.conformance.wire.run import WireRun, run_wire
from refimpl.usage import EXIT_OK


def run_peer(command: Sequence[str], seed: int, *flags: str) -> tuple[int, str]:
    """``refimpl conform --wire`` of ``command --wire FLAGS`` on ``seed``: exit status
    and report."""
    lines: list[str] = []
    rc = run_wire(WireRun([*command, "--wire", *flags], seed), lines.append)
    return rc, "\n".join(lines)


def assert_passes(command: Sequence[str], seed: int, *flags: str) -> None:
    """The run passes, and it checked some handler calls: the informer saw the writes."""
    rc, out = run_peer(command, seed, *flags)
    assert rc == EXIT_OK, out
    assert "informer (wire): PASS" in out
    assert " 0 handler calls" not in out


def hello_components(command: Sequence[str], *flags: str, timeout: float = 60) -> dict[str, Any]:
    """The components the adapter's ``hello`` offers when started with ``flags``."""
    done = subprocess.run(
        [*command, *flags],
        input=json.dumps({"id": 1, "op": "hello", "protocol": 2}) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    components: dict[str, Any] = json.loads(done.stdout)["result"]["components"]
    return components
