"""What the search generates, recorded: the requests of the first examples of a seeded
run against the reference adapter (which never fails, so every example runs to its
end). ``tests/fixtures/inputs_any.json`` holds them as ``--inputs any`` generated them
(the generators from before ``--inputs`` existed); ``test_inputs.py`` checks ``--inputs
any`` still generates them. Re-recorded, generators unchanged, when the search stopped
drawing Hypothesis's "local constants" (what those gave depended on the modules the
process had imported: tests/test_seed_determinism.py) and when it stopped using
Hypothesis's stateful runner (which changed every seed's choices).

Regenerate (only when the unusual generators change on purpose)::

    .venv/bin/python tests/generated_requests.py > tests/fixtures/inputs_any.json
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from typing import Any
from unittest import mock

from refimpl.conformance.search.config import Config
from refimpl.conformance.search.run import run
from refimpl.conformance.search.session import Example

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
#: What the fixture covers: the pieces whose generators ``--inputs`` changes.
COMPONENTS = ("store", "delta_fifo", "real_fifo", "informer")
SEEDS = (1, 7)
EXAMPLES = 12


def generated(component: str, seed: int, examples: int, **settings: Any) -> list[list[Any]]:
    """The requests each example of a seeded run sends, example by example."""
    recorded: list[list[Any]] = []
    exchange = Example.exchange

    def recording(self: Example, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "create":
            recorded.append([])
        recorded[-1].append(request)
        return exchange(self, request)

    config = Config(
        command=REFERENCE,
        components=[component],
        seed=seed,
        max_examples=examples,
        budget=600.0,
        progress=False,
        **settings,
    )
    with mock.patch.object(Example, "exchange", recording):
        status = run(config, out=io.StringIO(), err=io.StringIO())
    assert status == 0, f"the reference adapter failed {component} seed {seed}"
    return recorded


def digest(requests: list[Any]) -> str:
    text = json.dumps(requests, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record() -> dict[str, Any]:
    """Per component and seed: each example's digest, and the first example in full
    (to read when the digests differ)."""
    out: dict[str, Any] = {"examples": EXAMPLES, "runs": {}}
    for component in COMPONENTS:
        for seed in SEEDS:
            runs = generated(component, seed, EXAMPLES, inputs="any")
            out["runs"][f"{component}/{seed}"] = {
                "digests": [digest(r) for r in runs],
                "first": runs[0],
            }
    return out


if __name__ == "__main__":
    json.dump(record(), sys.stdout, indent=1)
    sys.stdout.write("\n")
