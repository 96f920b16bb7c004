"""The spec-driven walks of ``refimpl peers``: every graphed model a peer's components allow.

For each model of :data:`refimpl.conformance.walks.models.SPEC_MAPPINGS` whose component the
peer's adapter offers, :func:`walk_peer` runs ``refimpl conform --from-spec MODEL``
(in-process, :func:`refimpl.conformance.walks.run.drive`) and records what is
deterministic about it: the verdict (``pass``, ``deviation``, ``not run`` when the
adapter cannot be driven through that model, e.g. a create option it narrows away, or
``inconclusive`` when drivable edges were left untaken: never a pass), the
edges driven, the spec path of a deviation. A peer's ``peer.json`` pins the verdict of
each such model under ``"walks"``; a verdict that differs fails the peer, like a seeded
check. :func:`render_walks` is docs/peers.md's "Spec-driven coverage" section.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.walks.run import drive, load_model_graph

__all__ = ["WALK_VERDICTS", "render_walks", "walk_peer"]

#: What a model's walk can end in.
WALK_VERDICTS = ("pass", "deviation", "not run")


def walk_peer(
    command: Sequence[str],
    offered: Sequence[str],
    timeout: float,
    models: Sequence[str] | None = None,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Walk every model (of ``models``, default all) whose component is in ``offered``;
    the observations and the seconds each took."""
    observed: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for model, mapping in SPEC_MAPPINGS.items():
        if mapping.component not in offered or (models is not None and model not in models):
            continue
        started = time.monotonic()
        run = drive(mapping, load_model_graph(model), command, timeout=timeout)
        seconds[model] = round(time.monotonic() - started, 1)
        cov = run.coverage
        entry: dict[str, Any] = {
            "verdict": run.verdict,
            "edges": cov.edges,
            "drivable": cov.drivable,
            "covered": cov.covered,
            "states": cov.states,
            "states_visited": cov.states_visited,
        }
        if run.deviation is not None:
            entry["path"] = list(run.deviation.path)
            entry["shortened"] = run.deviation.shortened
        elif run.refused is not None:
            entry["reason"] = run.refused
        observed[model] = entry
    return observed, seconds


def render_walks(peers: Sequence[tuple[str, Mapping[str, str], Mapping[str, Any]]]) -> list[str]:
    """The docs/peers.md section for (peer name, its pins, its walk observations)."""
    lines = [
        "",
        "## Spec-driven coverage",
        "",
        "`refimpl conform --from-spec MODEL` against each peer, for every model whose "
        "component the peer offers ([conformance.md](conformance.md#spec-driven-conformance"
        "-every-edge-of-the-model)): the edges of the model's state graph the walk drove "
        "out of those the adapter's methods make drivable (and of the graph's), the states "
        "visited, and the verdict (pinned in peer.json under `walks`). A deviation gives "
        "the spec path to the first wrong answer.",
        "",
        "| peer | model | verdict | edges driven | states | as pinned |",
        "|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    for name, pins, walks in peers:
        for model, seen in walks.items():
            verdict = seen["verdict"]
            pin = pins.get(model, "none")
            ok = "yes" if pin == verdict else f"**no** (pinned: {pin})"
            edges = f"{seen['covered']}/{seen['drivable']} (graph: {seen['edges']})"
            states = f"{seen['states_visited']}/{seen['states']}"
            lines.append(f"| {name} | {model} | {verdict} | {edges} | {states} | {ok} |")
            command = f"refimpl conform --from-spec {model} -- ADAPTER"
            if "path" in seen:
                steps = " · ".join(seen["path"])
                shortened = " (shortened)" if seen.get("shortened") else ""
                details.append(f"- {name}, {model}: {steps}{shortened}; `{command}`")
            elif "reason" in seen:
                details.append(f"- {name}, {model}: not run: {seen['reason']}")
    if not any(walks for _, _, walks in peers):
        lines.append("| (none) | | | | | |")
    if details:
        lines += ["", "Deviations and models not run:", "", *details]
    return lines
