"""The replay-based minimizer: polishes Hypothesis' shrunk failure by replaying edited
traces on the adapter (:func:`~refimpl.conformance.search.replay.try_trace`) and keeping
every edit after which the trace still fails the same way.

:func:`minimize` runs the passes listed in :data:`OPENING`, :data:`ROUND` and
:data:`CLOSING`, in that order (see its docstring); each pass is one function here, from
the best failure so far and the replay test to a better failure. Ports nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from refimpl.conformance.process import AdapterHung
from refimpl.conformance.search.config import Failure, Step
from refimpl.conformance.search.history import realistic
from refimpl.conformance.search.replay import try_trace
from refimpl.conformance.search.session import RunContext
from refimpl.shrinking import drop_runs

__all__ = [
    "CLOSING",
    "OPENING",
    "ROUND",
    "Replay",
    "as_plain_lists",
    "drop_chunks",
    "drop_object",
    "drop_pair",
    "drop_unneeded_state",
    "fold_watch_events",
    "merge_adjacent",
    "minimize",
    "round_advances",
    "simplify_arguments",
]

#: The replay test a pass asks: the failure an edited request list produces, if it
#: still fails the way the minimized failure does (None otherwise, or past the budget).
Replay = Callable[[list[dict[str, Any]]], Failure | None]
#: A pass that always answers the best failure it reached (perhaps the one it was given).
Polish = Callable[[Failure, Replay], Failure]
#: A pass that answers a shorter failure, or None if it found none.
Shorten = Callable[[Failure, Replay], Failure | None]


def _simpler(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Simpler variants of one request: fewer list elements, first item/name."""
    args = request.get("args")
    if request.get("op") != "call" or not isinstance(args, dict):
        return []
    variants: list[dict[str, Any]] = []
    for key, value in args.items():
        if key == "item" and value != "a":
            variants.append({**request, "args": {**args, key: "a"}})
        if key == "objs" and isinstance(value, list):
            for i in range(len(value)):
                variants.append({**request, "args": {**args, key: value[:i] + value[i + 1 :]}})
        if key == "obj" and isinstance(value, dict):
            for field, plain in (("name", "a"), ("namespace", ""), ("labels", {}), ("rv", "1")):
                if value.get(field) != plain:
                    obj = {**value, field: plain}
                    variants.append({**request, "args": {**args, key: obj}})
    return variants


