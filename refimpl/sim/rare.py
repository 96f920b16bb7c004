"""Rare informer paths: what a relist finds queued, read from the simulator's state.

Two relists matter most to the FIFO's Replace (docs/07-the-model-and-the-code.md,
"Coverage"): one while a key's last queued delta is a delete (a relist's tombstone then
follows a watch's delete: which of the two consecutive deletes stays), and one while an
add or update of a key is queued that the store does not hold and the server no longer
has (the key was deleted during the outage: before kubernetes PR #115620 Replace
tombstoned stored keys only, so that add was stored after the relist and the delete was
lost). A random run takes them seldom; a scenario with ``steer_rare`` makes its generator seek them
(refimpl/sim/actions.py): a client write deletes such a queued key, and the faults that
end in a relist weigh more while a setup is queued. Both read the same abstract state
the trace records (``fifo``, ``store``, ``server``), so a trace is measured the same way
(refimpl/tla/trace_coverage.py). Owns no state. Refines nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["GHOST", "QUEUED_DELETE", "RARE_PATHS", "ghost_keys", "last_queued", "setups"]

QUEUED_DELETE = "relist-over-delete"
GHOST = "relist-over-ghost"

#: Rare path -> what it is.
RARE_PATHS: dict[str, str] = {
    QUEUED_DELETE: "a relist while a key's last queued delta is a delete",
    GHOST: (
        "a relist while an add or update is queued of a key neither stored nor on the "
        "server (kubernetes PR #115620)"
    ),
}

_OBJECT_TYPES = ("Added", "Updated", "Deleted", "Deleted(DFSU)", "Replaced", "Sync")


def last_queued(fifo: Sequence[Any]) -> dict[str, str]:
    """Key -> the type of its last queued delta, from a trace's ``fifo``: DeltaFIFO's
    ``[[key, [[type, key, rv], ...]], ...]`` or RealFIFO's log of ``[type, key, rv]``
    entries (a ReplacedAll, SyncAll or Bookmark entry names no one key)."""
    out: dict[str, str] = {}
    for entry in fifo:
        if len(entry) == 2 and isinstance(entry[1], list):
            for delta in entry[1]:
                out[str(delta[1])] = str(delta[0])
        elif len(entry) == 3 and entry[0] in _OBJECT_TYPES:
            out[str(entry[1])] = str(entry[0])
    return out


def ghost_keys(
    fifo: Sequence[Any], stored: Collection[str], on_server: Collection[str]
) -> list[str]:
    """Keys whose last queued delta is no delete, that the store does not hold and the
    server no longer has, in order: a relist now takes the #115620 path for each."""
    return sorted(
        k
        for k, kind in last_queued(fifo).items()
        if not kind.startswith("Deleted") and k not in stored and k not in on_server
    )


def setups(fifo: Sequence[Any], stored: Collection[str], on_server: Collection[str]) -> set[str]:
    """The rare paths a relist from this state takes."""
    out: set[str] = set()
    if any(kind.startswith("Deleted") for kind in last_queued(fifo).values()):
        out.add(QUEUED_DELETE)
    if ghost_keys(fifo, stored, on_server):
        out.add(GHOST)
    return out
