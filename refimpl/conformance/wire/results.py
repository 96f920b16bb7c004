"""What a wire run found, as ``refimpl peers`` reads it: signatures, acknowledgements,
client-go's verdict on the same seed, and the ``--json`` results.

A wire finding is a message that starts with its invariant's ID (docs/invariants.md);
its signature is ``informer/ID/wire`` (the search's ``component/what/method`` form,
refimpl/conformance/search/config.py, with ``wire`` where the search names the request
whose answer departed: over HTTP every finding comes from the informer's own traffic).
Findings of one ID are one distinct finding (the first message shown, the others
counted): what tells two of them apart is timing, not a different bug.

Each finding's plan is shrunk (refimpl/conformance/wire/shrink.py), then client-go is
asked by running that plan against its wire adapter (``bin/adapter --wire``) once: the
plan is the same, the timing is not, so the label says what one run of client-go did.
Refines no TLA+ module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from refimpl.conformance.search.triage import DIFFERS, NOT_COMPARABLE, SAME
from refimpl.conformance.wire.shrink import Step, shrink_plan

#: Runs a plan against a fresh server and adapter: its exit status and its findings.
RunPlan = Callable[[list[Step]], tuple[int, list[str]]]

__all__ = [
    "WireFinding",
    "distinct",
    "label_for",
    "results_json",
    "shrink_findings",
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
    #: What one run of client-go's wire adapter on the finding's plan did (None: not
    #: asked).
    client_go: str | None = None
    #: The finding's plan: shrunk (``tries`` runs; ``finished`` False when the budget
    #: ended it), or the whole plan when not shrunk.
    steps: tuple[Step, ...] = ()
    tries: int = 0
    finished: bool = True


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


def shrink_findings(
    findings: Sequence[WireFinding],
    steps: Sequence[Step],
    run_plan: RunPlan,
    budget: float,
    say: Callable[[str], None],
) -> list[WireFinding]:
    """Each finding with the shortest plan found that gives its signature again
    (``budget`` seconds each; ``run_plan`` runs a plan: its status and messages)."""
    out = []
    for found in findings:
        say(f"  shrinking {found.signature} ({len(steps)} steps, at most {budget:g} s)")

        def again(candidate: list[Step], signature: str = found.signature) -> bool:
            return signature in {signature_of(m) for m in run_plan(candidate)[1]}

        shrunk = shrink_plan(steps, again, budget)
        out.append(
            attrs.evolve(
                found, steps=tuple(shrunk.steps), tries=shrunk.tries, finished=shrunk.finished
            )
        )
    return out


def label_for(findings: Sequence[WireFinding], client_go_run: RunPlan) -> list[WireFinding]:
    """Each finding labelled by one client-go run of its plan: the same signature
    (:data:`SAME`), a pass (:data:`DIFFERS`), or neither (:data:`NOT_COMPARABLE`: client-go
    found other things, or its adapter did not run: ``client_go_run`` gives its exit
    status and its findings' messages)."""
    ran: dict[str, tuple[int, set[str]]] = {}
    out = []
    for finding in findings:
        key = json.dumps(finding.steps)
        if key not in ran:
            status, messages = client_go_run(list(finding.steps))
            ran[key] = status, {signature_of(m) for m in messages}
        status, theirs = ran[key]
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
    component, ``informer``; a finding's ``steps`` are its (shrunk) plan's."""
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
                        "shrunk": len(f.steps),
                        "shrink_finished": f.finished,
                        "steps": list(f.steps),
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
