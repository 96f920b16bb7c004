"""Invariants checked on the adapter's answers alone, step by step, independently of
the reference (the promises of docs/invariants.md).

Owns what the answers so far imply: the items handed out and not yet done, whether
shutdown was seen. A violation names the property, which says more than "differs from
the reference" (the comparison with the reference still runs after these checks).
The checks that rest on correct usage (exclusivity) switch off once a contract
violation was sent (``--misuse``), because client-go itself then breaks them.

For the FIFOs, :class:`PoppedStore` also applies the popped deltas to a store as an
informer does and checks INF-3 (no ghosts) end to end whenever the FIFO is drained.
"""

from __future__ import annotations

import itertools
from typing import Any

from refimpl.cache.handlers import ResourceEventHandlerFuncs
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.store import Indexer
from refimpl.conformance.reference.cache import delta_from_json, object_from_json, to_json
from refimpl.conformance.search.report import compact, show_request

__all__ = ["AnswerChecker", "PoppedStore"]

#: Requests at which a FIFO reads its known objects (Delete, Replace, Resync).
_READS_KNOWN = frozenset({"delete", "replace", "resync"})
_NO_HANDLER = ResourceEventHandlerFuncs()


class AnswerChecker:
    """Feeds on (request, adapter response) pairs; returns violated invariants."""

    def __init__(self) -> None:
        #: Items get_nowait handed out and no done() since, in hand-out order.
        self.held: list[str] = []
        self.saw_shutdown = False
        self.misused = False
        #: Requests seen so far (the step number of the current one).
        self.steps = 0
        #: For delta_fifo / real_fifo: the pops applied to a store (INF-3 end to end).
        self.popped: PoppedStore | None = None

    def check(self, request: dict[str, Any], response: dict[str, Any]) -> list[str]:
        self.steps += 1
        if request.get("op") == "create" and "result" in response:
            component = request.get("component")
            if component in ("delta_fifo", "real_fifo"):
                self.popped = PoppedStore(str(component), request.get("options") or {})
        if request.get("op") != "call" or "result" not in response:
            return []
        method = request.get("method")
        args = request.get("args") or {}
        result = response["result"]
        out: list[str] = []
        if self.popped is not None:
            ghost = self.popped.feed(self.steps, request, result)
            if ghost:
                out.append(ghost)
        if method == "get_nowait" and isinstance(result, dict) and result.get("kind") == "item":
            item = result.get("item")
            if item in self.held and not self.misused:
                out.append(f"exclusivity (WQ-5): {item!r} handed out again before done({item!r})")
            self.held.append(str(item))
        elif method == "done":
            item = args.get("item")
            if item in self.held:
                self.held.remove(item)
            else:
                self.misused = True
        elif method == "shutting_down":
            if self.saw_shutdown and result is False:
                out.append("shutting_down() went back from true to false")
            self.saw_shutdown = self.saw_shutdown or result is True
        elif method in ("len", "num_requeues"):
            if not isinstance(result, int) or isinstance(result, bool) or result < 0:
                out.append(f"{method}() answered {result!r}, not a count")
        elif method == "when":
            if not isinstance(result, (int, float)) or isinstance(result, bool) or result < 0:
                out.append(f"when() answered {result!r}, not a delay >= 0")
        elif method == "pop_nowait" and isinstance(result, dict) and result.get("kind") == "item":
            deltas = result.get("deltas")
            if not isinstance(deltas, list) or not deltas:
                out.append(f"pop handed out an empty Deltas (FIFO-1): {result!r}")
            else:
                types = [d.get("type") if isinstance(d, dict) else None for d in deltas]
                if any(a == b == "Deleted" for a, b in itertools.pairwise(types)):
                    out.append(f"two adjacent Deleted deltas not merged (FIFO-3): {types}")
        return out


def _key(obj: Any) -> str:
    namespace = obj.get("namespace") or ""
    return f"{namespace}/{obj['name']}" if namespace else str(obj["name"])


def _plain(obj: Any) -> Any:
    """A protocol object in the canonical form :func:`to_json` gives."""
    return to_json(object_from_json(obj))


