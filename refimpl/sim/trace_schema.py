"""The simulator's trace line, typed: what ``Simulator.abstract_state`` writes (one JSON
object per line) and trace validation (refimpl/tla/trace.py) reads.

Owns no state. The producer is typed against :class:`TraceRecord` (mypy checks that the
simulator writes this schema); the checker reads a file, or decoded objects, through
:func:`parse_record`, which checks the structure of every field once -- types, from the
annotations below -- so the per-spec mappings (refimpl/tla/trace_*.py) only check what
the spec needs: which fields it requires (:func:`require`) and what their values mean.

A JSON line has lists where this schema has tuples: :func:`parse_record` accepts a list
of the right length for a tuple and hands back the record as decoded (it checks, it does
not convert). Every field is optional to the schema: hand-written traces carry only what
their spec maps, and each mapping names what it is missing.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, NotRequired, TypedDict, Union

__all__ = [
    "EventRecord",
    "NoteRecord",
    "ReflectorRecord",
    "SpecRecord",
    "TraceRecord",
    "WatchRecord",
    "WriteRecord",
    "parse_record",
    "require",
]

#: A server write as the spec traces record it: ``[ADDED|MODIFIED|DELETED, key, rv]``.
WriteRecord = tuple[str, str, int]
#: A watch event: ``[type, key, rv]`` (an ERROR or BOOKMARK event has key "-").
EventRecord = tuple[str, str, int]
#: A listener's pending notification: ``[add|update|delete|deleteDFSU, key, rv]``.
NoteRecord = tuple[str, str, int]
#: A worker: ``[key or None, phase]``.
WorkerRecord = tuple[str | None, str]

#: What the reflector got from the server in a step (``SpecRecord.answers``).
Answer = Literal["listed", "opened", "gone", "ended"]
#: A code step inside a simulator step (``TraceRecord.sub``), named by the cores'
#: tracing hooks (``Indexer.on_write``, ``InformerCore.step_hook``).
SubStep = Literal["popped", "taken", "store-write", "distributed", "finished"]

WatchRecord = TypedDict(
    "WatchRecord",
    {
        "id": int,
        "from": int,  # the resourceVersion it was opened from
        "pending": list[EventRecord],
        "wire": list[EventRecord],
        "ended": bool,
    },
)


class ReflectorRecord(TypedDict):
    phase: str  # the reflector's park point (SimInformer.reflector_phase)
    lastSyncRV: str  # "" before the first list


class SpecRecord(TypedDict):
    """The fields spec/Informer.tla and InformerAtomic.tla need (``spec_trace``;
    refimpl/sim/spec_trace.py): every server write, the reflector's phase as the specs
    name it, the listener the fields describe, its handler's view and last rv per key,
    the FIFO's own HasSynced and what the reflector got from the server in this step."""

    history: list[WriteRecord]
    phase: str
    listener: str
    view: dict[str, int]
    lastRV: dict[str, int]
    fifoSynced: NotRequired[bool]
    answers: NotRequired[list[Answer]]


class TraceRecord(TypedDict, total=False):
    step: int
    action: str
    desc: str
    t: float
    generation: int
    server: dict[str, int]  # key -> rv of the live objects
    serverRV: int
    compactedRV: int
    watch: WatchRecord | None
    reflector: ReflectorRecord
    #: DeltaFIFO: ``[[key, [delta, ...]], ...]``; RealFIFO: ``[entry, ...]`` (shapes in
    #: refimpl/sim/informer.py ``delta_state``): checked by the FIFO mappings.
    fifo: list[Any]
    store: dict[str, int]
    synced: bool
    pending: dict[str, list[NoteRecord]]
    workers: list[WorkerRecord]
    queue: list[str]
    dirty: list[str]
    processing: list[str]
    waiting: dict[str, float]
    shuttingDown: bool
    drain: bool
    stopped: list[str]
    drainer: Literal["idle", "waiting", "returned"]
    spec: SpecRecord
    sub: SubStep
    #: The entries a take removed (``sub == "taken"``), as ``fifo`` shows entries.
    taken: list[Any]


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if tp is bool:
        return "true or false"
    if tp is int:
        return "a non-negative integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is type(None):
        return "null"
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(tp))
    if origin is list:
        return "a list"
    if origin is tuple:
        return f"a list of {len(typing.get_args(tp))}"
    if origin is dict or typing.is_typeddict(tp):
        return "an object"
    return "anything"


