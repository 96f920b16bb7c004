"""docs/protocol.md's "A complete exchange" is what the reference adapter answers today.

Every ``>`` line of the section's transcripts is sent to the reference adapter and its
answer must be the ``<`` line that follows, as JSON (issue 27: the transcript opened with
``"protocol":1`` while the harness sends 2). A transcript that starts after the
handshake gets a protocol-2 ``hello`` first, its answer unchecked; an answer the page
shortens with ``…`` is not compared.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.protocol import PROTOCOL_VERSION

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]


def _transcripts() -> list[list[tuple[str, str]]]:
    text = (ROOT / "docs" / "protocol.md").read_text()
    section = text.split("## A complete exchange", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in re.findall(r"```text\n(.*?)```", section, re.S):
        lines = [line for line in block.splitlines() if line.startswith(("> ", "< "))]
        pairs = list(zip(lines[::2], lines[1::2], strict=True))
        assert all(a.startswith("> ") and b.startswith("< ") for a, b in pairs), block
        found.append([(a[2:], b[2:]) for a, b in pairs])
    return found


def test_the_section_has_transcripts_and_opens_with_the_current_protocol() -> None:
    transcripts = _transcripts()
    assert len(transcripts) >= 2
    hello = json.loads(transcripts[0][0][0])
    assert hello["op"] == "hello" and hello["protocol"] == PROTOCOL_VERSION == 2


@pytest.mark.parametrize("index", range(len(_transcripts())))
def test_the_reference_adapter_answers_as_the_transcript_says(index: int) -> None:
    pairs = _transcripts()[index]
    requests = [request for request, _ in pairs]
    opens = json.loads(requests[0])["op"] == "hello"
    if not opens:
        requests.insert(0, json.dumps({"id": 0, "op": "hello", "protocol": PROTOCOL_VERSION}))
    done = subprocess.run(
        ADAPTER,
        input="".join(r + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answers: list[Any] = [json.loads(line) for line in done.stdout.splitlines()]
    if not opens:
        answers = answers[1:]
    assert len(answers) == len(pairs)
    for got, (request, answer) in zip(answers, pairs, strict=True):
        if "…" not in answer:
            assert got == json.loads(answer), request
