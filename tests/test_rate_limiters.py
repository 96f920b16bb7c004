"""Rate limiters (client-go util/workqueue/default_rate_limiters.go; RL-1 to RL-4) and the
rate-limiting queue (rate_limiting_queue.go; RL-5 to RL-7).

Expected delays are computed independently with exact fractions; the bucket runs on a
FakeClock so refill is tested by stepping virtual time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from refimpl.clock import FakeClock, to_ns
from refimpl.workqueue import (
    BucketRateLimiter,
    InMemoryMetricsProvider,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from refimpl.workqueue.backoff import INF_DURATION_NS, bucket_wait_ns, duration_seconds

if TYPE_CHECKING:
    from conftest import Eventually

    Later = Callable[[Any], None]

RateLimited = Callable[..., RateLimitingQueue[str]]


@pytest.fixture
def rate_limited(fake_clock: FakeClock, shut_down_later: Later) -> RateLimited:
    """``rate_limited(limiter)``: a RateLimitingQueue on ``fake_clock`` with ``limiter``
    (client-go's default limiter without one), shut down at teardown."""

    def make(*limiter: Any) -> RateLimitingQueue[str]:
        q = RateLimitingQueue[str](*limiter, clock=fake_clock)
        shut_down_later(q)
        return q

    return make


def _expected_exponential(base: float, cap: float, failures: int) -> float:
    """min(base * 2**failures, cap), computed exactly."""
    exact = Fraction(base) * 2**failures
    return float(min(exact, Fraction(cap)))


# -- ItemExponentialFailureRateLimiter -----------------------------------------------------


def test_exponential_controller_sequence() -> None:
    limiter = ItemExponentialFailureRateLimiter[str](0.005, 1000.0)
    delays = [limiter.when("x") for _ in range(25)]
    assert delays[:4] == [0.005, 0.010, 0.020, 0.040]
    assert delays[17] == pytest.approx(655.36)  # n = 18
    assert delays[16] == pytest.approx(327.68)
    assert delays[18:] == [1000.0] * 7  # n = 19 would be 1310.72 s: capped
    assert limiter.num_requeues("x") == 25


def test_exponential_is_per_item_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter[str](0.001, 1.0)
    assert [limiter.when("a") for _ in range(3)] == [0.001, 0.002, 0.004]
    assert limiter.when("b") == 0.001
    assert limiter.num_requeues("a") == 3
    assert limiter.num_requeues("b") == 1
    limiter.forget("a")
    limiter.forget("never-seen")  # no error
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.001
    assert limiter.when("b") == 0.002


@settings(max_examples=60, deadline=None)
@given(
    base=st.sampled_from([0.001, 0.005, 0.25, 1.0, 3.0]),
    cap=st.sampled_from([0.5, 1.0, 60.0, 1000.0]),
    n=st.integers(min_value=1, max_value=120),
)
def test_exponential_matches_formula(base: float, cap: float, n: int) -> None:
    limiter = ItemExponentialFailureRateLimiter[int](base, cap)
    got = [limiter.when(7) for _ in range(n)]
    assert got == [_expected_exponential(base, cap, k) for k in range(n)]
    assert limiter.num_requeues(7) == n


def test_exponential_base_above_cap_returns_cap() -> None:
    limiter = ItemExponentialFailureRateLimiter[int](5.0, 2.0)
    assert [limiter.when(1) for _ in range(3)] == [2.0, 2.0, 2.0]


def test_exponential_keeps_returning_the_cap_after_very_many_failures() -> None:
    limiter = ItemExponentialFailureRateLimiter[str](0.005, 1000.0)
    delays = [limiter.when("x") for _ in range(2100)]
    assert delays[-1100:] == [1000.0] * 1100
    assert limiter.num_requeues("x") == 2100


@pytest.mark.parametrize("bad", [math.nan, -0.001, math.inf])
def test_exponential_rejects_bad_delays(bad: float) -> None:
    with pytest.raises(ValueError, match="base_delay"):
        ItemExponentialFailureRateLimiter[int](bad, 1.0)
    with pytest.raises(ValueError, match="max_delay"):
        ItemExponentialFailureRateLimiter[int](0.1, bad)


def test_exponential_rejects_non_numbers() -> None:
    with pytest.raises(TypeError, match="base_delay"):
        ItemExponentialFailureRateLimiter[int]("5ms", 1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_delay"):
        ItemExponentialFailureRateLimiter[int](0.1, True)


def test_default_item_based_rate_limiter() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = default_item_based_rate_limiter()
    delays = [limiter.when("x") for _ in range(22)]
    assert delays[0] == 0.001
    assert delays[19] == pytest.approx(524.288)  # 1 ms * 2**19
    assert delays[20:] == [1000.0, 1000.0]  # 1 ms * 2**20 = 1048.576 s: capped


# -- ItemFastSlowRateLimiter ----------------------------------------------------------------


def test_fast_slow() -> None:
    limiter = ItemFastSlowRateLimiter[str](0.005, 10.0, 3)
    assert [limiter.when("x") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert limiter.num_requeues("x") == 5
    assert limiter.when("y") == 0.005
    limiter.forget("x")
    assert limiter.num_requeues("x") == 0
    assert limiter.when("x") == 0.005


def test_fast_slow_with_zero_fast_attempts_is_always_slow() -> None:
    limiter = ItemFastSlowRateLimiter[str](0.005, 10.0, 0)
    assert limiter.when("x") == 10.0


@pytest.mark.parametrize("attempts", [-1, -5])
def test_fast_slow_refuses_a_negative_max_fast_attempts(attempts: int) -> None:
    with pytest.raises(ValueError, match="max_fast_attempts"):
        ItemFastSlowRateLimiter[str](0.005, 10.0, attempts)


# -- BucketRateLimiter ------------------------------------------------------------------------


def test_bucket_burst_then_debt() -> None:
    clock = FakeClock(0.0)
    bucket = BucketRateLimiter[int](10.0, 100, clock=clock)
    delays = [bucket.when(k) for k in range(1, 201)]
    assert delays[:100] == [0.0] * 100
    for k in range(101, 201):
        assert delays[k - 1] == pytest.approx((k - 100) * 0.1), f"call {k}"
    assert bucket.tokens() == pytest.approx(-100.0)
    assert bucket.num_requeues(5) == 0
    bucket.forget(5)  # no-op
    assert bucket.tokens() == pytest.approx(-100.0)


def test_bucket_refills_with_fake_time_and_caps_at_burst() -> None:
    clock = FakeClock(0.0)
    bucket = BucketRateLimiter[str](10.0, 100, clock=clock)
    for _ in range(100):
        assert bucket.when("x") == 0.0
    assert bucket.when("x") == pytest.approx(0.1)  # tokens -1
    clock.step(1.0)  # +10 tokens -> 9
    assert bucket.when("x") == 0.0  # 8 left
    for _ in range(8):
        assert bucket.when("x") == 0.0
    assert bucket.when("x") == pytest.approx(0.1)
    clock.step(10_000.0)  # refill stops at the burst size
    for _ in range(100):
        assert bucket.when("x") == 0.0
    assert bucket.when("x") == pytest.approx(0.1)


# Delays in nanoseconds that golang.org/x/time/rate v0.15.0 (client-go v0.37.2's
# TypedBucketRateLimiter.When: Reserve().Delay()) gives when the clock steps by
# ``steps_ns`` before each reservation; measured with Go 1.26.8 calling
# ReserveN(t, 1).DelayFrom(t). x/time/rate truncates to whole nanoseconds and converts
# elapsed time with Duration.Seconds, so some delays are a nanosecond short of the
# exact rational value (the first case is the client-go conformance finding).
@pytest.mark.parametrize(
    ("qps", "burst", "steps_ns", "expected_ns"),
    [
        (10.0, 1, [0, 15_000_000], [0, 84_999_999]),
        (10.0, 1, [0, 0, 0], [0, 100_000_000, 200_000_000]),
        (100.0, 2, [0, 0, 0, 3_000_000, 1_000_000], [0, 0, 10_000_000, 17_000_000, 25_999_999]),
        (
            1.0,
            3,
            [0, 0, 0, 0, 1_000_000, 2_000_000],
            [0, 0, 0, 1_000_000_000, 1_999_000_000, 2_997_000_000],
        ),
        (3.0, 1, [0, 0, 0], [0, 333_333_333, 666_666_666]),
    ],
)
def test_bucket_delays_equal_x_time_rate_to_the_nanosecond(
    qps: float, burst: int, steps_ns: list[int], expected_ns: list[int]
) -> None:
    clock = FakeClock(0.0)
    bucket = BucketRateLimiter[str](qps, burst, clock=clock)
    got = []
    for step in steps_ns:
        clock.step_ns(step)
        got.append(to_ns(bucket.when("x")))
    assert got == expected_ns


def test_bucket_debt_shrinks_as_time_passes() -> None:
    clock = FakeClock(0.0)
    bucket = BucketRateLimiter[str](10.0, 100, clock=clock)
    for _ in range(200):
        bucket.when("x")
    clock.step(5.0)  # -100 + 50 = -50, this call -> -51
    assert bucket.when("x") == pytest.approx(5.1)


def test_duration_seconds_is_go_duration_seconds() -> None:
    # 15 ms: Go's 0 + 15_000_000 / 1e9 is the double nearest 0.015; 2.5 s and -2.5 s keep
    # the whole seconds apart from the fraction.
    assert duration_seconds(15_000_000) == 15_000_000 / 1e9
    assert duration_seconds(2_500_000_000) == 2.0 + 500_000_000 / 1e9
    assert duration_seconds(-2_500_000_000) == -(2.0 + 500_000_000 / 1e9)
    assert duration_seconds(0) == 0.0


def test_bucket_wait_truncates_and_saturates() -> None:
    assert bucket_wait_ns(0.0, 10.0) == 0
    assert bucket_wait_ns(-0.85, 10.0) == 84_999_999  # (0.85 / 10) * 1e9 = 84999999.99...
    assert bucket_wait_ns(-1e-12, 10.0) == 0  # a debt below a nanosecond waits 0 ns
    assert bucket_wait_ns(-1e11, 1e-9) == INF_DURATION_NS


@pytest.mark.parametrize(
    ("qps", "burst"), [(0.0, 1), (-1.0, 1), (math.nan, 1), (math.inf, 1), (1.0, 0)]
)
def test_bucket_rejects_bad_parameters(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter[int](qps, burst)


# -- MaxOf / WithMaxWait ----------------------------------------------------------------------


class FixedLimiter:
    """Returns a fixed delay and records every call."""

    def __init__(self, delay: float, requeues: int) -> None:
        self.delay = delay
        self.requeues = requeues
        self.calls: list[tuple[str, str]] = []

    def when(self, item: str) -> float:
        self.calls.append(("when", item))
        return self.delay

    def forget(self, item: str) -> None:
        self.calls.append(("forget", item))

    def num_requeues(self, item: str) -> int:
        return self.requeues


def test_max_of_calls_every_limiter_and_returns_the_longest() -> None:
    parts = [FixedLimiter(0.5, 1), FixedLimiter(2.0, 7), FixedLimiter(1.0, 3)]
    limiter = MaxOfRateLimiter[str](*parts)
    assert limiter.when("x") == 2.0
    assert all(p.calls == [("when", "x")] for p in parts)
    assert limiter.num_requeues("x") == 7
    limiter.forget("x")
    assert all(p.calls == [("when", "x"), ("forget", "x")] for p in parts)


def test_max_of_nothing_is_zero() -> None:
    limiter = MaxOfRateLimiter[str]()
    assert limiter.when("x") == 0.0
    assert limiter.num_requeues("x") == 0


def test_with_max_wait_caps_and_delegates() -> None:
    inner = ItemExponentialFailureRateLimiter[str](1.0, 1000.0)
    limiter = WithMaxWaitRateLimiter[str](inner, 3.0)
    assert [limiter.when("x") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]
    assert limiter.num_requeues("x") == 4  # the inner limiter kept counting
    limiter.forget("x")
    assert inner.num_requeues("x") == 0
    with pytest.raises(ValueError, match="max_delay"):
        WithMaxWaitRateLimiter[str](inner, math.nan)


def test_default_controller_rate_limiter_values() -> None:
    clock = FakeClock(0.0)
    limiter: MaxOfRateLimiter[str] = default_controller_rate_limiter(clock=clock)
    # Per item: 5 ms doubling, 655.36 s at n = 18, capped at 1000 s from n = 19.
    per_item = [limiter.when("hot") for _ in range(19)]
    assert per_item[0] == 0.005 and per_item[1] == 0.010 and per_item[2] == 0.020
    assert per_item[17] == pytest.approx(655.36)
    assert per_item[18] == 1000.0
    limiter.forget("hot")
    assert limiter.num_requeues("hot") == 0
    # Overall bucket: 19 tokens used above; 81 more distinct items go through at the
    # per-item base delay, then 10 qps.
    assert [limiter.when(f"k{i}") for i in range(81)] == [0.005] * 81
    assert limiter.when("k-101") == pytest.approx(0.1)
    assert limiter.when("k-102") == pytest.approx(0.2)
    clock.step(0.3)  # three tokens back: debt -2 -> +1
    assert limiter.when("k-103") == 0.005


# -- a state machine over MaxOf(exponential, fast/slow, bucket) on a FakeClock ---------------

BASE, CAP = 0.005, 1.0
FAST, SLOW, MAX_FAST = 0.001, 0.5, 3
QPS, BURST = 10.0, 5


class LimiterMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(0.0)
        self.limiter = MaxOfRateLimiter[str](
            ItemExponentialFailureRateLimiter[str](BASE, CAP),
            ItemFastSlowRateLimiter[str](FAST, SLOW, MAX_FAST),
            BucketRateLimiter[str](QPS, BURST, clock=self.clock),
        )
        self.failures: dict[str, int] = {}
        self.tokens = Fraction(BURST)
        self.last: Fraction | None = None

    @rule(x=st.sampled_from("abc"))
    def when(self, x: str) -> None:
        n = self.failures.get(x, 0)
        self.failures[x] = n + 1
        exponential = min(Fraction(BASE) * 2**n, Fraction(CAP))
        fast_slow = Fraction(FAST) if n + 1 <= MAX_FAST else Fraction(SLOW)
        now = Fraction(self.clock.now())
        last = now if self.last is None else self.last
        self.tokens = min(Fraction(BURST), self.tokens + max(Fraction(0), now - last) * int(QPS))
        self.tokens -= 1
        self.last = now
        bucket = -self.tokens / int(QPS) if self.tokens < 0 else Fraction(0)
        expected = max(exponential, fast_slow, bucket)
        # Exact rationals here; x/time/rate truncates the bucket's delay to whole
        # nanoseconds after float arithmetic, so it may be up to ~1 ns short.
        assert self.limiter.when(x) == pytest.approx(float(expected), abs=2e-9)

    @rule(x=st.sampled_from("abc"))
    def forget(self, x: str) -> None:
        self.limiter.forget(x)
        self.failures.pop(x, None)

    @rule(dt=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.3, 1.0, 10.0]))
    def step(self, dt: float) -> None:
        self.clock.step(dt)

    @invariant()
    def requeues(self) -> None:
        for x in "abc":
            assert self.limiter.num_requeues(x) == self.failures.get(x, 0)


TestLimiterMachine = LimiterMachine.TestCase
TestLimiterMachine.settings = settings(max_examples=150, stateful_step_count=50, deadline=None)


# -- RateLimitingQueue --------------------------------------------------------------------------


def test_add_rate_limited_waits_for_the_limiters_delay(
    fake_clock: FakeClock, eventually: Eventually, rate_limited: RateLimited
) -> None:
    limiter = ItemExponentialFailureRateLimiter[str](1.0, 100.0)
    q = rate_limited(limiter)
    start = fake_clock.now()
    q.add_rate_limited("x")
    # RL-5: a delayed add, never "now", even for the first failure.
    assert len(q) == 0
    assert q.waiting() == {"x": start + 1.0}
    assert q.num_requeues("x") == 1
    # The limiter records a failure even though x is already waiting; earliest wins.
    q.add_rate_limited("x")
    assert q.num_requeues("x") == 2
    assert q.waiting() == {"x": start + 1.0}
    fake_clock.step(1.0)
    eventually(lambda: len(q) == 1, "x released after 1 s")
    assert q.get() == ("x", False)
    q.add_rate_limited("x")  # third failure: 4 s
    assert q.waiting() == {"x": start + 1.0 + 4.0}
    q.forget("x")
    assert q.num_requeues("x") == 0
    # forget does not remove x from the waiting room nor end its processing.
    assert "x" in q.waiting()
    assert q.queue.snapshot()[2] == {"x"}
    q.done("x")


def test_default_rate_limiting_queue_uses_the_controller_limiter(
    fake_clock: FakeClock, rate_limited: RateLimited
) -> None:
    q = rate_limited()
    start = fake_clock.now()
    for i in range(101):
        q.add_rate_limited(f"k{i}")
    waiting = q.waiting()
    assert waiting["k0"] == pytest.approx(start + 0.005)
    assert waiting["k99"] == pytest.approx(start + 0.005)
    assert waiting["k100"] == pytest.approx(start + 0.1)  # the 101st token


def test_add_rate_limited_counts_retries(fake_clock: FakeClock, shut_down_later: Later) -> None:
    provider = InMemoryMetricsProvider()
    q = RateLimitingQueue[str](
        ItemFastSlowRateLimiter[str](0.0, 1.0, 1),
        "rlq-retries",
        clock=fake_clock,
        metrics_provider=provider,
    )
    shut_down_later(q)
    q.add_rate_limited("x")  # 0 s: added at once, still a retry
    q.add_rate_limited("x")  # 1 s
    assert provider["rlq-retries"].retries.value == 2
    assert len(q) == 1
    q.shut_down()
    q.add_rate_limited("x")
    assert provider["rlq-retries"].retries.value == 2


def test_add_rate_limited_after_shut_down_still_consults_the_limiter(
    fake_clock: FakeClock,
) -> None:
    """client-go evaluates limiter.When(x) before AddAfter checks for shutdown."""
    q = RateLimitingQueue[str](ItemExponentialFailureRateLimiter[str](1.0, 10.0), clock=fake_clock)
    q.shut_down()
    q.add_rate_limited("x")
    assert q.num_requeues("x") == 1
    assert q.waiting() == {}
    assert q.get() == (None, True)


def test_canonical_worker_retries_with_backoff_then_forgets(
    fake_clock: FakeClock, eventually: Eventually, rate_limited: RateLimited
) -> None:
    """RL-7: get; done in finally; forget on success; add_rate_limited on error."""
    q = rate_limited(ItemExponentialFailureRateLimiter[str](1.0, 60.0))
    q.add("job")
    outcomes = [False, False, False, True]  # fails three times, then succeeds
    delays_seen: list[float] = []
    for ok in outcomes:
        eventually(lambda: len(q) == 1, "job available")
        item, shutdown = q.get()
        assert item == "job" and not shutdown
        try:
            if ok:
                q.forget(item)
            else:
                q.add_rate_limited(item)
                delay = q.waiting()[item] - fake_clock.now()
                delays_seen.append(delay)
        finally:
            q.done(item)
        if not ok:
            fake_clock.step(delays_seen[-1])
    assert delays_seen == [1.0, 2.0, 4.0]
    assert q.num_requeues("job") == 0
    assert len(q) == 0


# -- integer nanoseconds (issue 12): the arithmetic of client-go's time.Duration ----------


def test_bucket_refill_from_stepped_time_is_exact() -> None:
    """1 ms then 19 ms refill exactly two tokens at 100 qps: the third reservation waits
    nothing. Float seconds (0.02 - 0.001 as floats) left the bucket 1e-16 tokens short."""
    clock = FakeClock(0.0)
    bucket = BucketRateLimiter[str](100.0, 1, clock=clock)
    assert bucket.when("x") == 0.0
    clock.step(0.001)
    assert bucket.when("x") == 0.009  # 0.1 token back: 0.9 short
    clock.step(0.019)
    assert bucket.when("x") == 0.0
    assert bucket.when_ns("x") == 10_000_000


def test_limiters_answer_in_integer_nanoseconds() -> None:
    exponential = ItemExponentialFailureRateLimiter[str](0.005, 1000.0)
    assert [exponential.when_ns("x") for _ in range(3)] == [5_000_000, 10_000_000, 20_000_000]
    fast_slow = ItemFastSlowRateLimiter[str](0.001, 0.25, 1)
    assert [fast_slow.when_ns("x") for _ in range(2)] == [1_000_000, 250_000_000]
    capped = WithMaxWaitRateLimiter[str](ItemExponentialFailureRateLimiter[str](1.0, 10.0), 1.5)
    assert [capped.when_ns("x") for _ in range(2)] == [1_000_000_000, 1_500_000_000]
    # Seconds given to a constructor become the nearest nanosecond, once.
    assert ItemExponentialFailureRateLimiter[str](1e-10, 1.0).when_ns("x") == 0
    assert ItemExponentialFailureRateLimiter[str](2.6e-9, 1.0).when_ns("x") == 3


def test_rate_limited_delay_reached_by_steps_that_add_up(
    fake_clock: FakeClock, eventually: Eventually, rate_limited: RateLimited
) -> None:
    """A 10 ms delay from the limiter is reached by stepping 9 ms then 1 ms."""
    q = rate_limited(ItemExponentialFailureRateLimiter[str](0.01, 1.0))
    q.add_rate_limited("x")
    fake_clock.step(0.009)
    fake_clock.step(0.001)
    eventually(lambda: len(q) == 1, "x released at exactly 10 ms")


class _FloatOnly:
    """A limiter from elsewhere: ``when`` in float seconds, no ``when_ns``."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def when(self, item: str) -> float:
        return self.delay

    def forget(self, item: str) -> None:
        return None

    def num_requeues(self, item: str) -> int:
        return 0


@pytest.mark.parametrize(("delay", "waits"), [(0.25, True), (0.0, False), (-1.0, False)])
def test_a_limiter_with_when_only_still_works(
    fake_clock: FakeClock, rate_limited: RateLimited, delay: float, waits: bool
) -> None:
    q = rate_limited(_FloatOnly(delay))
    q.add_rate_limited("x")
    assert q.waiting() == ({"x": fake_clock.now() + delay} if waits else {})
    assert len(q) == (0 if waits else 1)
    q.rate_limiter = _FloatOnly(math.nan)
    with pytest.raises(ValueError, match="NaN"):
        q.add_rate_limited("y")


# -- the lean controller limiter against MaxOf(exponential, bucket) ------------------------


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("when"), st.sampled_from("abc")),
            st.tuples(st.just("forget"), st.sampled_from("abc")),
            st.tuples(st.just("step"), st.integers(0, 300_000_000)),
        ),
        max_size=200,
    )
)
def test_controller_limiter_equals_max_of_its_parts(steps: list[tuple[str, Any]]) -> None:
    lean_clock, plain_clock = FakeClock(0.0), FakeClock(0.0)
    lean: MaxOfRateLimiter[str] = default_controller_rate_limiter(clock=lean_clock)
    plain = MaxOfRateLimiter[str](
        ItemExponentialFailureRateLimiter[str](0.005, 1000.0),
        BucketRateLimiter[str](10.0, 100, clock=plain_clock),
    )
    for op, arg in steps:
        if op == "when":
            assert lean.when_ns(arg) == plain.when_ns(arg)
        elif op == "forget":
            lean.forget(arg)
            plain.forget(arg)
        else:
            lean_clock.step_ns(arg)
            plain_clock.step_ns(arg)
        for x in "abc":
            assert lean.num_requeues(x) == plain.num_requeues(x)
    # The parts stay usable on their own and see the same state.
    assert [type(p).__name__ for p in lean.limiters] == [type(p).__name__ for p in plain.limiters]
    assert lean.limiters[0].num_requeues("a") == plain.limiters[0].num_requeues("a")
