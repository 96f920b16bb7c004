"""What the ``refimpl conform`` tests share: the fake adapter's command line, and a run
of the harness in-process."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from refimpl.conformance.search.config import Config
from refimpl.conformance.search.run import run

#: The scripted adapter the protocol and harness tests drive (its modes: its docstring).
FAKE = str(Path(__file__).with_name("conformance_fake_adapter.py"))


def fake(*modes: str) -> list[str]:
    return [sys.executable, FAKE, *modes]


def run_conform(command: list[str], **settings: Any) -> tuple[int, str]:
    """``refimpl conform`` against ``command`` with ``settings`` (progress off): the exit
    status and the report, followed by what went to stderr (an adapter that failed to
    start, say), as ``refimpl peers`` reads a check."""
    out, err = io.StringIO(), io.StringIO()
    status = run(Config(command=command, progress=False, **settings), out=out, err=err)
    return status, out.getvalue() + err.getvalue()
