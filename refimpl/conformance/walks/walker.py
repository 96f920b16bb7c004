"""The walker: one run of a model's graph against an adapter, step by step.

Owns :class:`Walker`: the belief (the states the adapter may be in, with the steps
not yet credited), the edges taken, the requests sent for a step and the checks of
its answers, and the order of the walk. A *timed* model (the work queue's delayed
adds) is sent as the planner (:mod:`refimpl.conformance.walks.planner`) planned it,
because an ``add_after``'s delay must make it fall due at the walk's later ``Ready``.
Other models follow the plan, where their mapping's ``planned`` says so, until an
open order (below) goes another way; the walk then rejoins the plan at the nearest
state of the rest of its planned walk, and at the end a sweep takes what that left
out: a breadth-first search for the nearest untaken edge, again and again, resetting
when none is reachable, and seeded random near-shortest paths to untaken steps when
the adapter's history keeps it from them.

Where the spec leaves an order open (the order of a relist's tombstones or a resync's
Sync deltas follows Go's map order), one request has several successor states: the
walker keeps every successor the answers allow and lets later answers decide. Edges
taken while the state was not yet known are credited once it is; until then they count
as taken "with the order open" in the report. A deviation found after a long walk is
replaced by a shorter spec path that fails too (:meth:`Walker.shorten`).
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from refimpl.conformance.process import AdapterProcess
from refimpl.conformance.walks.drivable import DrivableGraph, TakenEdges
from refimpl.conformance.walks.planner import plan_walks
from refimpl.conformance.walks.report import (
    Coverage,
    Deviation,
    Logged,
    SpecRun,
    error_kind,
    shown,
)
from refimpl.conformance.walks.spec_mapping import (
    HARNESS_ONLY,
    Check,
    DrivenEdge,
    SpecMapping,
    request_key,
)
from refimpl.tla.values import Value

__all__ = ["STALL", "SWEEP_TRIES", "UNSURE_STEPS", "WalkAborted", "Walker"]


class WalkAborted(Exception):
    """Ends a run: a deviation, or a refusal, is recorded in its :class:`SpecRun`."""


#: Attempts in a row at the nearest untaken edge that take none before the sweep
#: changes the walk's history (:meth:`Walker.sweep`).
STALL = 5
#: Changes of history the sweep tries before it reports what is left as not covered.
SWEEP_TRIES = 1000
#: Steps the sweep takes, not counted as attempts, while the state is not yet known.
UNSURE_STEPS = 10


class Walker:
    """One run: the belief (possible current states, with the steps not yet credited),
    the edges taken, and the request log since the last reset."""

    def __init__(
        self,
        mapping: SpecMapping,
        graph: DrivableGraph,
        adapter: AdapterProcess,
        run: SpecRun,
        progress: Callable[[Coverage], None] | None,
        observe: frozenset[str] = frozenset(),
    ) -> None:
        self.mapping = mapping
        #: the checks a call may carry instead of sending them (see carried)
        self.observe = observe
        self.graph = graph
        self.adapter = adapter
        self.run_ = run
        self.cov = run.coverage
        self.progress = progress
        self.taken = TakenEdges(graph)
        self.visited: set[int] = set()
        #: probe request of each step (untimed mappings: it depends on the step only)
        self.probes: dict[DrivenEdge, str] = {}
        #: requests each step sends (see cost), its follow-up requests and its checks
        self.costs: dict[DrivenEdge, int] = {}
        self.follows: dict[DrivenEdge, list[dict[str, Any]]] = {}
        self.checks_after: dict[DrivenEdge, list[Check]] = {}
        self.belief: dict[int, tuple[DrivenEdge, ...]] = {}
        self.path: list[str] = []
        self.walked: list[DrivenEdge] = []
        self.log: list[Logged] = []
        self.last_progress = 0.0
        #: the sweep's open steps (see aim), and distances to the states they leave
        self.aims: list[DrivenEdge] | None = None
        self.distances: dict[int, dict[int, int]] = {}

    def run(self) -> None:
        try:
            if self.mapping.timed:
                for walk in self.plan():
                    self.restart()
                    plans = self.mapping.schedule(self.graph.graph, walk)
                    for i, (step, plan) in enumerate(zip(walk, plans, strict=True)):
                        self.step([step], plan, walk[i + 1] if i + 1 < len(walk) else None)
            else:
                self.restart()
                if self.mapping.planned:
                    self.follow_plan(self.plan())
                self.sweep()
        except WalkAborted:
            pass
        # Coverage is the walk's; replaying a shorter path afterwards adds nothing.
        self.cov.covered = len(self.taken.edges)
        self.cov.states_visited = self.states_visited()
        steps, resets = self.cov.steps, self.cov.resets
        with contextlib.suppress(WalkAborted):
            self.shorten()
        self.cov.steps, self.cov.resets = steps, resets

    def cost(self, step: DrivenEdge) -> int:
        """The requests a step sends (its probe unless the harness takes it alone,
        what comes before and after it, its checks)."""
        sent = self.costs.get(step)
        if sent is None:
            g = self.graph.graph
            probe = self.mapping.probe(g, step, 1)
            sent = 0 if probe.get("op") == HARNESS_ONLY else 1
            follows = self.follow(step)
            sent += len(self.mapping.prepare(g, step)) + len(follows)
            carrier = follows[-1] if follows else probe
            sent += sum(1 for c in self.checks(step) if not self.carried(carrier, c.request))
            self.costs[step] = sent
        return sent

    def plan(self) -> list[list[DrivenEdge]]:
        """Walks from the initial state that take every drivable edge (plan_walks)."""
        reset = 2 + len(self.mapping.setup(self.graph.graph))
        return plan_walks(self.graph, self.cost, reset)

    def follow_plan(self, walks: list[list[DrivenEdge]]) -> None:
        """Take the planned walks (after the first, each after a reset). Where an open
        order goes another way than planned, the walk goes on from the nearest state
        on the rest of the planned walk; the edges that skips are left to the caller."""
        for i, walk in enumerate(walks):
            if i:
                self.restart()
            k = 0
            rejoined = 0
            while k < len(walk):
                step, here = walk[k], self.current()
                if here == step.source:
                    self.step([step], None)
                    k += 1
                    continue
                if here is None:
                    # Not yet sure which state: the planned request, if every
                    # believed state allows it, else the nearest untaken edge.
                    group = self.group(step)
                    if group is not None:
                        self.step(group, None)
                        k += 1
                    elif not self.advance():
                        break
                    continue
                rest = {s.source for s in walk[k:]}
                path = self.graph.search(here, rest.__contains__)
                rejoined += 1
                if path is None or rejoined > len(walk):
                    break
                for back in path:
                    if self.current() != back.source:
                        break
                    self.step([back], None)
                k = next((j for j in range(k, len(walk)) if walk[j].source == self.current()), k)

    def sweep(self, stall: int = STALL, tries: int | None = None) -> None:
        """What open orders kept from the plan: the nearest untaken edge, again and
        again, each time from where the walk is (so from another history, which is
        what an adapter's order may follow). After ``stall`` attempts in a row that
        take no new edge (the adapter keeps taking the same order there), a reset and
        a seeded random path (seed: the try's number), up to 3 steps longer than a
        shortest one, to the state an untaken edge leaves change the history; after
        ``tries`` such paths the edges left are reported as not covered."""
        tries = SWEEP_TRIES if tries is None else tries
        last, futile, tried, unsure = len(self.taken.edges), 0, 0, 0
        while not self.taken.done:
            if not self.advance():
                if len(self.belief) == 1 and self.current() == self.graph.init:
                    break
                self.restart()
            if len(self.taken.edges) > last:
                last, futile = len(self.taken.edges), 0
                continue
            # Steps waiting for the state to be known are credited once it is: let the
            # walk go on (a few steps) until an answer tells.
            unsure = unsure + 1 if any(self.belief.values()) else 0
            if 0 < unsure <= UNSURE_STEPS:
                continue
            futile += 1
            if futile > stall:
                tried += 1
                if tried > tries:
                    break
                self.restart()
                self.aim(random.Random(tried), tried % 4)
                futile = stall  # one attempt from there, then the next aim

    def aim(self, rng: random.Random, slack: int) -> None:
        """From the initial state, a random path at most ``slack`` steps longer than a
        shortest one to the source of a random untaken step: the orders an adapter
        takes may follow the order in which keys came, which such paths vary."""
        if self.aims is None:
            self.aims = sorted(
                (s for s in self.graph.steps if self.taken.is_open(s)),
                key=lambda s: (s.source, s.target, s.covers),
            )
        self.aims = [s for s in self.aims if self.taken.is_open(s)]
        here = self.current()
        if not self.aims or here is None:
            return
        goal = rng.choice(self.aims).source
        dist = self.distances.get(goal)
        if dist is None:
            dist = self.distances[goal] = self.graph.distances_to(goal)
        left = dist.get(here, 0) + slack
        while (here := self.current()) is not None and here != goal and left > 0:
            ways = [s for s in self.graph.out[here] if dist.get(s.target, left) < left]
            if not ways:
                return
            self.step([rng.choice(ways)], None)
            left -= 1

    def states_visited(self) -> int:
        """States visited, or equal to one visited but for the mapping's hidden
        variables (the adapter cannot tell them apart: see shared_credit)."""
        classes = self.graph.classes
        seen = {classes[node % len(classes)] for node in self.visited}
        return sum(1 for c in classes if c in seen)

    def current(self) -> int | None:
        return next(iter(self.belief)) if len(self.belief) == 1 else None

    def restart(self) -> None:
        if self.belief:
            self.cov.resets += 1
            self.expect_null(None, {"op": "reset"})
        self.log.clear()
        self.path.clear()
        self.walked.clear()
        create = {
            "op": "create",
            "instance": "x",
            "component": self.mapping.component,
            "options": dict(self.mapping.options),
        }
        self.expect_null(None, create)
        for check in self.mapping.setup(self.graph.graph):
            self.expect_at_init(check)
        self.belief = {self.graph.init: ()}
        self.visited.add(self.graph.init)

    def expect_at_init(self, check: Check) -> None:
        """A setup request (after ``create``), checked against the initial state."""
        state = self.graph.graph.states[self.graph.init]
        answer = self.send(check.request)
        if not check.ok(state, answer):
            self.run_.deviation = Deviation(
                ("(setup, before the first spec action)",),
                check.request,
                (check.expected(state),),
                answer,
                tuple(self.log),
            )
            raise WalkAborted

    def advance(self) -> bool:
        """Take the next planned step; False when nothing untaken is reachable."""
        here = self.current()
        if here is not None:
            path = self.graph.path_to_untaken(here, self.taken)
            if path is None:
                return False
            for step in path:
                if self.current() != step.source:
                    return True  # an open order went another way: plan again
                self.step([step], None)
            return True
        # Several states are possible: take a step every one of them allows with the
        # same request. While steps taken are waiting for the state to be known (their
        # edges are credited only then), one whose answer tells the states apart comes
        # first (a pop after a relist's open order); else the first toward untaken edges.
        first = min(self.belief)
        path = self.graph.path_to_untaken(first, self.taken)
        options = ([path[0]] if path else []) + self.graph.out[first]
        groups = [g for g in map(self.group, options) if g is not None]
        if any(self.belief.values()):
            groups.sort(key=lambda g: not self.tells_apart(g))
        if groups:
            self.step(groups[0], None)
            return True
        return False

    def tells_apart(self, group: list[DrivenEdge]) -> bool:
        """Whether the answers the steps of ``group`` call for differ between them."""
        g = self.graph.graph
        answers = {
            json.dumps(self.mapping.expect(g, c), sort_keys=True, default=str) for c in group
        }
        return len(answers) > 1

    def group(self, chosen: DrivenEdge) -> list[DrivenEdge] | None:
        """The steps with ``chosen``'s request from every believed state, if all have one."""
        probe = self.probe_key(chosen)
        group: list[DrivenEdge] = []
        for state in self.belief:
            same = [s for s in self.graph.out[state] if self.probe_key(s) == probe]
            if not same:
                return None
            group.extend(same)
        return group

    def step(self, candidates: list[DrivenEdge], plan: Any, then: DrivenEdge | None = None) -> None:
        """Send one step's requests; keep the candidates every answer agrees with.
        ``then``: the step the walk takes next, if planned (see implied)."""
        request = self.mapping.probe(self.graph.graph, candidates[0], plan)
        # The candidates the adapter could follow: every successor of every believed
        # state with the same request (an open order has several).
        if not self.mapping.timed and len(candidates) == 1:
            key = self.probe_key(candidates[0])
            candidates = [
                s
                for state in self.belief
                for s in self.graph.out[state]
                if self.probe_key(s) == key
            ]
        kept, carrier, observed = self.send_step(request, candidates)
        kept = self.check_target(kept, carrier, observed, then)
        self.path.append(
            kept[0].label if len({c.label for c in kept}) == 1 else f"{kept[0].action} (open order)"
        )
        self.walked.append(kept[0])
        self.believe(kept)
        self.cov.steps += 1
        self.report_progress()

    def send_step(
        self, request: dict[str, Any], candidates: list[DrivenEdge]
    ) -> tuple[list[DrivenEdge], dict[str, Any], dict[str, Any]]:
        """Send a step's requests: those before the probe, the probe (``request``), its
        follow-ups. The candidates the probe's answer allows, the call that carried
        the checks' observations, and what it observed."""
        g = self.graph.graph
        for before in self.mapping.prepare(g, candidates[0]):
            self.expect_null(candidates[0], before)
        # The checks ride on the step's last call where the adapter allows it: the
        # probe when no candidate has a follow-up request.
        observed: dict[str, Any] = {}
        carrier = request
        if not any(self.follow(c) for c in candidates):
            carrier = self.observing(request, [ch for c in candidates for ch in self.checks(c)])
        # A step only the harness's side takes (its simulated server) sends nothing.
        answer = None
        if request.get("op") != HARNESS_ONLY:
            answer, observed = self.send_observing(carrier)
        kept = [c for c in candidates if self.mapping.accepts(g, c, answer)]
        if not kept:
            self.deviate(
                candidates[0], request, [self.mapping.expect(g, c) for c in candidates], answer
            )
        follows = {tuple(request_key(r) for r in self.follow(c)) for c in kept}
        if len(follows) > 1:
            self.run_.refused = (
                "inconclusive: the answers allow several states that need different "
                f"requests next (after {candidates[0].label})"
            )
            raise WalkAborted
        after = self.follow(kept[0])
        checks = self.checks(kept[0])
        for i, follow in enumerate(after):
            if i == len(after) - 1:
                carrier = self.observing(follow, checks)
                follow_answer, observed = self.send_observing(carrier)
                if follow_answer is not None:
                    self.deviate(kept[0], follow, [None], follow_answer)
            else:
                self.expect_null(kept[0], follow)
        return kept, carrier, observed

    def check_target(
        self,
        kept: list[DrivenEdge],
        carrier: dict[str, Any],
        observed: dict[str, Any],
        then: DrivenEdge | None,
    ) -> list[DrivenEdge]:
        """Check what the step's target makes observable: each check's answer from what
        ``carrier`` observed, else sent alone (unless the next step's checks will show
        it). The candidates every answer allows."""
        for check in self.checks(kept[0]):
            name = check.request["method"] if self.carried(carrier, check.request) else None
            if name is not None and name in observed:
                answer, asked = observed[name], carrier
            elif then is not None and len(kept) == 1 and self.implied(check, kept[0], then):
                continue
            else:
                answer, asked = self.send(check.request), check.request
            allowed = [c for c in kept if check.ok(self.state(c.target), answer)]
            if not allowed:
                expected = [check.expected(self.state(c.target)) for c in kept]
                if asked is carrier:
                    assert name is not None
                    expected = [{name: e} for e in expected]
                    answer = {name: answer}
                self.deviate(kept[0], asked, expected, answer)
            kept = allowed
        return kept

    def believe(self, kept: list[DrivenEdge]) -> None:
        """The states the adapter may be in after one of ``kept``; once only one is
        left, the steps that led there are credited."""
        belief: dict[int, tuple[DrivenEdge, ...]] = {}
        for c in kept:
            for state, pending in self.belief.items():
                if c.source == state:
                    belief.setdefault(c.target, (*pending, c))
        if len(belief) > 1 or len(kept) > 1:
            self.cov.open_order_steps += 1
        self.belief = belief
        if len(belief) == 1:
            ((state, pending),) = belief.items()
            for taken in pending:
                self.taken.update(taken.covers)
                self.visited.add(taken.target)
            self.belief = {state: ()}

    def implied(self, check: Check, step: DrivenEdge, then: DrivenEdge) -> bool:
        """Whether the next step's checks will show this check's answer: the check
        observes a fact that only ever changes away from ``check.settled`` (a drain
        that has returned stays returned), this step's target calls for that value,
        and the next step sends the same check and calls for it again. An adapter
        answering it then answered it now (else it changed back)."""
        if check.settled is None:
            return False
        key = request_key(check.request)
        if check.expected(self.state(step.target)) != check.settled:
            return False
        return any(
            request_key(c.request) == key and c.expected(self.state(then.target)) == check.settled
            for c in self.checks(then)
        )

    def state(self, node: int) -> Mapping[str, Value]:
        """The spec state of a walk's node (see DrivableGraph)."""
        states = self.graph.graph.states
        return states[node % len(states)]

    def probe_key(self, step: DrivenEdge) -> str:
        key = self.probes.get(step)
        if key is None:
            key = self.probes[step] = request_key(self.mapping.probe(self.graph.graph, step, None))
        return key

    def follow(self, step: DrivenEdge) -> list[dict[str, Any]]:
        """The mapping's follow-up requests of ``step`` (computed once per step)."""
        found = self.follows.get(step)
        if found is None:
            found = self.follows[step] = self.mapping.follow(self.graph.graph, step)
        return found

    def checks(self, step: DrivenEdge) -> list[Check]:
        """The mapping's checks after ``step`` (computed once per step)."""
        found = self.checks_after.get(step)
        if found is None:
            found = self.checks_after[step] = self.mapping.checks(self.graph.graph, step)
        return found

    def carried(self, carrier: Mapping[str, Any], check: Mapping[str, Any]) -> bool:
        """Whether ``check`` (a request) can ride on ``carrier`` as an observation: a
        call with no arguments the adapter lets calls observe, on the same instance."""
        return (
            carrier.get("op") == "call"
            and check.get("op") == "call"
            and not check.get("args")
            and check.get("method") in self.observe
            and check.get("instance") == carrier.get("instance")
        )

    def observing(self, request: dict[str, Any], checks: Sequence[Check]) -> dict[str, Any]:
        """``request`` carrying every check it can (each method once, in order)."""
        names: list[str] = []
        for check in checks:
            method = str(check.request.get("method"))
            if self.carried(request, check.request) and method not in names:
                names.append(method)
        return {**request, "observe": names} if names else request

    def send_observing(self, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Send one request; its result (or ``{"error": {"kind": K}}``) and what it
        observed."""
        response = self.adapter.request(request)
        if "error" in response:
            answer: Any = {"error": {"kind": response["error"].get("kind")}}
            observed: dict[str, Any] = {}
        else:
            answer = response["result"]
            names = request.get("observe", [])
            raw = response.get("observed", {}) if names else {}
            if not isinstance(raw, dict) or set(raw) != set(names):
                self.run_.refused = (
                    f"the adapter answered {shown(response)} to {shown(request)}: "
                    "'observed' must hold every method the request names"
                )
                raise WalkAborted
            observed = {k: error_kind(v) for k, v in raw.items()}
            self.cov.observed += len(observed)
        self.log.append((request, {"result": answer, "observed": observed} if observed else answer))
        return answer, observed

    def send(self, request: dict[str, Any]) -> Any:
        """Send one request; its result, or ``{"error": {"kind": K}}``."""
        response = self.adapter.request(request)
        if "error" in response:
            answer: Any = {"error": {"kind": response["error"].get("kind")}}
        else:
            answer = response["result"]
        self.log.append((request, answer))
        return answer

    def expect_null(self, step: DrivenEdge | None, request: dict[str, Any]) -> None:
        answer = self.send(request)
        if answer is not None:
            if step is None:
                self.run_.refused = f"the adapter answered {shown(answer)} to {shown(request)}"
                raise WalkAborted
            self.deviate(step, request, [None], answer)

    def deviate(
        self, step: DrivenEdge, request: dict[str, Any], expected: list[Any], actual: Any
    ) -> None:
        unique: list[Any] = []
        for e in expected:
            if e not in unique:
                unique.append(e)
        self.run_.deviation = Deviation(
            (*self.path, step.label),
            request,
            tuple(unique),
            actual,
            tuple(self.log),
            (*self.walked, step),
        )
        raise WalkAborted

    def shorten(self, tries: int = 20, others: int = 30) -> None:
        """Replace a deviation found after a long walk by a shorter spec path that
        fails too on a reset adapter. Shortest first, of: the ``tries`` shortest of a
        shortest path to a state on the walk followed by the rest of the walk (the
        last of them is a shortest path to the failing step itself), and the
        ``others`` shortest of a shortest path to another step of the failing step's
        action and arguments, then that step (the order of the walks decides which
        such step a walk meets first). If none fails: a binary search for the latest
        state on the walk from which a shortest path there and the rest of the walk
        fail (a failure that needs something the walk did long before)."""
        found = self.run_.deviation
        if found is None:
            return
        walk = list(found.steps)
        init = self.graph.init

        def rest_from(i: int) -> list[DrivenEdge]:
            return [*self.graph.shortest_path(init, walk[i].source), *walk[i:]]

        def shorter(paths: list[list[DrivenEdge]], most: int) -> list[list[DrivenEdge]]:
            return sorted((p for p in paths if len(p) < len(walk)), key=len)[:most]

        last = walk[-1]
        back = self.graph.tree(init)
        same = [
            [*self.graph.path_in(back, step.source), step]
            for step in self.graph.steps
            if (step.action, step.args, step.then) == (last.action, last.args, last.then)
            and step.source in back
        ]
        candidates = sorted(
            shorter([rest_from(i) for i in range(1, len(walk))], tries) + shorter(same, others),
            key=len,
        )
        for path in candidates:
            again = self.replay(path)
            if again is not None:
                self.run_.deviation = attrs.evolve(again, shortened=True)
                return
        # The walk itself (i = 0) fails; find the largest i whose path fails too.
        low, high, best = 0, len(walk) - 1, None
        while low < high:
            middle = (low + high + 1) // 2
            path = rest_from(middle)
            again = self.replay(path) if len(path) < len(walk) else None
            if again is not None:
                low, best = middle, again
            else:
                high = middle - 1
        if best is not None:
            self.run_.deviation = attrs.evolve(best, shortened=True)
            return
        # A walk that is a shortest path to the failing step is as short as one there gets.
        minimal = len(walk) == len(self.graph.shortest_path(init, last.source)) + 1
        self.run_.deviation = attrs.evolve(
            found, shortened=False if candidates and not minimal else None
        )

    def replay(self, path: list[DrivenEdge]) -> Deviation | None:
        """Follow ``path`` on a reset adapter; the deviation it meets, if any."""
        self.run_.deviation = None
        self.restart()
        timed = self.mapping.timed
        plans = self.mapping.schedule(self.graph.graph, path) if timed else [None] * len(path)
        try:
            for step, plan in zip(path, plans, strict=True):
                self.step([step], plan)
        except WalkAborted:
            return self.run_.deviation
        return None

    def report_progress(self) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if now - self.last_progress >= 1.0:
            self.last_progress = now
            self.cov.covered = len(self.taken.edges)
            self.cov.states_visited = self.states_visited()
            self.cov.requests = self.adapter.requests_sent
            self.progress(self.cov)
