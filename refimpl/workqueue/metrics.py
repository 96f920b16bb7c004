"""Work-queue metrics: the providers and the per-queue bookkeeping.

Ports ``util/workqueue/metrics.go``: a ``MetricsProvider`` hands out one metric of each
kind per queue name, and ``queueMetrics`` updates them on add / get / done. The default
provider records nothing (and, as in client-go, a queue without real metrics starts no
refresh thread). :class:`InMemoryMetricsProvider` keeps every value so tests and the tour
can read them. Never blocks; time comes from the injected clock. Not modelled in TLA+.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from refimpl.clock import NS_PER_SECOND, Clock

__all__ = [
    "Counter",
    "Gauge",
    "Histogram",
    "InMemoryMetricsProvider",
    "MetricsProvider",
    "QueueMetrics",
    "RetryMetrics",
    "SettableGauge",
]

T = TypeVar("T", bound=Hashable)


class GaugeMetric(Protocol):
    def inc(self) -> None: ...
    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, value: float) -> None: ...


class MetricsProvider(Protocol):
    """One factory method per metric, keyed by queue name (client-go's names)."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...
    def new_adds_metric(self, name: str) -> CounterMetric: ...
    def new_latency_metric(self, name: str) -> HistogramMetric: ...
    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...
    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...
    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...
    def new_retries_metric(self, name: str) -> CounterMetric: ...


class Gauge:
    def __init__(self) -> None:
        self.value = 0.0

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1


class SettableGauge:
    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = value


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def inc(self) -> None:
        self.value += 1


class Histogram:
    def __init__(self) -> None:
        self.observations: list[float] = []

    def observe(self, value: float) -> None:
        self.observations.append(value)


class QueueMetricSet:
    """Every metric of one queue name, as the in-memory provider stores them."""

    def __init__(self) -> None:
        self.depth = Gauge()
        self.adds = Counter()
        self.latency = Histogram()
        self.work_duration = Histogram()
        self.unfinished_work_seconds = SettableGauge()
        self.longest_running_processor_seconds = SettableGauge()
        self.retries = Counter()


class InMemoryMetricsProvider:
    """Keeps every metric in memory; ``provider[name]`` returns a queue's metric set."""

    def __init__(self) -> None:
        self._sets: dict[str, QueueMetricSet] = {}

    def __getitem__(self, name: str) -> QueueMetricSet:
        return self._sets.setdefault(name, QueueMetricSet())

    def new_depth_metric(self, name: str) -> Gauge:
        return self[name].depth

    def new_adds_metric(self, name: str) -> Counter:
        return self[name].adds

    def new_latency_metric(self, name: str) -> Histogram:
        return self[name].latency

    def new_work_duration_metric(self, name: str) -> Histogram:
        return self[name].work_duration

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGauge:
        return self[name].unfinished_work_seconds

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGauge:
        return self[name].longest_running_processor_seconds

    def new_retries_metric(self, name: str) -> Counter:
        return self[name].retries


class QueueMetrics(Generic[T]):
    """Per-queue bookkeeping behind the metrics (client-go ``defaultQueueMetrics``).

    ``add`` is called only when an item becomes newly dirty, so ``adds`` counts
    deliveries owed, not calls to ``add``; latency is measured from the first such add.
    """

    def __init__(self, provider: MetricsProvider, name: str, clock: Clock) -> None:
        self._clock = clock
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished_work_seconds = provider.new_unfinished_work_seconds_metric(name)
        self.longest_running_processor = provider.new_longest_running_processor_seconds_metric(name)
        # Start times in integer ns, as client-go keeps time.Time; durations become
        # float seconds only when observed (Duration.Seconds()).
        self._add_times: dict[T, int] = {}
        self._processing_start_times: dict[T, int] = {}

    def add(self, item: T) -> None:
        self.adds.inc()
        self.depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.now_ns()

    def get(self, item: T) -> None:
        self.depth.dec()
        now = self._clock.now_ns()
        self._processing_start_times[item] = now
        start = self._add_times.pop(item, None)
        if start is not None:
            self.latency.observe((now - start) / NS_PER_SECOND)

    def done(self, item: T) -> None:
        start = self._processing_start_times.pop(item, None)
        if start is not None:
            self.work_duration.observe((self._clock.now_ns() - start) / NS_PER_SECOND)

    def update_unfinished_work(self) -> None:
        now = self._clock.now_ns()
        total = 0
        oldest = 0
        for start in self._processing_start_times.values():
            age = now - start
            total += age
            oldest = max(oldest, age)
        self.unfinished_work_seconds.set(total / NS_PER_SECOND)
        self.longest_running_processor.set(oldest / NS_PER_SECOND)


class RetryMetrics:
    """The delaying queue's ``retries`` counter (every accepted ``add_after``)."""

    def __init__(self, provider: MetricsProvider, name: str) -> None:
        self.retries = provider.new_retries_metric(name)

    def retry(self) -> None:
        self.retries.inc()
