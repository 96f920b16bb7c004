"""What a wire run found, as ``refimpl peers`` reads it: signatures, acknowledgements,
client-go's verdict on the same seed, and the ``--json`` results.

A wire finding is a message that starts with its invariant's ID (docs/invariants.md);
its signature is ``informer/ID/wire`` (the search's ``component/what/method`` form,
refimpl/conformance/search/config.py, with ``wire`` where the search names the request
whose answer departed: over HTTP every finding comes from the informer's own traffic).
Findings of one ID are one distinct finding (the first message shown, the others
counted): what tells two of them apart is timing, not a different bug.

client-go is asked by running the same seed against its wire adapter
(``bin/adapter --wire``) once: the plan is the same, the timing is not, so the label
says what one run of client-go did. Refines no TLA+ module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from refimpl.conformance.search.triage import DIFFERS, NOT_COMPARABLE, SAME

__all__ = [
    "WireFinding",
    "distinct",
    "label_for",
    "results_json",
    "signature_of",
    "write_results",
]

_ID_RE = re.compile(r"^([A-Z]{2,5}-\d+)\b")


@attrs.frozen
class WireFinding:
    """One distinct finding of a wire run."""

    signature: str
    message: str
    #: How many messages of the run share the signature.
    count: int = 1
    #: The acknowledging peer.json note (``--known``); None for a new finding.
    known: str | None = None
    #: What one run of client-go's wire adapter on the same seed did (None: not asked).
    client_go: str | None = None


def signature_of(message: str) -> str:
    """``informer/ID/wire`` for a finding's message (``invariant`` when it names none)."""
    found = _ID_RE.match(message)
    return f"informer/{found.group(1) if found else 'invariant'}/wire"


def distinct(messages: Sequence[str], known: dict[str, str]) -> list[WireFinding]:
    """One finding per signature, in the order first seen, acknowledged from ``known``."""
    firsts: dict[str, str] = {}
    counts: dict[str, int] = {}
    for message in messages:
        signature = signature_of(message)
        firsts.setdefault(signature, message)
        counts[signature] = counts.get(signature, 0) + 1
    return [WireFinding(s, m, counts[s], known.get(s)) for s, m in firsts.items()]


def label_for(
    findings: Sequence[WireFinding], client_go_run: Callable[[], tuple[int, list[str]]]
) -> list[WireFinding]:
    """Each finding labelled by one client-go run of the same plan: the same signature
    (:data:`SAME`), a pass (:data:`DIFFERS`), or neither (:data:`NOT_COMPARABLE`: client-go
    found other things, or its adapter did not run: ``client_go_run`` gives its exit
    status and its findings' messages)."""
    status, messages = client_go_run()
    theirs = {signature_of(m) for m in messages}
    out = []
    for finding in findings:
        if finding.signature in theirs:
            label = SAME
        elif status == 0:
            label = DIFFERS
        else:
            label = NOT_COMPARABLE
        out.append(attrs.evolve(finding, client_go=label))
    return out


def results_json(
    hello: dict[str, Any], seed: int, status: int, findings: Sequence[WireFinding], note: str
) -> dict[str, Any]:
    """The ``--json`` object, in the shape of the search's (search/outcome.py): one
    component, ``informer``; a finding has no shrunk steps (the seed gives the plan)."""
    return {
        "adapter": {"name": hello.get("name"), "version": hello.get("version")},
        "seed": seed,
        "status": status,
        "wire": True,
        "components": [
            {
                "component": "informer",
                "status": status,
                "note": note,
                "findings": [
                    {
                        "signature": f.signature,
                        "kind": "invariant",
                        "message": f.message,
                        "count": f.count,
                        "known": f.known,
                        "client_go": f.client_go,
                        "shrunk": 0,
                        "steps": [],
                    }
                    for f in findings
                ],
            }
        ],
    }


def write_results(path: str | None, results: dict[str, Any]) -> None:
    """Write ``results`` to ``path`` (nothing when it is None)."""
    if path is None:
        return
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1)
        fh.write("\n")
