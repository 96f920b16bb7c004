"""CONTRIBUTING.md's two checklists, held to the code.

A protocol method (``refimpl.conformance.protocol.COMPONENTS`` or ``SPEC_METHODS``)
needs its section in docs/protocol.md, the reference's handler, and a generator entry
(random search) or a walk mapping that sends it (walk-only methods). A spec action (an
action of a committed state graph) needs the refinement mapping's code move, the walk
mapping's handling (or the model listed as not walked, with its reason), and the trace
module's mapping where the spec has a trace module. Each check below fails when a
method or an action is added without its entry; the paths the checklists name exist.
"""

from __future__ import annotations

import gzip
import inspect
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from refimpl.conformance.protocol import COMPONENTS, SPEC_METHODS
from refimpl.conformance.reference.dispatch import reference_methods
from refimpl.conformance.search import informer_machine, machines
from refimpl.conformance.walks.models import NOT_WALKED, SPEC_MAPPINGS
from refimpl.tla.manifest import default_spec_dir, load_manifest
from refimpl.tla.mappings import mapping_for

ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
SPEC = default_spec_dir()
GRAPHED = [m for m in load_manifest(SPEC) if m.graph]


def _source(module: ModuleType) -> str:
    return Path(inspect.getfile(module)).read_text()


def _names(word: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text) is not None


# -- Adding a protocol method ------------------------------------------------------


def _generated(component: str) -> set[str]:
    """The methods random search sends to ``component``."""
    if component == "informer":
        sent = set(informer_machine.FRAME_METHODS)
        for action in informer_machine.ACTIONS:
            sent |= action.sends | ({action.method} if action.method else set())
        return sent
    table = machines.CACHE_OPERATIONS if component in machines.CACHE_COMPONENTS else None
    operations = table if table is not None else machines.QUEUE_OPERATIONS
    return {op.method or op.name for op in operations}


def _walk_sources() -> str:
    return "".join(_source(inspect.getmodule(type(m)) or inspect) for m in SPEC_MAPPINGS.values())


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_every_protocol_method_has_its_entries(component: str) -> None:
    methods = set(COMPONENTS[component])
    walk_only = set(SPEC_METHODS.get(component, ()))
    protocol_md = (ROOT / "docs" / "protocol.md").read_text()
    undocumented = {m for m in methods | walk_only if f"`{m}`" not in protocol_md}
    assert undocumented == set(), "docs/protocol.md does not describe them"
    unanswered = (methods | walk_only) - reference_methods(component)
    assert unanswered == set(), "the reference (refimpl/conformance/reference/) has no handler"
    ungenerated = methods - _generated(component)
    assert ungenerated == set(), "no Operation/Action in refimpl/conformance/search/ sends them"
    walks = _walk_sources()
    unwalked = {m for m in walk_only if f'"{m}"' not in walks}
    assert unwalked == set(), "walk-only methods that no walk mapping sends"


def test_the_method_check_sees_a_method_without_a_generator() -> None:
    assert "no_such_method" not in _generated("queue")
    assert "pop_nowait" in _generated("delta_fifo") and "watch_end" in _generated("informer")


# -- Adding a spec action ----------------------------------------------------------


def _actions(graph: str) -> set[str]:
    """The action names of a committed graph, read without building the graph."""
    with gzip.open(SPEC / graph) as f:
        return {edge[2] for edge in json.load(f)["edges"]}


def _refinement_source(model: str, module: str) -> str:
    """The refinement mapping's module and its siblings of the same name prefix (a
    mapping split over ``refine_informer*.py`` names its actions in any of them)."""
    mapping = mapping_for(model, SPEC / module)
    path = Path(inspect.getfile(type(mapping)))
    family = path.stem.split("_")[1]
    return "".join(p.read_text() for p in sorted(path.parent.glob(f"refine_{family}*.py")))


#: Actions a trace module need not name. The trace modules (spec/trace/) extend the
#: specs without Close (DeltaFIFO.tla, RealFIFO.tla), while the graphs are of the
#: DeltaFIFOClose/RealFIFOClose models: the simulator closes a FIFO only when it stops
#: an informer for good, and trace validation does not follow that step.
NOT_TRACED = {
    "Close": "in DeltaFIFOClose.tla / RealFIFOClose.tla only",
    "Exit": "in DeltaFIFOClose.tla / RealFIFOClose.tla only (the consumer's end after Close)",
    "Wait": "in DeltaFIFOClose.tla / RealFIFOClose.tla only (the consumer parked)",
    "PopBatch": "RealFIFOTrace.tla does not map it: a gap of trace validation, not a rule",
}


@pytest.mark.parametrize("model", GRAPHED, ids=lambda m: m.name)
def test_every_spec_action_has_its_entries(model: object) -> None:
    name, graph, module = model.name, model.graph, model.module  # type: ignore[attr-defined]
    actions = _actions(graph)
    refine = _refinement_source(name, module)
    assert {a for a in actions if not _names(a, refine)} == set(), "refinement mapping"
    if name in SPEC_MAPPINGS:
        walk = _source(inspect.getmodule(type(SPEC_MAPPINGS[name])) or inspect)
        assert {a for a in actions if not _names(a, walk)} == set(), "walk mapping"
    else:
        assert NOT_WALKED.get(name), f"{name}: neither walked nor in NOT_WALKED"
    trace_tla = SPEC / "trace" / f"{name}Trace.tla"
    if trace_tla.exists():
        traced = trace_tla.read_text()
        assert {a for a in actions - NOT_TRACED.keys() if not _names(a, traced)} == set()


def test_every_walked_model_is_graphed_and_no_model_is_both() -> None:
    graphed = {m.name for m in GRAPHED}
    assert set(SPEC_MAPPINGS) <= graphed
    assert set(NOT_WALKED) <= graphed - set(SPEC_MAPPINGS)


# -- The checklists name real places -----------------------------------------------

_PATH = re.compile(r"`((?:refimpl|spec|docs|tests|adapters|benchmarks)/[^`\s*]+)`")


def test_every_path_the_checklists_name_exists() -> None:
    text = CONTRIBUTING.read_text()
    named = {p for p in _PATH.findall(text) if "<" not in p}
    assert len(named) >= 20
    missing = sorted(p for p in named if not (ROOT / p.rstrip("/")).exists())
    assert missing == []


def test_contributing_has_both_checklists() -> None:
    text = CONTRIBUTING.read_text()
    assert "## Checklist: adding a protocol method" in text
    assert "## Checklist: adding a spec action" in text