class PoppedStore:
    """INF-3 end to end for ``delta_fifo`` and ``real_fifo``: one side's pops applied to a
    store the way an informer applies them (client-go ``controller.go`` processDeltas,
    ported as :func:`refimpl.cache.process_deltas.process_deltas`), next to the source the
    requests describe: the last ``replace``'s objects, then later ``add``/``update``
    (set) and ``delete`` (gone).

    Once every popped delta has been applied (a ``pop_nowait`` answers empty or closed),
    the store must equal the source -- if the comparison is fair, which depends on how
    the FIFO's known objects are wired:

    * atomic RealFIFO: always (it reads no known objects; a ``ReplacedAll`` replaces
      the store);
    * DeltaFIFO with known objects, non-atomic RealFIFO: while the known objects *are*
      that store, as in an informer -- checked at every request that reads them
      (delete, replace, resync); a ``known_add``/``known_delete`` that makes them differ
      ends the comparison for the example;
    * DeltaFIFO without known objects: never (client-go then leaves ghosts by design).
    """

    def __init__(self, component: str, options: dict[str, Any]) -> None:
        atomic = component == "real_fifo" and bool(options.get("atomic", False))
        #: The FIFO reads known objects (so they must be the store for a fair check).
        self.uses_known = not atomic and (
            component == "real_fifo" or bool(options.get("known_objects", True))
        )
        self.fair_by_design = atomic or self.uses_known
        self.wired = True
        self.broken = False  # an answer this model could not apply
        self.store = Indexer()
        self.known: dict[str, Any] = {}
        self.source: dict[str, Any] = {}
        #: Where the last relist happened, and whose pops these are, for the report.
        self.relist = ""
        self.whose = "the pops"

    @property
    def fair(self) -> bool:
        """Whether the store may be compared with the source (see the class docstring)."""
        return self.fair_by_design and not self.broken and (self.wired or not self.uses_known)

    def stored(self) -> dict[str, Any]:
        return {k: to_json(self.store.get_by_key(k)[0]) for k in sorted(self.store.list_keys())}

    def known_fixes(self) -> list[tuple[str, Any]]:
        """The ``known_add``/``known_delete`` calls that make the known objects the store
        again: what an informer's processDeltas did to its indexer while it popped."""
        if not self.uses_known or self.broken:
            return []
        stored = self.stored()
        fixes = [("known_delete", o) for k, o in sorted(self.known.items()) if k not in stored]
        fixes += [("known_add", o) for k, o in stored.items() if self.known.get(k) != o]
        return fixes

    def feed(self, step: int, request: dict[str, Any], result: Any) -> str | None:
        """Take one successful call and its result; at a drain point, what is wrong with
        the store (None if nothing, or if the comparison is not fair)."""
        method = request.get("method")
        args = request.get("args") or {}
        try:
            if method == "known_add":
                self.known[_key(args["obj"])] = _plain(args["obj"])
            elif method == "known_delete":
                self.known.pop(_key(args["obj"]), None)
            elif method in ("add", "update"):
                self.source[_key(args["obj"])] = _plain(args["obj"])
            elif method == "delete":
                self.source.pop(_key(args["obj"]), None)
            elif method == "replace":
                self.source = {_key(o): _plain(o) for o in args["objs"]}
                self.relist = f"the relist at step {step} ({show_request(request)})"
            elif method == "pop_nowait" and isinstance(result, dict):
                if result.get("kind") == "item":
                    deltas = [delta_from_json(d) for d in result["deltas"]]
                    process_deltas(_NO_HANDLER, self.store, deltas, bool(result.get("initial")))
                elif result.get("kind") in ("empty", "closed"):
                    return self.verdict()
        except Exception:
            self.broken = True  # garbage in an answer: the comparison with the reference says so
        if method in _READS_KNOWN and self.uses_known and self.known != self.stored():
            self.wired = False
        return None

    def faults(self) -> list[tuple[str, str]]:
        """What is wrong with the drained store, each as (kind, text): kind ``ghost`` (a
        key the source no longer has), ``stale`` (another version than the source's) or
        ``lacks`` (a key of the source missing). Empty if it is unfair or equal."""
        if not self.fair:
            return []
        stored = self.stored()
        faults: list[tuple[str, str]] = []
        for key, obj in stored.items():
            if key not in self.source:
                faults.append(("ghost", f"still holds {compact(obj)} (a ghost: INF-3)"))
            elif obj != self.source[key]:
                wanted = compact(self.source[key])
                faults.append(
                    ("stale", f"holds {compact(obj)} where the source has {wanted} (INF-3)")
                )
        for key, obj in sorted(self.source.items()):
            if key not in stored:
                faults.append(("lacks", f"lacks {compact(obj)}, which the source has (INF-3)"))
        return faults

    def fault_kinds(self) -> tuple[str, ...]:
        """The kinds of :meth:`faults`, each once, sorted: part of a FIFO finding's
        signature (search/config.py, ``Failure.signature``)."""
        return tuple(sorted({kind for kind, _ in self.faults()}))

    def verdict(self) -> str | None:
        """What the drained store holds that the source does not (None if it is fair and
        equal)."""
        problems = [text for _, text in self.faults()]
        if not problems:
            return None
        where = f"after {self.relist} and draining" if self.relist else "after draining"
        return f"{where} the FIFO, the store built from {self.whose} " + "; ".join(problems)
