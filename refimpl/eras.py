"""client-go's release lines, and the behaviour changes refimpl dates to one of them.

The reference behaves like the newest client-go it knows (:data:`NEWEST`). Older
releases differ in dated ways; each difference refimpl models is one named *switch*
in :data:`SWITCHES`, on from the release that introduced it. An :class:`Era` holds
every switch for one release line, and the ports read it where client-go decided
(``if era.rewatch_after_429:``), so the code keeps client-go's shape and an older
release is one flag away. Ports nothing on its own; the switches' client-go changes
are named in the table and in docs/invariants.md beside the claims they change.

A release line is written ``1.NN`` / ``v1.NN`` (Kubernetes) or ``v0.NN`` (the
client-go module's tag); a patch part (``v0.30.2``) is accepted and dropped: refimpl
models no behaviour that changed within a line. Lines older than :data:`OLDEST` are
refused: before it the reflector relisted in ways none of the switches describe.
"""

from __future__ import annotations

import dataclasses
import re

import attrs

__all__ = [
    "LATEST",
    "NEWEST",
    "OLDEST",
    "SWITCHES",
    "Era",
    "ReleaseError",
    "Switch",
    "era_of",
    "parse_release",
]

#: The oldest release line refimpl models: v1.17 first shipped the relist rules of
#: REF-1 (a relist never older than what was seen, "" after a 410 on a list); before
#: it a relist could go back in time, which no switch here describes.
OLDEST = 17
#: The newest: client-go's v1.37 development line (docs/README.md).
NEWEST = 37


@attrs.frozen
class Switch:
    """One dated behaviour change: on from ``release`` (``1.NN``'s NN) onwards."""

    name: str
    release: int
    #: What the reference does differently from that release on (and before it).
    changes: str
    #: The docs/invariants.md ID whose claim it changes.
    invariant: str
    #: The client-go change that introduced it.
    change: str


SWITCHES: tuple[Switch, ...] = (
    Switch(
        "relist_from_last_synced_rv_after_watch_410",
        18,
        "after a 410 Gone on a watch (its request or its stream) the relist asks for the "
        'last synced resourceVersion; before: for "" (the 410 marked that RV unavailable)',
        "REF-1",
        '"Avoid thundering herd on etcd on masters upgrade" (reflector.go, ListAndWatch)',
    ),
    Switch(
        "emit_delta_type_replaced",
        18,
        "a relist hands the informer's DeltaFIFO Replaced deltas, and an update is a "
        "resync only if its resourceVersion did not change; before: Sync deltas, and every "
        "Sync delta (each relisted item, added or updated) reached only the handlers due "
        "for resync",
        "INF-7",
        "#86015 (shared_informer.go, NewDeltaFIFOWithOptions and HandleDeltas)",
    ),
    Switch(
        "backoff_between_passes",
        18,
        "every return of ListAndWatch is followed by an exponential backoff (0.8 s doubling "
        "to 30 s, jittered); before: a fixed 1 s wait (wait.Until's period)",
        "INF-9",
        '"add exponential backoff with reset to reflector" (reflector.go, Run)',
    ),
    Switch(
        "rewatch_after_429",
        22,
        "a 429 on a watch (its request or its stream) is retried after a backoff from the "
        "same resourceVersion; before: it ended the pass, so a relist followed",
        "INF-9",
        "#100878 (reflector.go, ListAndWatch)",
    ),
    Switch(
        "real_fifo",
        33,
        'informers may use RealFIFO (fifo "real", the default); before: DeltaFIFO only',
        "RF-1",
        "#129568 (controller.go, newQueueFIFO)",
    ),
    Switch(
        "atomic_fifo",
        36,
        'informers may use the atomic RealFIFO (fifo "real-atomic", the default)',
        "RF-4",
        "#135462 (the_real_fifo.go, AtomicFIFO)",
    ),
    Switch(
        "backoff_reset_since_last_reset",
        36,
        "the relist backoff restarts from 0.8 s once more than 2 minutes have passed since "
        "it last restarted (DelayWithReset); before: only after 2 minutes without a backoff",
        "INF-9",
        "Backoff.DelayWithReset (reflector.go, Run)",
    ),
)


@dataclasses.dataclass(frozen=True)
class Era:
    """The switches of one release line (each True from the release that introduced it).

    Its fields are :data:`SWITCHES`' names, in that order (tests/test_eras.py checks).
    """

    release: int = NEWEST
    relist_from_last_synced_rv_after_watch_410: bool = True
    emit_delta_type_replaced: bool = True
    backoff_between_passes: bool = True
    rewatch_after_429: bool = True
    real_fifo: bool = True
    atomic_fifo: bool = True
    backoff_reset_since_last_reset: bool = True

    @property
    def name(self) -> str:
        """The release line as docs/ write it: ``1.NN``."""
        return f"1.{self.release}"

    def fifo_modes(self) -> tuple[str, ...]:
        """The informer FIFO generations (docs/protocol.md's ``fifo``) this release has,
        its default first. DeltaFIFO stays in every release: since v1.36 client-go's
        ``InOrderInformers`` gate is locked on (docs/02), but refimpl keeps offering
        ``delta`` with the newest release, as it did before release lines existed."""
        gated = (("real-atomic", self.atomic_fifo), ("real", self.real_fifo), ("delta", True))
        return tuple(mode for mode, there in gated if there)


class ReleaseError(ValueError):
    """A release line that is malformed or outside what refimpl models."""


_RELEASE_RE = re.compile(r"v?(?:(1)|(0))\.([0-9]+)(?:\.[0-9]+)?")


def parse_release(text: str) -> int:
    """The minor number of a release line written ``1.NN``, ``v1.NN`` or ``v0.NN``."""
    found = _RELEASE_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        raise ReleaseError(
            f"{text!r} is not a client-go release line: write 1.NN or v1.NN (Kubernetes), "
            "or v0.NN (the client-go module's tag), e.g. 1.17 or v0.17"
        )
    minor = int(found.group(3))
    if minor < OLDEST:
        raise ReleaseError(
            f"client-go 1.{minor} is older than the oldest release line refimpl models, "
            f"1.{OLDEST}: before it a relist could go back in time (REF-1), which the "
            "reference does not describe"
        )
    if minor > NEWEST:
        raise ReleaseError(
            f"client-go 1.{minor} is newer than refimpl knows: it follows client-go up to "
            f"its 1.{NEWEST} development line"
        )
    return minor


def era_of(release: str | int) -> Era:
    """The era of a release line (``"1.17"``, ``"v0.17"``, or the minor number 17)."""
    minor = parse_release(release) if isinstance(release, str) else parse_release(f"1.{release}")
    return Era(minor, **{s.name: minor >= s.release for s in SWITCHES})


#: The newest release: what the reference does when no release is named.
LATEST = Era()
