"""Every model of spec/models.json, checked by a real TLC (marked ``tlc``).

Skipped, with the reason, unless ``TLA2TOOLS_JAR`` names the TLA+ tools jar and java
is installed (CI has neither; there the committed graphs are replayed instead). A pass
model must pass, an expected-failure model must have TLC report its property violated,
and both with the recorded distinct-state count and depth (one TLC worker and liveness
checked on the complete graph, so every figure repeats from run to run). The larger
models marked ``"default": false`` are left to ``refimpl spec check MODEL``. Graphs
re-exported from the current specs must equal the committed ones byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refimpl.tla.cli import by_default, check, export
from refimpl.tla.manifest import Model, load_manifest
from refimpl.tla.runner import tlc_unavailable_reason

SPEC = Path(__file__).resolve().parents[1] / "spec"
MODELS = load_manifest(SPEC)


_REASON = tlc_unavailable_reason()
pytestmark = [
    pytest.mark.tlc,
    pytest.mark.skipif(_REASON is not None, reason=f"TLC not available: {_REASON}"),
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("model", by_default(MODELS), ids=lambda m: m.name)
def test_model_outcome(model: Model) -> None:
    run, problems = check(SPEC, model, workers="1")
    print(
        f"{model.name}: {run.result.status.value} {run.result.violated or ''} "
        f"{run.result.distinct_states} states, depth {run.result.depth}, "
        f"{run.wall_seconds:.1f}s"
    )
    assert not problems, "\n".join(problems) + "\n\n" + run.output[-3000:]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("model", [m for m in MODELS if m.graph], ids=lambda m: m.name)
def test_committed_graph_is_current(model: Model, tmp_path: Path) -> None:
    assert model.graph is not None
    out = tmp_path / "graph.json.gz"
    export(SPEC, model, workers="1", out=out)
    assert out.read_bytes() == (SPEC / model.graph).read_bytes(), (
        f"{model.graph} differs from a fresh export: run 'refimpl spec export {model.name}'"
    )
