"""Which code replays which state graph: one refinement mapping per graphed model.

Owns no state. :data:`MAPPINGS` names, for each model of spec/models.json that has a
graph, the mapping that rebuilds the code in that model's states; the model's constants
are read from its MC module (``MCKeys == {"a", "b"}`` lines), so the replay and the
model TLC checked cannot drift apart. ``refimpl spec replay`` and the tests use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from refimpl.cache.informer_core import FifoMode
from refimpl.tla.refine_controller import ControllerMapping
from refimpl.tla.refine_fifo import DeltaFIFOMapping, RealFIFOMapping
from refimpl.tla.refine_indexer import IndexerMapping
from refimpl.tla.refine_informer import InformerMapping
from refimpl.tla.refine_informer_resync import InformerResyncMapping
from refimpl.tla.refine_workqueue import WorkQueueMapping
from refimpl.tla.replay import Move
from refimpl.tla.values import Value, parse_value

__all__ = ["MAPPINGS", "Mapping_", "mapping_for", "mc_constants"]

#: A replay mapping: the code moves from one spec state.
Mapping_ = Callable[[Mapping[str, Value]], Iterable[Move]]

_DEFINITION = re.compile(r"^MC(\w+)\s*==\s*(.+?)\s*$")


def mc_constants(module: Path) -> dict[str, Value]:
    """The constants an MC module binds: ``MCKeys == {"a", "b"}`` gives ``Keys``."""
    out: dict[str, Value] = {}
    for line in module.read_text().splitlines():
        m = _DEFINITION.match(line)
        if m:
            out[m.group(1)] = parse_value(m.group(2))
    return out


def _strs(value: Value) -> tuple[str, ...]:
    if not isinstance(value, frozenset):
        raise TypeError(f"expected a set constant, got {value!r}")
    return tuple(sorted(str(v) for v in value))


def _ints(value: Value) -> tuple[int, ...]:
    if not isinstance(value, frozenset) or not all(isinstance(v, int) for v in value):
        raise TypeError(f"expected a set of integers, got {value!r}")
    return tuple(sorted(int(v) for v in value))  # type: ignore[arg-type]


def _int(value: Value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer constant, got {value!r}")
    return value


def _bool(value: Value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected TRUE or FALSE, got {value!r}")
    return value


def _workqueue(c: Mapping[str, Value]) -> Mapping_:
    return WorkQueueMapping(_strs(c["Keys"]), str(c["NoItem"]))


def _delta_fifo(c: Mapping[str, Value]) -> Mapping_:
    return DeltaFIFOMapping(
        _strs(c["Keys"]),
        _ints(c["RVs"]),
        _int(c["MaxQueued"]),
        emit_delta_type_replaced=_bool(c["EmitDeltaTypeReplaced"]),
    )


def _real_fifo(c: Mapping[str, Value]) -> Mapping_:
    return RealFIFOMapping(
        _strs(c["Keys"]), _ints(c["RVs"]), _int(c["MaxQueued"]), atomic=bool(c["Atomic"])
    )


def _informer(mode: FifoMode) -> Callable[[Mapping[str, Value]], Mapping_]:
    def build(c: Mapping[str, Value]) -> Mapping_:
        return InformerMapping(_strs(c["Keys"]), _int(c["MaxRV"]), mode)

    return build


def _informer_faults(c: Mapping[str, Value]) -> Mapping_:
    return InformerMapping(
        _strs(c["Keys"]),
        _int(c["MaxRV"]),
        FifoMode.DELTA,
        max_faults=_int(c["MaxFaults"]),
        max_bookmarks=_int(c["MaxBookmarks"]),
    )


def _informer_resync(c: Mapping[str, Value]) -> Mapping_:
    return InformerResyncMapping(
        _strs(c["Keys"]), _int(c["MaxRV"]), FifoMode.DELTA, max_resyncs=_int(c["MaxResyncs"])
    )


def _controller(c: Mapping[str, Value]) -> Mapping_:
    return ControllerMapping(
        _strs(c["Keys"]),
        _strs(c["Workers"]),
        str(c["NoItem"]),
        _ints(c["Values"]),
        _int(c["MaxWrites"]),
    )


def _indexer(c: Mapping[str, Value]) -> Mapping_:
    index_of = c["IndexOf"]
    if not isinstance(index_of, tuple):
        raise TypeError(f"expected a sequence of value sets, got {index_of!r}")
    return IndexerMapping(_strs(c["Keys"]), _strs(c["Values"]), tuple(map(_str_set, index_of)))


def _str_set(value: Value) -> frozenset[str]:
    return frozenset(_strs(value))


#: Model name -> how to build its mapping from the MC module's constants.
MAPPINGS: dict[str, Callable[[Mapping[str, Value]], Mapping_]] = {
    "WorkQueue": _workqueue,
    "DeltaFIFO": _delta_fifo,
    "DeltaFIFONoReplaced": _delta_fifo,
    "RealFIFO": _real_fifo,
    "RealFIFOAtomic": _real_fifo,
    "Informer": _informer(FifoMode.DELTA),
    "InformerAtomic": _informer(FifoMode.REAL_ATOMIC),
    "InformerFaults": _informer_faults,
    "InformerResync": _informer_resync,
    "ControllerReplay": _controller,
    "Indexer": _indexer,
}


def mapping_for(name: str, module: Path) -> Mapping_:
    """The replay mapping of model ``name``, with the constants of its MC ``module``."""
    try:
        build = MAPPINGS[name]
    except KeyError:
        known = ", ".join(MAPPINGS)
        raise ValueError(f"no code mapping for model {name} (have: {known})") from None
    constants = mc_constants(module)
    try:
        return build(constants)
    except KeyError as missing:
        raise ValueError(
            f"{module.name} binds no MC{missing.args[0]} on one line (found: "
            f"{', '.join(constants) or 'nothing'}); the replay of {name} needs it"
        ) from None
