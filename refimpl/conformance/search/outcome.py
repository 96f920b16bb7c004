"""``refimpl conform --json FILE``: the run's results for programs (``refimpl peers``
reads them instead of the printed report).

One JSON object: the adapter's ``hello`` name and version, the seed, the exit status,
and per component its status, counts, note and every finding with its signature, its
known note (None: new), its client-go label (None: not asked; search/triage.py), the
length of its shrunk trace, the inputs mode when the run has one, and the trace's
requests (replayable as a ``--save`` file's lines).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from refimpl.conformance.search.config import ComponentResult, Config, Failure

__all__ = ["finding_json", "findings_of", "results_json", "write_json"]


def findings_of(result: ComponentResult) -> list[Failure]:
    """A component's findings (the first alone when the search kept only that one)."""
    if result.findings:
        return list(result.findings)
    return [result.failure] if result.failure is not None else []


def finding_json(failure: Failure, config: Config) -> dict[str, Any]:
    """One finding as ``--json`` writes it."""
    found: dict[str, Any] = {
        "signature": failure.signature,
        "kind": failure.kind,
        "message": failure.message,
        "known": failure.known,
        "client_go": failure.client_go,
        "shrunk": len(failure.steps),
        "steps": [step.request for step in failure.steps],
    }
    # The realistic/any inputs mode, where the search has one (issue #25, item 3).
    inputs = getattr(failure, "inputs", None) or getattr(config, "inputs", None)
    if inputs is not None:
        found["inputs"] = inputs
    return found


def results_json(
    config: Config, hello: dict[str, Any], results: Sequence[ComponentResult], status: int
) -> dict[str, Any]:
    """The whole ``--json`` object."""
    components = []
    for result in results:
        components.append(
            {
                "component": result.component,
                "status": result.status,
                "examples": result.examples,
                "steps": result.steps,
                "note": result.note,
                "untested": list(result.untested),
                "findings": [finding_json(f, config) for f in findings_of(result)],
            }
        )
    return {
        "adapter": {"name": hello.get("name"), "version": hello.get("version")},
        "seed": config.seed,
        "status": status,
        "components": components,
    }


def write_json(
    config: Config, hello: dict[str, Any], results: Sequence[ComponentResult], status: int
) -> None:
    """Write :func:`results_json` to ``config.json`` (nothing when it is None)."""
    if config.json is None:
        return
    with open(config.json, "w", encoding="utf-8") as fh:
        json.dump(results_json(config, hello, results, status), fh, indent=1)
        fh.write("\n")