def _merged(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    """Single requests that may do the work of ``first`` then ``second``."""
    if first.get("method") == "watch_open" and second.get("method") == "watch_end":
        return [
            {**first, "method": "watch_error", "args": {"reason": reason}}
            for reason in ("expired", "internal")
        ]
    if first.get("method") == "watch_end" and second.get("method") == "watch_error":
        # A watch that ends and the re-watch that fails: the watch may as well end with
        # that failure (an informer relists after either).
        reason = (second.get("args") or {}).get("reason")
        if reason in ("expired", "internal"):
            return [{**first, "args": {"how": reason}}]
    return []


def merge_adjacent(failure: Failure, still_fails: Replay) -> Failure | None:
    """The first replay that still fails with two adjacent steps merged into one."""
    requests = [s.request for s in failure.steps]
    for n in range(1, len(requests) - 1):
        for single in _merged(requests[n], requests[n + 1]):
            found = still_fails([*requests[:n], single, *requests[n + 2 :]])
            if found is not None and len(found.steps) < len(requests):
                return found
    return None


def _consumers(steps: Sequence[Step]) -> dict[int, int]:
    """Step index of each ``get_nowait`` that handed out an item -> index of the ``done``
    that gave it back. The two are one unit of correct usage: the get cannot go without
    its done (a stray ``done`` is refused, see :func:`try_trace`)."""
    links: dict[int, int] = {}
    open_gets: dict[Any, list[int]] = {}
    for n, step in enumerate(steps):
        request = step.request
        if request.get("op") != "call":
            continue
        method = request.get("method")
        answer = (step.adapter or {}).get("result")
        if method == "get_nowait" and isinstance(answer, dict) and answer.get("kind") == "item":
            open_gets.setdefault(json.dumps(answer.get("item")), []).append(n)
        elif method == "done":
            pending = open_gets.get(json.dumps((request.get("args") or {}).get("item")))
            if pending:
                links[pending.pop(0)] = n
    return links


def _observed_advances(steps: Sequence[Step]) -> dict[int, int]:
    """An ``advance`` and the informer ``state`` right after it, both ways: the state
    answer is how a steered reference learns what the adapter did during the advance
    (which request it woke up to make), so one cannot go without the other."""
    links: dict[int, int] = {}
    for n in range(1, len(steps)):
        request = steps[n].request
        if (
            steps[n - 1].request.get("op") == "advance"
            and request.get("op") == "call"
            and request.get("method") == "state"
        ):
            links[n - 1], links[n] = n, n - 1
    return links


def _without(best: Failure, drop: set[int]) -> list[dict[str, Any]]:
    """The requests of ``best`` without the steps ``drop`` and the steps that cannot go
    without them (the dones of dropped gets, an advance and its state)."""
    links = _consumers(best.steps)
    pairs = _observed_advances(best.steps)
    gone = drop | {links[n] for n in drop if n in links} | {pairs[n] for n in drop if n in pairs}
    return [s.request for n, s in enumerate(best.steps) if n not in gone]


def _same_finding(found: Failure | None, best: Failure) -> bool:
    """``found`` is the finding ``best`` is: the same :attr:`~Failure.family`
    (component, and invariant ID or kind of difference). The step where it shows may
    move (an edit may show the same broken invariant one step earlier), but a
    rewrite that turns, say, an INF-3 into a REF-3 tells another story: not kept. A
    FIFO difference without a consequence may become one with (the shorter trace no
    longer re-adds what the difference lost, say): that is the same difference, told
    with what it leads to."""
    if found is None:
        return False
    classified = best.unclassified and found.kind == "disagreement"
    return found.family == best.family or (classified and found.component == best.component)


#: Round clock steps an informer trace's advances are tried with (the generator's fixed
#: amounts: past client-go's first backoff, past its 30 s cap, past a minute).
ROUND_SECONDS = (2.0, 31.0, 65.0)


def round_advances(best: Failure, still_fails: Replay) -> Failure:
    """Each ``advance`` of an informer trace rounded up to the next of ``ROUND_SECONDS``
    where the replay still fails and is no longer. An advance to "the reference's next
    deadline" lands on a jittered backoff to the nanosecond, which the steps before it
    decided (each backoff draws its jitter); a round amount that covers any first
    backoff lets the shrinker drop those steps."""
    if best.component != "informer":
        return best
    for n, step in enumerate(best.steps):
        seconds = step.request.get("seconds")
        if step.request.get("op") != "advance" or not isinstance(seconds, (int, float)):
            continue
        rounded = next((r for r in ROUND_SECONDS if r >= seconds), None)
        if rounded is None or rounded == seconds:
            continue
        requests = [s.request for s in best.steps]
        requests[n] = {**step.request, "seconds": rounded}
        found = still_fails(requests)
        if found is not None and _same_finding(found, best) and len(found.steps) <= len(best.steps):
            best = found
    return best


def _waiting(step: Step) -> dict[str, Any] | None:
    """The ``waiting`` an informer answer reports (None for other answers)."""
    result = (step.adapter or {}).get("result")
    waiting = result.get("waiting") if isinstance(result, dict) else None
    return waiting if isinstance(waiting, dict) else None


def _informer_call(request: dict[str, Any], method: str) -> bool:
    return request.get("op") == "call" and request.get("method") == method


def _plain_lists(steps: Sequence[Step]) -> list[dict[str, Any]] | None:
    """The requests of an informer trace created with ``watch_list`` rewritten for plain
    lists, or None if the trace is not one or has a stream this cannot rewrite.

    A watch-list informer asks for a watch with ``send_initial_events`` where a plain one
    asks for a list; the answer ``watch_open``, ``ADDED`` per object, then the
    initial-events-end ``BOOKMARK`` at rv R is what ``list_reply(objects, R)`` says to a
    plain informer, which then asks to watch from R: ``watch_open``. Everything else is
    kept. A stream that ends, fails or is interleaved with other requests before its
    end bookmark is not rewritten (None): the two modes differ there (a failed watch-list
    falls back to a list)."""
    create = steps[0].request if steps else {}
    options = create.get("options")
    if (
        create.get("op") != "create"
        or create.get("component") != "informer"
        or not isinstance(options, dict)
        or options.get("watch_list") is not True
    ):
        return None
    out: list[dict[str, Any]] = [{**create, "options": {**options, "watch_list": False}}]
    waiting: dict[str, Any] | None = None
    n = 1
    while n < len(steps):
        request = steps[n].request
        if not (
            _informer_call(request, "watch_open")
            and waiting is not None
            and waiting.get("send_initial_events") is True
            and waiting.get("op") == "watch"
        ):
            out.append(request)
            waiting = _waiting(steps[n]) or waiting
            n += 1
            continue
        objects: list[Any] = []
        end = n + 1
        while True:
            if end >= len(steps) or not _informer_call(steps[end].request, "watch_event"):
                return None
            args = steps[end].request.get("args") or {}
            if args.get("type") == "ADDED":
                objects.append(args.get("object"))
            elif args.get("type") == "BOOKMARK" and args.get("initial_events_end") is True:
                break
            else:
                return None
            end += 1
        rv = (args.get("object") or {}).get("rv")
        call = {"op": "call", "instance": request.get("instance")}
        out.append({**call, "method": "list_reply", "args": {"objects": objects, "rv": rv}})
        out.append({**call, "method": "watch_open", "args": {}})
        waiting = _waiting(steps[end]) or waiting
        n = end + 1
    return out


def as_plain_lists(best: Failure, still_fails: Replay) -> Failure | None:
    """``best`` rewritten from watch-list streams to plain lists (:func:`_plain_lists`),
    if that still fails and is no longer: the plain form then shrinks further (a watch
    ending cleanly, say, merges with its ``watch_open`` into one ``watch_error``)."""
    requests = _plain_lists(best.steps)
    if requests is None:
        return None
    found = still_fails(requests)
    if found is not None and _same_finding(found, best) and len(found.steps) <= len(best.steps):
        return found
    return None


def _object_key(obj: dict[str, Any]) -> str:
    namespace = obj.get("namespace") or ""
    return f"{namespace}/{obj.get('name')}" if namespace else str(obj.get("name"))


def _folded(requests: list[dict[str, Any]], n: int) -> list[dict[str, Any]] | None:
    """``requests`` with the watch after the ``list_reply`` at ``n`` folded into that list
    (see :func:`fold_watch_events`), or None if there is no such watch."""
    reply = requests[n]
    args = reply.get("args") or {}
    if not _informer_call(reply, "list_reply") or not isinstance(args.get("objects"), list):
        return None
    if n + 2 >= len(requests) or not _informer_call(requests[n + 1], "watch_open"):
        return None
    objects = {_object_key(o): o for o in args["objects"] if isinstance(o, dict)}
    rv = args.get("rv")
    end = n + 2
    while end < len(requests) and _informer_call(requests[end], "watch_event"):
        event = requests[end].get("args") or {}
        obj = event.get("object")
        if event.get("initial_events_end") or not isinstance(obj, dict):
            return None
        if event.get("type") in ("ADDED", "MODIFIED"):
            objects[_object_key(obj)] = obj
        elif event.get("type") == "DELETED":
            objects.pop(_object_key(obj), None)
        elif event.get("type") != "BOOKMARK":
            return None
        rv = obj.get("rv")
        end += 1
    if end == n + 2:
        return None
    listed = {**reply, "args": {**args, "objects": [objects[k] for k in sorted(objects)], "rv": rv}}
    after = requests[end] if end < len(requests) else {}
    if _informer_call(after, "watch_end") and (after.get("args") or {}).get("how") in (
        "expired",
        "internal",
    ):
        how = after["args"]["how"]
        failed = {**requests[n + 1], "method": "watch_error", "args": {"reason": how}}
        return [*requests[:n], listed, failed, *requests[end + 1 :]]
    return [*requests[:n], listed, requests[n + 1], *requests[end:]]


def fold_watch_events(best: Failure, still_fails: Replay) -> Failure | None:
    """The first shorter failure with a watch folded into the list before it: a
    ``list_reply``, the ``watch_open`` after it and the events on that watch tell the
    informer what a ``list_reply`` of the objects those events leave, at the last
    event's resourceVersion, tells it; a ``watch_end`` with a 410 or 500 right after the
    events becomes a failed watch request (``watch_error``), which sends the informer
    the same way. The object then reaches the informer by a list rather than an event,
    which is why the replay decides."""
    requests = [s.request for s in best.steps]
    for n in range(len(requests) - 1, 0, -1):
        folded = _folded(requests, n)
        if folded is None:
            continue
        found = still_fails(folded)
        if found is not None and _same_finding(found, best) and len(found.steps) < len(best.steps):
            return found
    return None


def _keys_in(value: Any) -> set[str]:
    """The keys of every object (a dict with a name and an rv) inside ``value``."""
    if isinstance(value, list):
        return set().union(*(_keys_in(v) for v in value)) if value else set()
    if not isinstance(value, dict):
        return set()
    if isinstance(value.get("name"), str) and "rv" in value:
        return {_object_key(value)}
    return set().union(*(_keys_in(v) for v in value.values())) if value else set()


#: Request arguments that carry one object, and those that carry a list of them.
OBJECT_ARGS, OBJECT_LIST_ARGS = ("obj", "object"), ("objs", "objects")


def _forgotten(steps: Sequence[Step], key: str) -> list[dict[str, Any]]:
    """The requests of ``steps`` as if the object ``key`` had never been there: the
    steps that carry it go, it leaves every list, and a pop that handed out only it
    goes too."""
    out: list[dict[str, Any]] = []
    for n, step in enumerate(steps):
        request = step.request
        args = request.get("args")
        if n == 0 or request.get("op") != "call" or not isinstance(args, dict):
            out.append(request)
            continue
        if any(isinstance(args.get(a), dict) and _keys_in(args[a]) == {key} for a in OBJECT_ARGS):
            continue
        if str(request.get("method", "")).startswith("pop"):
            popped = _keys_in((step.adapter or {}).get("result"))
            if popped == {key}:
                continue
        lists = {
            a: [o for o in args[a] if _keys_in(o) != {key}]
            for a in OBJECT_LIST_ARGS
            if isinstance(args.get(a), list)
        }
        out.append({**request, "args": {**args, **lists}} if lists else request)
    return out


def drop_object(best: Failure, still_fails: Replay) -> Failure | None:
    """The first shorter failure with one object forgotten (:func:`_forgotten`), or
    None. An object that only pads a list costs the steps that consume it (its pop, the
    store write that records it), and no single or pair removal takes the list entry
    and those steps together."""
    keys = sorted(set().union(*(_keys_in(s.request.get("args")) for s in best.steps[1:])))
    for key in keys:
        requests = _forgotten(best.steps, key)
        if len(requests) == len(best.steps) and requests == [s.request for s in best.steps]:
            continue
        found = still_fails(requests)
        if found is not None and _same_finding(found, best) and len(found.steps) < len(best.steps):
            return found
    return None


def _answers(step: Step) -> tuple[Any, Any]:
    """Both sides' answers to a step, without the request ids."""

    def strip(response: dict[str, Any] | None) -> Any:
        return None if response is None else {k: v for k, v in response.items() if k != "id"}

    return strip(step.reference), strip(step.adapter)


def drop_unneeded_state(best: Failure, still_fails: Replay) -> Failure | None:
    """The first failure with one ``state`` that follows an ``advance`` removed, alone,
    where that state was a pure observation: the replay fails with the same message and
    every other step gets the very same answers from both sides as with it. A state the
    steered reference needed (to learn what the adapter woke up to do) changes a later
    answer of the reference, so it stays (see :func:`_observed_advances`)."""
    pairs = _observed_advances(best.steps)
    states = sorted(n for n in pairs if pairs[n] < n)
    for n in reversed(states):
        requests = [s.request for k, s in enumerate(best.steps) if k != n]
        found = still_fails(requests)
        if (
            found is None
            or found.kind != best.kind
            or found.message != best.message
            or len(found.steps) != len(best.steps) - 1
        ):
            continue
        kept = [s for k, s in enumerate(best.steps) if k != n]
        if all(_answers(a) == _answers(b) for a, b in zip(kept, found.steps, strict=True)):
            return found
    return None


def drop_pair(best: Failure, still_fails: Replay) -> Failure | None:
    """The first shorter failure with two steps ``i < j`` removed (later pairs first, as
    consumers tend to sit near the failing step), or None."""
    for j in range(len(best.steps) - 1, 1, -1):
        for i in range(j - 1, 0, -1):
            found = still_fails(_without(best, {i, j}))
            if found is not None and len(found.steps) < len(best.steps):
                return found
    return None


def drop_chunks(best: Failure, still_fails: Replay) -> Failure:
    """Remove contiguous runs of steps, halving the run length down to single steps:
    later runs first, step 0 (``create``) kept, a size tried again after a sweep that
    removed something (see :func:`refimpl.shrinking.drop_runs`). A run takes with it
    the steps that cannot go without it (:func:`_without`)."""
    current = best

    def attempt(start: int, stop: int) -> bool:
        nonlocal current
        found = still_fails(_without(current, set(range(start, stop))))
        if found is not None and len(found.steps) < len(current.steps):
            current = found
            return True
        return False

    drop_runs(lambda: len(current.steps), attempt, keep=1, backward=True, repeat=True)
    return current


def simplify_arguments(best: Failure, still_fails: Replay) -> Failure:
    """Each step's arguments made simpler (:func:`_simpler`: fewer list elements, the
    first item, a plain object) where the replay still fails and is no longer."""
    n = 0
    while n < len(best.steps):
        for variant in _simpler(best.steps[n].request):
            requests = [s.request for s in best.steps]
            if n >= len(requests):
                break
            found = still_fails([*requests[:n], variant, *requests[n + 1 :]])
            if found is not None and len(found.steps) <= len(requests):
                best = found
        n += 1
    return best


#: Run once each, in this order, before the rounds. Rounding (informer traces only) comes
#: after a first drop_chunks, so a clock step no longer depends on a detour before it.
OPENING: tuple[Polish, ...] = (drop_chunks, round_advances)
#: One round: these are tried in this order (the cheap rewrites first) and the first that
#: returns a shorter failure ends the round; drop_chunks then runs on that failure and
#: the next round starts. The rounds end when none shortens or the budget is spent.
ROUND: tuple[Shorten, ...] = (
    as_plain_lists,
    fold_watch_events,
    drop_object,
    drop_pair,
    merge_adjacent,
    drop_unneeded_state,
)
#: What runs after a round's pass shortened the trace.
AFTER_ROUND: Polish = drop_chunks
#: Run once each after the rounds.
CLOSING: tuple[Polish, ...] = (simplify_arguments,)


def _replay_test(ctx: RunContext, failure: Failure, deadline: float) -> Replay:
    """The replay test for ``failure``: a replay counts if it is the same finding
    (:func:`_same_finding`) but not one the run has already reported (its signature
    in ``ctx.found``) and, if ``failure`` has an end-to-end consequence, has one too.
    With realistic inputs and a realistic ``failure``, a replay that no honest server
    would send does not count."""
    # Keep a realistic trace realistic; one that never was (a replayed unusual trace)
    # is shrunk as before.
    realistic_only = ctx.config.inputs == "realistic" and (
        realistic(failure.component, [step.request for step in failure.steps]) is None
    )

    def still_fails(requests: list[dict[str, Any]]) -> Failure | None:
        if time.monotonic() > deadline:
            return None
        if realistic_only and realistic(failure.component, requests) is not None:
            return None  # a realistic finding stays one (search/history.py)
        found = try_trace(ctx, failure.component, requests)
        if found is not None and failure.consequence and not found.consequence:
            return None  # the end-to-end consequence is part of how it fails
        if found is not None and found.signature in ctx.found:
            return None  # another finding of the run: each is shrunk on its own
        if found is not None and _same_finding(found, failure):
            found.found_after = failure.found_after
            found.example = failure.example
            return found
        return None

    return still_fails


def _first_shorter(best: Failure, still_fails: Replay) -> Failure | None:
    """The result of the first pass of :data:`ROUND` that finds a shorter failure."""
    for shorten in ROUND:
        found = shorten(best, still_fails)
        if found is not None:
            return found
    return None


def minimize(ctx: RunContext, failure: Failure) -> Failure:
    """Polish Hypothesis' result within the shrink budget, keeping every change whose
    replay still fails the same way (see :func:`_replay_test`). The passes, in the
    order they run:

    - :data:`OPENING`, once each:

      1. :func:`drop_chunks`: drop contiguous runs of steps (halves, quarters, ...
         single steps);
      2. :func:`round_advances`: an informer's clock steps rounded up to whole
         amounts, so a step no longer depends on a detour before it;

    - then rounds of :data:`ROUND`, the first pass that shortens the trace ending the
      round, after which :func:`drop_chunks` runs again:

      3. :func:`as_plain_lists`: an informer trace that streams its lists
         (``watch_list``) tried with plain lists;
      4. :func:`fold_watch_events`: an informer's watch events folded into the list
         before them (and a ``watch_end`` with a 410 or 500 into a failed watch);
      5. :func:`drop_object`: one object forgotten, with every step that carries it,
         its entries in lists and the pops that handed out only it;
      6. :func:`drop_pair`: two steps ``i < j`` dropped together: a step and a later one
         that consumes it (an ``add`` and its ``get_nowait``) are often needed only by
         each other, so neither can go alone;
      7. :func:`merge_adjacent`: two adjacent steps merged into one request doing
         their work (``watch_open`` then ``watch_end`` become one ``watch_error``);
      8. :func:`drop_unneeded_state`: the ``state`` after an ``advance`` dropped alone
         where the replay shows it was a pure observation;

    - :data:`CLOSING`, once: 9. :func:`simplify_arguments` (fewer list elements, the
      first item/name).

    Every pass keeps only a replay with the same finding (see :func:`_same_finding`)
    that is no other finding of the run, so each is shrunk on its own. Passes 1
    and 6 keep an ``advance`` and the ``state`` right after it together
    (:func:`_observed_advances`), and a ``get_nowait`` that handed out an item with the
    ``done`` that gave it back (:func:`_consumers`); only pass 8 separates an advance
    from its state. When time allows the result is 1-minimal and pair-minimal in that
    sense: removing any one or any two operations makes the failure disappear. Step 0
    (``create``) is always kept. A hung adapter's failure is returned as it is.
    """
    if isinstance(failure.adapter_error, AdapterHung):
        return failure
    deadline = time.monotonic() + max(ctx.config.shrink_budget / 2, 2.0)
    still_fails = _replay_test(ctx, failure, deadline)
    best = failure
    for polish in OPENING:
        best = polish(best, still_fails)
    while time.monotonic() < deadline:
        shorter = _first_shorter(best, still_fails)
        if shorter is None:
            break
        best = AFTER_ROUND(shorter, still_fails)
    for polish in CLOSING:
        best = polish(best, still_fails)
    return best
