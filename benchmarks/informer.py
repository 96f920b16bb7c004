"""Throughput and scaling of the informer stack, measured in one run.

Prints four tables:
1. events per second through reflector -> FIFO -> store -> handler, per FIFO mode
   (the threaded SharedIndexInformer over the threaded in-memory API server);
2. the cost of ``replace()`` for 1k, 10k and 100k objects, per object, for the indexer
   and each FIFO (linear scaling means a flat per-object column);
3. memory per cached object (tracemalloc, indexer with the namespace index);
4. lister reads per second.

Run: ``.venv/bin/python benchmarks/informer.py [--events N] [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import threading
import time
import tracemalloc
from collections.abc import Callable

from refimpl.apiserver import ApiServer, ApiServerListerWatcher
from refimpl.cache import (
    NAMESPACE_INDEX,
    DeltaFIFO,
    FifoMode,
    Indexer,
    RealFIFO,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    meta_namespace_index_func,
    wait_for_cache_sync,
)
from refimpl.meta import Object


def objects(n: int, namespaces: int = 10) -> list[Object]:
    return [
        Object(f"obj-{i}", f"ns-{i % namespaces}", uid=f"u{i}", resource_version=str(i + 2))
        for i in range(n)
    ]


def events_per_second(mode: FifoMode, events: int) -> float:
    server = ApiServer()
    informer = SharedIndexInformer(ApiServerListerWatcher(server), fifo_mode=mode, seed=1)
    seen = 0
    done = threading.Event()

    def count(*_: object) -> None:
        nonlocal seen
        seen += 1
        if seen >= events:
            done.set()

    informer.add_event_handler(
        ResourceEventHandlerFuncs(add_func=count, update_func=count, delete_func=count)
    )
    stop = threading.Event()
    thread = informer.start(stop)
    wait_for_cache_sync(stop, informer.has_synced)
    started = time.perf_counter()
    for i in range(events):
        server.create(Object(f"e{i}", "ns"))
    if not done.wait(120):
        raise RuntimeError(f"{mode}: only {seen} of {events} events arrived")
    elapsed = time.perf_counter() - started
    stop.set()
    thread.join()
    return events / elapsed


def best_of(repeat: int, fn: Callable[[], None], *, pause_gc: bool = True) -> float:
    """Best time of ``repeat`` runs. With ``pause_gc`` the cyclic garbage collector is
    paused while timing: its full collections cost time proportional to everything
    alive, which hides the algorithm's own scaling."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        if pause_gc:
            gc.disable()
        try:
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        finally:
            gc.enable()
    return best


def replace_cost(n: int, repeat: int, pause_gc: bool = True) -> dict[str, float]:
    items = objects(n)
    out: dict[str, float] = {}

    def indexer() -> None:
        Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func}).replace(items, "1")

    def delta() -> None:
        DeltaFIFO(emit_delta_type_replaced=True, known_objects=Indexer()).replace(items, "1")

    def real() -> None:
        RealFIFO(known_objects=Indexer()).replace(items, "1")

    def atomic() -> None:
        RealFIFO(atomic_events=True).replace(items, "1")

    for name, fn in [
        ("Indexer", indexer),
        ("DeltaFIFO", delta),
        ("RealFIFO", real),
        ("RealFIFO atomic", atomic),
    ]:
        out[name] = best_of(repeat, fn, pause_gc=pause_gc) / n
    return out


def memory_per_object(n: int) -> float:
    items = objects(n)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    store.replace(items, "1")
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del store
    return (after - before) / n


def lister_reads_per_second(n: int, reads: int) -> float:
    store = Indexer()
    store.replace(objects(n), "1")
    keys = [f"ns-{i % 10}/obj-{i}" for i in range(n)]
    started = time.perf_counter()
    for i in range(reads):
        store.get_by_key(keys[i % n])
    return reads / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description="informer stack throughput and scaling")
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one repeat")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    repeat = 1 if args.quick else 3

    print(f"1. events/s, server write -> handler call ({args.events} creates, threaded)")
    print(f"{'fifo mode':14s} {'events/s':>10s}")
    for mode in FifoMode:
        print(f"{mode.value:14s} {events_per_second(mode, args.events):10,.0f}")

    print(f"\n2. replace() cost per object (best of {repeat}, GC paused), ratio to 1k")
    table = {n: replace_cost(n, repeat) for n in sizes}
    names = list(table[sizes[0]])
    header = "".join(f"{f'{n:,} objs':>22s}" for n in sizes)
    print(f"{'':16s}{header}")
    for name in names:
        base = table[sizes[0]][name]
        cells = "".join(
            f"{table[n][name] * 1e6:12.2f} us {table[n][name] / base:5.2f}x" for n in sizes
        )
        print(f"{name:16s}{cells}")

    largest = sizes[-1]
    with_gc = replace_cost(largest, repeat, pause_gc=False)
    print(f"   with the garbage collector running, {largest:,} objects:")
    for name in names:
        ratio = with_gc[name] / table[largest][name]
        print(f"{name:16s}{with_gc[name] * 1e6:12.2f} us  ({ratio:.2f}x the paused figure)")

    n = sizes[-1]
    print(
        f"\n3. memory per cached object ({n:,} objects, namespace index): "
        f"{memory_per_object(n):,.0f} bytes"
    )
    print(
        f"4. lister reads/s (get_by_key over {n:,} objects): "
        f"{lister_reads_per_second(n, 200_000):,.0f}"
    )


if __name__ == "__main__":
    main()
