"""A catalogue of deliberately broken variants of the reference, one bug each.

Each entry names a historical bug or a common porting mistake, the component where a
short sequence exposes it, and a function that swaps one part of the reference driver
(:class:`refimpl.conformance.reference.dispatch.Parts`) for a broken one. ``adapter.py --bug NAME``
serves the result over the protocol; ``tests/test_conformance_broken.py`` checks that
``refimpl conform`` catches every entry, and ``benchmarks/conformance.py`` measures how
fast. Nothing here is used by refimpl itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from refimpl.blocking import WouldBlock
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta, DeltaType, tombstone
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.informer_core import FifoMode
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.processor import UpdateNotification
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.reflector import NextStep, ReflectorCore
from refimpl.cache.store import Indexer, ThreadSafeMap
from refimpl.conformance.reference.dispatch import Parts
from refimpl.conformance.reference.workqueue import (
    LimiterFactory,
    WorkqueueComponent,
    build_limiter,
)
from refimpl.sim.informer import SimInformer
from refimpl.tour.ch07_model_and_code import handler_first
from refimpl.workqueue.backoff import fast_slow_delay
from refimpl.workqueue.core import DoneHint, FifoContainer, QueueCore
from refimpl.workqueue.delaying_core import DelayingCore
from refimpl.workqueue.rate_limiters import (
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
)

__all__ = ["BUGS", "Bug"]

Item = str


@dataclass(frozen=True)
class Bug:
    name: str
    component: str  # the component whose conformance run should catch it
    summary: str
    origin: str
    apply: Callable[[Parts], None]
    #: "search": random search (``refimpl conform``) must catch it; "spec": only the
    #: spec-driven walks can, because it needs a request the random search never
    #: sends (pop_begin/pop_end: producers calling while Pop's process function runs)
    found_by: str = "search"
    #: The ``--inputs`` that reach it: "any" for a bug only a list naming one key twice
    #: shows, which no API server sends (docs/conformance.md, "Realistic inputs").
    inputs: str = "realistic"


# --------------------------------------------------------------------------- queue


class PushWhileProcessing(QueueCore[Item]):
    """Add ignores ``processing``: an in-flight item is queued again at once."""

    def add(self, item: Item) -> bool:
        if self.shutting_down or item in self.dirty:
            return False
        self.dirty.add(item)
        self.queue.push(item)
        return True


class DoneForgetsDirty(QueueCore[Item]):
    """Done never re-queues an item that was re-added while in flight."""

    def done(self, item: Item) -> DoneHint:
        self.processing.discard(item)
        self.dirty.discard(item)
        return DoneHint(requeued=False, idle=not self.processing)


class GetKeepsDirty(QueueCore[Item]):
    """Get leaves the item in ``dirty``: a later Add is swallowed, Done re-queues it."""

    def get(self) -> tuple[Item | None, bool]:
        if not self.queue:
            if self.shutting_down:
                return None, True
            raise WouldBlock("empty")
        item = self.queue.pop()
        self.processing.add(item)
        return item, False


class DirtyClearedAtDone(QueueCore[Item]):
    """Get clears ``dirty`` only at Done: an Add while in flight is lost."""

    def get(self) -> tuple[Item | None, bool]:
        if not self.queue:
            if self.shutting_down:
                return None, True
            raise WouldBlock("empty")
        item = self.queue.pop()
        self.processing.add(item)
        return item, False

    def done(self, item: Item) -> tuple[bool, bool]:
        self.dirty.discard(item)
        return super().done(item)


class ShutdownDiscards(QueueCore[Item]):
    """ShutDown throws the queued items away instead of letting workers drain them."""

    def shut_down(self) -> None:
        super().shut_down()
        assert isinstance(self.queue, FifoContainer)
        for item in self.queue:
            self.dirty.discard(item)
        self.queue.clear()


class LenCountsProcessing(QueueCore[Item]):
    """Len includes in-flight items."""

    def __len__(self) -> int:
        return len(self.queue) + len(self.processing)


class DoneAfterShutdownDrops(QueueCore[Item]):
    """Done re-queues through Add, so the shutdown guard drops the re-added item."""

    def done(self, item: Item) -> DoneHint:
        self.processing.discard(item)
        if item in self.dirty:
            if self.shutting_down:
                self.dirty.discard(item)
                return DoneHint(requeued=False, idle=not self.processing)
            self.queue.push(item)
            return DoneHint(requeued=True, idle=False)
        return DoneHint(requeued=False, idle=not self.processing)


class RingGrowsOutOfOrder:
    """A ring-buffer queue container (client-go's pluggable ``Queue[T]``, since v1.31)
    that starts with two slots and doubles, but copies the slots in storage order when
    it grows instead of unwrapping them from the head: once the ring has wrapped, the
    items stored before the wrap point jump ahead of older ones. Reaching it takes three
    items queued at once (two fill the ring, a Get moves the head, a third wraps, a
    fourth push grows it)."""

    def __init__(self) -> None:
        self.slots: list[Item | None] = [None, None]
        self.head = 0
        self.count = 0

    def touch(self, item: Item) -> None:
        pass

    def push(self, item: Item) -> None:
        if self.count == len(self.slots):
            # Should be slots[head:] + slots[:head]: the storage order is not the queue's.
            self.slots = self.slots + [None] * len(self.slots)
            self.head = 0
        self.slots[(self.head + self.count) % len(self.slots)] = item
        self.count += 1

    def pop(self) -> Item:
        item = self.slots[self.head]
        assert item is not None, "pop from an empty ring"
        self.slots[self.head] = None
        self.head = (self.head + 1) % len(self.slots)
        self.count -= 1
        return item

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Item]:
        for i in range(self.count):
            item = self.slots[(self.head + i) % len(self.slots)]
            assert item is not None
            yield item


# --------------------------------------------------------------------------- delaying


class LaterAddAfterWins(DelayingCore[Item]):
    """A repeated AddAfter replaces the ready time even when it is later."""

    def insert(self, item: Item, ready_at: int) -> bool:
        existing = self.waiting.get(item)
        if existing is not None and ready_at > existing.ready_at:
            existing.ready_at = ready_at
            self._fix(existing.index)
            return True
        return super().insert(item, ready_at)


class FiresLate(DelayingCore[Item]):
    """An entry fires only once the clock is strictly past its ready time."""

    def pop_due(self, now: int) -> list[Item]:
        return super().pop_due(now - 1)  # one nanosecond early is "not yet"


class NoDedupWaiting(DelayingCore[Item]):
    """Every AddAfter gets its own entry, so one item can fire twice."""

    def __init__(self) -> None:
        super().__init__()
        self.extra: list[tuple[int, Item]] = []

    def insert(self, item: Item, ready_at: int) -> bool:
        if item in self.waiting:
            self.extra.append((ready_at, item))
            return False
        return super().insert(item, ready_at)

    def pop_due(self, now: int) -> list[Item]:
        due = super().pop_due(now)
        late = sorted(e for e in self.extra if e[0] <= now)
        self.extra = [e for e in self.extra if e[0] > now]
        return due + [item for _, item in late]

    def clear(self) -> None:
        super().clear()
        self.extra = []


class NonPositiveDelayWaits(WorkqueueComponent):
    """AddAfter with a delay <= 0 goes through the waiting room instead of adding now."""

    def add_after_ns(self, item: Item, delay_ns: int) -> None:
        if self.q.core.shutting_down:
            return
        self.q.waiting.insert(item, self.now_ns() + max(delay_ns, 0))


# --------------------------------------------------------------------------- limiters


class ForgetKeeps(ItemExponentialFailureRateLimiter[Item]):
    def forget(self, item: Item) -> None:
        pass


class ForgetKeepsFastSlow(ItemFastSlowRateLimiter[Item]):
    def forget(self, item: Item) -> None:
        pass


class Uncapped(ItemExponentialFailureRateLimiter[Item]):
    def when_ns(self, item: Item) -> int:
        exp = self.num_requeues(item)
        super().when_ns(item)
        return int(self.base_ns * 2**exp)


class FastSlowOffByOne(ItemFastSlowRateLimiter[Item]):
    def when_ns(self, item: Item) -> int:
        attempts = self.num_requeues(item) + 1
        super().when_ns(item)
        return fast_slow_delay(self.fast_ns, self.slow_ns, self.max_fast_attempts - 1, attempts)


class MaxOfFirstOnly(MaxOfRateLimiter[Item]):
    """Only asks the first limiter (the others' side effects never happen)."""

    def when_ns(self, item: Item) -> int:
        return self.limiters[0].when_ns(item) if self.limiters else 0  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- cache


class ReplaceWithoutQueuedTombstones(DeltaFIFOCore):
    """Replace forgets keys that are only queued (before upstream PR #115620)."""

    def replace(self, objects: Sequence[object], resource_version: str = "") -> None:
        action = DeltaType.REPLACED if self.emit_delta_type_replaced else DeltaType.SYNC
        listed: set[str] = set()
        for obj in objects:
            listed.add(self.key_of(obj))
            self._queue_action(action, obj, internal=DeltaType.REPLACED)
        deletions = 0
        if self.known_objects is not None:
            for key in self.known_objects.list_keys():
                if key in listed:
                    continue
                stored, exists = self.known_objects.get_by_key(key)
                deletions += 1
                self._queue_action(DeltaType.DELETED, tombstone(key, stored if exists else None))
        if not self.populated:
            self.populated = True
            self.initial_population_count = len(listed) + deletions
            self._check_synced()


class DedupMergesEverything(DeltaFIFOCore):
    """Any two consecutive deltas of the same type collapse (newest wins)."""

    def _queue_action(
        self, emitted: DeltaType, obj: object, internal: DeltaType | None = None
    ) -> None:
        key = self.key_of(obj)
        deltas = self.items.get(key)
        if deltas and deltas[-1].type is emitted and emitted is not DeltaType.DELETED:
            deltas[-1] = Delta(emitted, obj)
            return
        super()._queue_action(emitted, obj, internal)


class DedupKeepsNewer(DeltaFIFOCore):
    """Collapses two consecutive Deleted deltas keeping the newer one (delta_fifo.go
    isDeletionDup keeps the older unless the older is a tombstone: a watch delete's
    real final state beats a relist's tombstone)."""

    def _queue_action(
        self, emitted: DeltaType, obj: object, internal: DeltaType | None = None
    ) -> None:
        key = self.key_of(obj)
        deltas = self.items.get(key)
        if deltas and deltas[-1].type is DeltaType.DELETED and emitted is DeltaType.DELETED:
            deltas[-1] = Delta(emitted, obj)
            return
        super()._queue_action(emitted, obj, internal)


class DeltaFIFODeleteUnknownQueued(DeltaFIFOCore):
    """Delete queues a Deleted even for a key nobody knows (RealFIFO's rule)."""

    def delete(self, obj: object) -> None:
        self.populated = True
        self._check_synced()
        self._queue_action(DeltaType.DELETED, obj)


class ResyncOverQueued(DeltaFIFOCore):
    """Resync queues Sync even for keys that have queued deltas (a stale store copy
    lands after a newer event)."""

    def resync(self) -> None:
        if self.known_objects is None:
            return
        for key in self.known_objects.list_keys():
            obj, exists = self.known_objects.get_by_key(key)
            if exists:
                self._queue_action(DeltaType.SYNC, obj)


class SyncCountsEntries(DeltaFIFOCore):
    """The first Replace counts list entries, not distinct keys (before PR #96797):
    with a duplicate in the list, HasSynced never becomes true."""

    def replace(self, objects: Sequence[object], resource_version: str = "") -> None:
        first = not self.populated
        super().replace(objects, resource_version)
        if first:
            extra = len(objects) - len({self.key_of(o) for o in objects})
            self.initial_population_count += extra
            self.synced = self.initial_population_count == 0


class RealFIFODropsUnknownDelete(RealFIFOCore):
    """RealFIFO drops a delete for a key that is neither queued nor known (DeltaFIFO's
    rule), so the handler never sees OnDelete for it."""

    def delete(self, obj: object) -> None:
        key = self.key_of(obj)
        queued = any(d.type in _KEYED and self.key_of(d) == key for d in self.items)
        known = self.known_objects is not None and self.known_objects.get_by_key(key)[1]
        self.populated = True
        self._check_synced()
        if queued or known:
            self._append(DeltaType.DELETED, obj)


class RealFIFOSyncedAtTake(RealFIFOCore):
    """Counts an initial entry as handed out when Pop takes it, before its process
    function ran (DeltaFIFO's order): with the lock released while processing (v1.36+),
    HasSynced is true while the last initial object is not yet in the cache."""

    #: take_one counted its entry already: the finish after it counts nothing
    _counted = False

    def take_one(self) -> tuple[Delta, bool]:
        taken = super().take_one()
        super().finish(1)
        self._counted = True
        return taken

    def finish(self, n: int) -> None:
        if self._counted:
            self._counted = False
            return
        super().finish(n)  # a batch (take_batch) counts as client-go does


_KEYED = frozenset(
    {DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED, DeltaType.REPLACED, DeltaType.SYNC}
)


class KeepsEmptyIndexValues(ThreadSafeMap):
    """Index values whose key sets became empty stay (before PR #84970: a leak)."""

    def _apply(self, key: str, plan: list[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
        for name, old_values, new_values in plan:
            index = self.indices.setdefault(name, {})
            for value in old_values:
                index.get(value, set()).discard(key)
            for value in new_values:
                index.setdefault(value, set()).add(key)


class UpdateKeepsOldIndexEntries(ThreadSafeMap):
    """Update files the key under its new index values without removing the old ones."""

    def _apply(self, key: str, plan: list[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
        for name, old_values, new_values in plan:
            index = self.indices.setdefault(name, {})
            if not new_values:  # deletion still cleans up
                for value in old_values:
                    keys = index.get(value)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)


class UpdateDropsSharedValue(ThreadSafeMap):
    """Update files the key under its new values, then removes it from its old ones: a
    value in both loses the key (an update from one value to two, kubernetes PR
    #109137). The one-value-unchanged shortcut hides it from single-valued indexes."""

    def _apply(self, key: str, plan: list[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
        for name, old_values, new_values in plan:
            if len(old_values) == 1 and new_values == old_values:
                continue
            index = self.indices.setdefault(name, {})
            for value in new_values:
                index.setdefault(value, set()).add(key)
            for value in old_values:
                keys = index.get(value, set())
                keys.discard(key)
                if not keys:
                    index.pop(value, None)


class ReplaceMerges(ThreadSafeMap):
    """Replace upserts the new items but keeps the ones missing from the list."""

    def replace(self, items: dict[str, object], resource_version: str) -> None:
        for key, obj in items.items():
            self.update(key, obj)
        self.rv = resource_version


class ReplaceFirstDuplicateWins(Indexer):
    """Replace keeps the first object of a key the list names twice: a port that skips
    keys it has seen (client-go fills a map in list order, so the last one wins)."""

    def replace(self, objects: Sequence[object], resource_version: str) -> None:
        first: dict[str, object] = {}
        for obj in objects:
            first.setdefault(self._key(obj), obj)
        super().replace(list(first.values()), resource_version)


def _indexer_with(cls: type[ThreadSafeMap]) -> Callable[..., Indexer]:
    def make(**kwargs: Any) -> Indexer:
        indexer = Indexer(**kwargs)
        indexer._map = cls(kwargs.get("indexers"))
        return indexer

    return make


def _cache(**factories: Callable[..., Any]) -> Callable[[Parts], None]:
    def apply(parts: Parts) -> None:
        for name, factory in factories.items():
            setattr(parts.cache, name, factory)

    return apply


def _limiters(**classes: LimiterFactory) -> Callable[[Parts], None]:
    def apply(parts: Parts) -> None:
        parts.limiter = partial(build_limiter, classes=classes)

    return apply


def _core(cls: Callable[[], QueueCore[Item]]) -> Callable[[Parts], None]:
    def apply(parts: Parts) -> None:
        parts.queue_core = cls

    return apply


def _waiting(cls: Callable[[], DelayingCore[Item]]) -> Callable[[Parts], None]:
    def apply(parts: Parts) -> None:
        parts.delaying_core = cls

    return apply


def _component(cls: Callable[..., WorkqueueComponent]) -> Callable[[Parts], None]:
    def apply(parts: Parts) -> None:
        parts.workqueue_component = cls

    return apply


_ALL: list[Bug] = [
    Bug(
        "add-while-processing-pushes",
        "queue",
        "Add of an in-flight item queues it at once, so a second worker gets it",
        "the 'stingy' rule of queue.go (an item is processed by one worker at a time)",
        _core(PushWhileProcessing),
    ),
    Bug(
        "done-forgets-requeue",
        "queue",
        "Done does not re-queue an item that was re-added while in flight (lost update)",
        "the dirty-while-processing rule of queue.go Done",
        _core(DoneForgetsDirty),
    ),
    Bug(
        "get-keeps-dirty",
        "queue",
        "Get never removes the item from dirty",
        "queue.go Get deletes from dirty; a port that forgets re-delivers after Done",
        _core(GetKeepsDirty),
    ),
    Bug(
        "dirty-cleared-at-done",
        "queue",
        "Get removes the item from dirty only at Done, so an Add while in flight is lost",
        "queue.go Get deletes from dirty at hand-out, not at Done",
        _core(DirtyClearedAtDone),
    ),
    Bug(
        "shutdown-discards-queue",
        "queue",
        "ShutDown discards queued items instead of handing them out",
        "queue.go Get keeps returning queued items after ShutDown",
        _core(ShutdownDiscards),
    ),
    Bug(
        "len-counts-processing",
        "queue",
        "Len counts in-flight items",
        "queue.go Len is the queue's length only",
        _core(LenCountsProcessing),
    ),
    Bug(
        "done-after-shutdown-drops",
        "queue",
        "Done after ShutDown drops an item re-added while in flight",
        "queue.go Done bypasses the shutdown guard of Add",
        _core(DoneAfterShutdownDrops),
    ),
    Bug(
        "ring-grows-out-of-order",
        "queue",
        "the queue's ring buffer copies its slots in storage order when it grows, so a "
        "wrapped queue of three items hands them out of order",
        "a porting mistake with a custom container (queue.go takes any Queue[T] since "
        "v1.31; a ring must unwrap from its head when it grows); needs 3+ queued items",
        _core(lambda: QueueCore(container=RingGrowsOutOfOrder())),
    ),
    Bug(
        "later-add-after-wins",
        "delaying_queue",
        "a repeated AddAfter replaces the earlier ready time with a later one",
        "delaying_queue.go insert keeps the earlier time (TestDeduping)",
        _waiting(LaterAddAfterWins),
    ),
    Bug(
        "fires-late",
        "delaying_queue",
        "a delayed item fires only after its ready time, not at it",
        "delaying_queue.go adds entries whose readyAt is not after now",
        _waiting(FiresLate),
    ),
    Bug(
        "add-after-no-dedup",
        "delaying_queue",
        "every AddAfter of a waiting item fires separately",
        "delaying_queue.go keeps one waiting entry per item",
        _waiting(NoDedupWaiting),
    ),
    Bug(
        "non-positive-delay-waits",
        "delaying_queue",
        "AddAfter with a delay <= 0 waits for the clock instead of adding at once",
        "delaying_queue.go AddAfter adds synchronously when duration <= 0",
        _component(NonPositiveDelayWaits),
    ),
    Bug(
        "forget-does-not-reset",
        "rate_limiter",
        "Forget does not clear the per-item failure count",
        "RL-1: after Forget the next failure waits the base delay again",
        _limiters(exponential=ForgetKeeps, fast_slow=ForgetKeepsFastSlow),
    ),
    Bug(
        "limiter-without-cap",
        "rate_limiter",
        "the exponential limiter never applies its maximum delay",
        "default_rate_limiters.go caps base*2^n at maxDelay",
        _limiters(exponential=Uncapped),
    ),
    Bug(
        "fast-slow-off-by-one",
        "rate_limiter",
        "the fast/slow limiter switches to slow one attempt early",
        "default_rate_limiters.go: fast while failures <= maxFastAttempts",
        _limiters(fast_slow=FastSlowOffByOne),
    ),
    Bug(
        "max-of-first-only",
        "rate_limiter",
        "MaxOf asks only its first limiter",
        "default_rate_limiters.go MaxOf calls every limiter and returns the longest",
        _limiters(max_of=MaxOfFirstOnly),
    ),
]

_ALL += [
    Bug(
        "replace-no-queued-tombstones",
        "delta_fifo",
        "Replace queues no tombstone for a key that is only queued, not yet in the store",
        "kubernetes PR #115620 (issue #115658): the object stays in the cache forever",
        _cache(delta_fifo=ReplaceWithoutQueuedTombstones),
    ),
    Bug(
        "dedup-merges-everything",
        "delta_fifo",
        "consecutive deltas of the same type are merged, not only a pair of Deleted",
        "delta_fifo.go dedupDeltas collapses only Deleted+Deleted",
        _cache(delta_fifo=DedupMergesEverything),
    ),
    Bug(
        "dedup-deletes-keeps-newer",
        "delta_fifo",
        "of two consecutive deletes the newer is kept (a relist's tombstone over the "
        "watch's real final state)",
        "delta_fifo.go isDeletionDup keeps the older delete unless it is a tombstone",
        _cache(delta_fifo=DedupKeepsNewer),
    ),
    Bug(
        "delta-fifo-queues-unknown-delete",
        "delta_fifo",
        "DeltaFIFO queues a delete for a key that is neither queued nor known",
        "delta_fifo.go Delete drops it (FIFO-4; RealFIFO forwards it, RF-2)",
        _cache(delta_fifo=DeltaFIFODeleteUnknownQueued),
    ),
    Bug(
        "resync-over-queued",
        "delta_fifo",
        "Resync queues a Sync for a key that already has queued deltas",
        "delta_fifo.go syncKeyLocked skips keys with queued deltas",
        _cache(delta_fifo=ResyncOverQueued),
    ),
    Bug(
        "sync-counts-entries",
        "delta_fifo",
        "the first Replace counts list entries instead of distinct keys",
        "kubernetes PR #96797: with duplicates HasSynced never became true",
        _cache(delta_fifo=SyncCountsEntries),
        inputs="any",
    ),
    Bug(
        "real-fifo-drops-unknown-delete",
        "real_fifo",
        "RealFIFO drops a delete for a key it does not know",
        "the_real_fifo.go Delete never filters (RF-2)",
        _cache(real_fifo=RealFIFODropsUnknownDelete),
    ),
    Bug(
        "real-fifo-synced-at-take",
        "real_fifo",
        "atomic RealFIFO: HasSynced turns true when the last initial entry is taken, "
        "before its process function has run",
        "kubernetes PR #136264 counts down after processing once the lock is released "
        "while processing (FIFO-7); needs pop_begin/pop_end",
        _cache(real_fifo=RealFIFOSyncedAtTake),
        found_by="spec",
    ),
    Bug(
        "index-keeps-empty-values",
        "store",
        "an index value whose key set became empty is kept",
        "kubernetes PR #84970 (issue #84959): memory grew with high-churn index values",
        _cache(indexer=_indexer_with(KeepsEmptyIndexValues)),
    ),
    Bug(
        "update-keeps-old-index-entries",
        "store",
        "Update adds the new index values but leaves the key under the old ones",
        "thread_safe_store.go updateSingleIndex removes old values first",
        _cache(indexer=_indexer_with(UpdateKeepsOldIndexEntries)),
    ),
    Bug(
        "update-drops-shared-index-value",
        "store",
        "an update that changes how many index values an object has drops the key from "
        "the values the old and new objects share",
        "kubernetes PR #109137: an update from one label value to two lost the first",
        _cache(indexer=_indexer_with(UpdateDropsSharedValue)),
    ),
    Bug(
        "replace-first-duplicate-wins",
        "store",
        "Replace keeps the first of two objects with one key, not the last",
        "thread_safe_store.go / store.go Replace fill a map in list order (the last "
        "wins); needs a list naming a key twice (--inputs any)",
        _cache(indexer=ReplaceFirstDuplicateWins),
        inputs="any",
    ),
    Bug(
        "replace-merges",
        "store",
        "Replace keeps items that are missing from the new list",
        "thread_safe_store.go Replace swaps the whole map",
        _cache(indexer=_indexer_with(ReplaceMerges)),
    ),
]

# --------------------------------------------------------------------------- informer
#
# Each swaps one part of InformerParts: how popped deltas are processed, the FIFO's
# relist, the reflector's resourceVersion bookkeeping or the sync rule. Some bugs live in
# one client-go generation only; the variant then offers only that one (``modes``). Two
# need the optional ``pause`` method: with processing running after every request the
# FIFO is always drained when the next relist or sync check comes.


def _handler_first_batch(
    handler: ResourceEventHandler, store: Indexer, deltas: Sequence[Delta], initial: bool
) -> None:
    for delta in deltas:
        handler_first(handler, store, [delta], initial)


class RelistKeepsVanished(DeltaFIFOCore):
    """Replace queues the listed objects and no tombstone at all."""

    def replace(self, objects: Sequence[object], resource_version: str = "") -> None:
        listed: set[str] = set()
        for obj in objects:
            listed.add(self.key_of(obj))
            self._queue_action(DeltaType.REPLACED, obj, internal=DeltaType.REPLACED)
        if not self.populated:
            self.populated = True
            self.initial_population_count = len(listed)
            self._check_synced()


class RewatchAfterExpired(ReflectorCore):
    """A watch that ends with 410 is re-opened from the same resourceVersion."""

    def after_watch(self, err: BaseException | None, now: float) -> NextStep:
        step = super().after_watch(err, now)
        return NextStep.REWATCH if step is NextStep.RELIST else step

    @staticmethod
    def after_watch_start_error(err: BaseException) -> NextStep:
        return NextStep.BACKOFF_THEN_REWATCH


class RewatchFromListRV(ReflectorCore):
    """Watch events never move the last synced resourceVersion: every re-watch starts
    again from the last list's."""

    def observe_watch_rv(
        self, resource_version: str, saw_non_added: bool, propagate_from_start: bool
    ) -> bool:
        return False


def _relist_as_resync(
    handler: ResourceEventHandler, store: Indexer, deltas: Sequence[Delta], initial: bool
) -> None:
    """processDeltas before kubernetes PR #86015: every update from a Sync or Replaced
    delta is a resync, so a relist's changed object reaches only the handlers due for a
    resync at the last check (the fix compares resourceVersions instead)."""
    for delta in deltas:
        if delta.type in (DeltaType.SYNC, DeltaType.REPLACED) and isinstance(handler, SimInformer):
            old, exists = store.get(delta.object)
            if exists:
                store.update(delta.object)
                handler.processor.distribute(UpdateNotification(old, delta.object), True)
                run = getattr(handler, "run_handlers", None)
                if callable(run):
                    run()  # the reference runs handlers where it distributes
                continue
        process_deltas(handler, store, [delta], initial)


def _synced_at_relist(informer: SimInformer) -> bool:
    return informer.lists > 0


def _delta_fifo(cls: type[DeltaFIFOCore]) -> Callable[[FifoMode, Indexer], DeltaFIFOCore]:
    def build(mode: FifoMode, indexer: Indexer) -> DeltaFIFOCore:
        return cls(known_objects=indexer, emit_delta_type_replaced=True)

    return build


def _informer(**changes: object) -> Callable[[Parts], None]:
    # Changes the informer parts in place, so bugs in different parts combine.
    def apply(parts: Parts) -> None:
        for name, value in changes.items():
            setattr(parts.informer, name, value)

    return apply


#: name -> (summary, origin, how to build it).
INFORMER_BUG_PARTS: dict[str, tuple[str, str, Callable[[Parts], None]]] = {
    "informer-handler-before-store": (
        "each watch event is handed to the handlers before the cache is written",
        "controller.go processDeltas writes the indexer, then distributes (INF-1)",
        _informer(process=handler_first, process_batch=_handler_first_batch),
    ),
    "informer-relist-keeps-vanished": (
        "a relist queues the listed objects but no delete for what vanished",
        "delta_fifo.go Replace tombstones every known key missing from the list (INF-3)",
        _informer(fifo_core=_delta_fifo(RelistKeepsVanished), modes=("delta",)),
    ),
    "informer-tombstones-only-known": (
        "a relist tombstones cached keys only, not keys still queued",
        "kubernetes PR #115620 (issue #115658), seen through the informer: a ghost (INF-3)",
        _informer(fifo_core=_delta_fifo(ReplaceWithoutQueuedTombstones), modes=("delta",)),
    ),
    "informer-rewatch-after-410": (
        "after a 410 the reflector watches again from the same resourceVersion",
        "reflector.go relists after an expired watch; the history it needs is gone (REF-3)",
        _informer(reflector_core=RewatchAfterExpired),
    ),
    "informer-rewatch-from-list-rv": (
        "every re-watch starts from the last list's resourceVersion",
        "reflector.go records each event's resourceVersion; older ones replay events (REF-3)",
        _informer(reflector_core=RewatchFromListRV),
    ),
    "informer-relist-as-resync": (
        "a relist's changed object reaches only the handlers due for a resync",
        "kubernetes PR #86015: relist updates were resync updates; shared_informer.go "
        "now treats only an unchanged resourceVersion as a resync",
        _informer(process=_relist_as_resync, modes=("delta",)),
    ),
    "informer-synced-before-processing": (
        "has_synced turns true when the first list reaches the queue, not the cache",
        "shared_informer.go HasSynced waits for the initial list to be processed (FIFO-7)",
        _informer(synced=_synced_at_relist),
    ),
}


_ALL += [
    Bug(name, "informer", summary, origin, apply)
    for name, (summary, origin, apply) in INFORMER_BUG_PARTS.items()
]

BUGS: dict[str, Bug] = {bug.name: bug for bug in _ALL}


def describe() -> list[dict[str, Any]]:
    return [
        {"name": b.name, "component": b.component, "summary": b.summary, "origin": b.origin}
        for b in _ALL
    ]
