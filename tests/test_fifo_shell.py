"""The FIFO shell (refimpl/cache/fifo_shell.py) over both cores.

DeltaFIFO and RealFIFO wrap their cores in one shell: a lock, producers that wake every
parked pop, and ``close``. What that shell does is tested here once, for each FIFO; what
each FIFO's own ``pop`` does while processing stays in test_delta_fifo.py and
test_real_fifo.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from refimpl.cache import (
    Delta,
    DeltaFIFO,
    DeltaFIFOCore,
    Deltas,
    DeltaType,
    FIFOClosedError,
    RealFIFO,
    RealFIFOCore,
)
from refimpl.meta import Object

if TYPE_CHECKING:
    from conftest import Eventually


def _noop(deltas: Deltas, initial: bool) -> None:
    pass


@dataclass(frozen=True)
class Kind:
    """One FIFO as the shell tests need it."""

    name: str
    #: A shell with the options these tests use.
    make: Callable[[], DeltaFIFO | RealFIFO]
    #: The pops a test parks: each takes the FIFO and blocks until an entry or close.
    poppers: tuple[Callable[[Any], object], ...]
    #: ``wrap(core=..., name=...)``: the same class, around a core built elsewhere.
    wrap: Callable[..., DeltaFIFO | RealFIFO]
    #: A core built elsewhere; another, and an option that may not be given beside it.
    core: Callable[[], DeltaFIFOCore | RealFIFOCore]
    spare_core: Callable[[], DeltaFIFOCore | RealFIFOCore]
    option: dict[str, object] = field(default_factory=dict)
    #: What the core holds after one ``add(Object("a", "ns"))``, and what that must be.
    queued: Callable[[Any], object] = lambda core: None
    queued_after_one_add: object = None


KINDS = [
    Kind(
        "DeltaFIFO",
        make=DeltaFIFO,
        poppers=(lambda f: f.pop(_noop), lambda f: f.pop(_noop)),
        wrap=DeltaFIFO,
        core=lambda: DeltaFIFOCore(emit_delta_type_replaced=True),
        spare_core=DeltaFIFOCore,
        option={"emit_delta_type_replaced": True},
        queued=lambda core: list(core.queue),
        queued_after_one_add=["ns/a"],
    ),
    Kind(
        "RealFIFO",
        make=lambda: RealFIFO(atomic_events=True),
        poppers=(lambda f: f.pop_batch(lambda ds, i: None, _noop), lambda f: f.pop(_noop)),
        wrap=RealFIFO,
        core=lambda: RealFIFOCore(atomic_events=True),
        spare_core=lambda: RealFIFOCore(atomic_events=True),
        option={"batch_size": 7},
        queued=lambda core: len(core.items),
        queued_after_one_add=1,
    ),
]


@pytest.fixture(params=KINDS, ids=[k.name for k in KINDS])
def kind(request: pytest.FixtureRequest) -> Kind:
    k: Kind = request.param
    return k


@pytest.mark.timeout(20)
def test_pop_blocks_until_add(kind: Kind, eventually: Eventually) -> None:
    fifo = kind.make()
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fifo.pop(_noop)), daemon=True)
    t.start()
    eventually(lambda: fifo.waiting_poppers() == 1, "the pop to park")
    assert out == []
    fifo.add(Object("a"))
    t.join(timeout=5)
    assert not t.is_alive()
    assert out == [[Delta(DeltaType.ADDED, Object("a"))]]


@pytest.mark.timeout(20)
def test_close_wakes_every_blocked_pop_90825(kind: Kind, eventually: Eventually) -> None:
    """Upstream #90825 (issue #90581): a pop parked on an empty queue must see close
    (RealFIFO: a parked pop_batch too)."""
    fifo = kind.make()
    errors: list[Exception] = []

    def run(pop: Callable[[Any], object]) -> None:
        try:
            pop(fifo)
        except FIFOClosedError as err:
            errors.append(err)

    threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in kind.poppers]
    for t in threads:
        t.start()
    eventually(lambda: fifo.waiting_poppers() == 2, "both pops to park")
    fifo.close()
    for t in threads:
        t.join(timeout=5)
        assert not t.is_alive()
    assert len(errors) == 2 and all(isinstance(x, FIFOClosedError) for x in errors)
    assert fifo.is_closed()


def test_a_shell_wraps_a_core_built_elsewhere_and_refuses_options_beside_it(kind: Kind) -> None:
    core = kind.core()
    fifo = kind.wrap(core=core, name="wrapped")
    fifo.add(Object("a", "ns"))
    assert fifo.core is core and fifo.name == "wrapped"
    assert kind.queued(core) == kind.queued_after_one_add
    with pytest.raises(ValueError, match="not both"):
        kind.wrap(core=kind.spare_core(), **kind.option)