#: The checks of the scalar types the schema uses (a JSON number is never a bool).
_SCALAR_CHECKS: dict[type, Callable[[Any], bool]] = {
    bool: lambda value: isinstance(value, bool),
    int: lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= 0,
    float: lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    str: lambda value: isinstance(value, str),
    type(None): lambda value: value is None,
}


def _check(value: Any, tp: Any, what: str) -> None:
    """Raise ValueError naming ``what`` unless ``value`` (decoded JSON) fits ``tp``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return
    if origin is NotRequired:
        _check(value, args[0], what)
        return
    if origin in (Union, types.UnionType):
        errors = []
        for arg in args:
            try:
                _check(value, arg, what)
                return
            except ValueError as err:
                errors.append(err)
        raise ValueError(f"{what}: expected {_describe(tp)}, got {value!r}")
    scalar = _SCALAR_CHECKS.get(tp) if isinstance(tp, type) else None
    ok: bool
    if scalar is not None:
        ok = scalar(value)
    elif origin is Literal:
        ok = value in args
    else:
        ok = _check_structure(value, tp, what)
    if not ok:
        raise ValueError(f"{what}: expected {_describe(tp)}, got {value!r}")


def _check_structure(value: Any, tp: Any, what: str) -> bool:
    """Whether ``value`` has ``tp``'s shape (a list, a tuple, a dict or a TypedDict);
    raises ValueError naming the first item that does not fit."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    ok: bool
    if origin is list:
        ok = isinstance(value, list)
        if ok:
            for i, item in enumerate(value):
                _check(item, args[0], f"{what}[{i}]")
    elif origin is tuple:
        ok = isinstance(value, list | tuple) and len(value) == len(args)
        if ok:
            for i, (item, arg) in enumerate(zip(value, args, strict=True)):
                _check(item, arg, f"{what}[{i}]")
    elif origin is dict:
        ok = isinstance(value, Mapping)
        if ok:
            for key, item in value.items():
                _check(key, args[0], f"{what}: key {key!r}")
                _check(item, args[1], f"{what}[{key}]")
    elif typing.is_typeddict(tp):
        ok = isinstance(value, Mapping)
        if ok:
            _check_fields(value, tp, what)
    else:  # pragma: no cover - the schema uses only the types above
        raise TypeError(f"{what}: no check for {tp!r}")
    return ok


_HINTS: dict[Any, dict[str, Any]] = {}


def _hints(tp: Any) -> dict[str, Any]:
    if tp not in _HINTS:
        _HINTS[tp] = typing.get_type_hints(tp, include_extras=True)
    return _HINTS[tp]


def _check_fields(value: Mapping[str, Any], tp: Any, what: str) -> None:
    hints = _hints(tp)
    # From the resolved hints: with string annotations ``__required_keys__`` cannot
    # see NotRequired.
    total = bool(getattr(tp, "__total__", True))
    required = {k for k, h in hints.items() if total and typing.get_origin(h) is not NotRequired}
    missing = sorted(required - value.keys())
    if missing:
        raise ValueError(f"{what}: missing {', '.join(missing)}")
    for name, hint in hints.items():
        if name in value:
            _check(value[name], hint, f"{what}: {name}" if what else name)


def parse_record(data: Mapping[str, Any], where: str) -> TraceRecord:
    """``data`` (a decoded trace line) as a :class:`TraceRecord`, its fields' structure
    checked against the schema; raises ValueError naming ``where`` and the field.
    Fields the schema does not name are left alone."""
    _check_fields(data, TraceRecord, where)
    return typing.cast("TraceRecord", data)


def require(
    record: TraceRecord, fields: tuple[str, ...], where: str, what: str, hint: str = ""
) -> None:
    """Raise ValueError unless ``record`` has every field of ``fields`` (``what`` says
    whose state they are, e.g. "no work queue state"; ``hint``, where to get them)."""
    missing = [f for f in fields if f not in record]
    if missing:
        raise ValueError(
            f"{where}: {what} (missing {', '.join(missing)})" + (f"; {hint}" if hint else "")
        )
