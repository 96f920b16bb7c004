"""Running the ``refimpl`` command line in a subprocess, as the CLI and sim tests do."""

from __future__ import annotations

import subprocess
import sys

#: ``python -m refimpl.cli``: the ``refimpl`` command, with this interpreter.
REFIMPL = [sys.executable, "-m", "refimpl.cli"]


def refimpl(*args: str) -> subprocess.CompletedProcess[str]:
    """``refimpl ARGS``, its output captured as text; at most 120 s, any exit status."""
    return subprocess.run(
        [*REFIMPL, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
