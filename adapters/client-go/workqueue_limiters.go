// The rate limiters of k8s.io/client-go/util/workqueue (default_rate_limiters.go), built
// from protocol limiter specs (docs/protocol.md, "Limiter specs").
package main

import (
	"math"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// limiterNames are the limiter names this adapter builds (every one the protocol has).
func limiterNames() []string {
	return []string{"bucket", "default_controller", "default_item_based", "exponential",
		"fast_slow", "max_of", "with_max_wait"}
}

// recorder remembers the last delay its limiter chose, so the adapter knows whether
// AddRateLimited sent waitingLoop an entry (a positive delay) or added at once.
type recorder struct {
	inner workqueue.TypedRateLimiter[string]
	last  time.Duration
}

func (r *recorder) When(item string) time.Duration {
	r.last = r.inner.When(item)
	return r.last
}
func (r *recorder) Forget(item string)          { r.inner.Forget(item) }
func (r *recorder) NumRequeues(item string) int { return r.inner.NumRequeues(item) }

// fakeClockBucket is client-go's TypedBucketRateLimiter with its one wall-clock read
// moved onto the fake clock. client-go's When is Limiter.Reserve().Delay(), which is
// ReserveN(time.Now(), 1).DelayFrom(time.Now()) in golang.org/x/time/rate; this When
// makes the same two calls with the fake clock's now for both times. The bucket
// arithmetic (refill, burst cap, debt, the delay's truncation to whole nanoseconds) is
// x/time/rate's own, reached through the *rate.Limiter that TypedBucketRateLimiter
// embeds; NumRequeues and Forget are client-go's (promoted, unchanged).
type fakeClockBucket struct {
	*workqueue.TypedBucketRateLimiter[string]
	clock clock.PassiveClock
}

func (b fakeClockBucket) When(string) time.Duration {
	now := b.clock.Now()
	return b.Limiter.ReserveN(now, 1).DelayFrom(now)
}

func integer(v any, what string) (int, error) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, refuse("bad_request", "%s must be an integer, got %v", what, v)
	}
	return int(f), nil
}

func number(v any, what string) (float64, error) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, refuse("bad_request", "%s must be a finite number, got %v", what, v)
	}
	return f, nil
}

// buildLimiter builds the limiter a spec names; bucket limiters read clk.
func buildLimiter(v any, clk clock.PassiveClock) (workqueue.TypedRateLimiter[string], error) {
	spec, ok := v.(map[string]any)
	if !ok {
		return nil, refuse("bad_request", "a limiter spec is an object, got %v", v)
	}
	num := func(key string) (time.Duration, error) { return duration(spec[key], key) }
	switch spec["name"] {
	case "exponential":
		base, err := num("base")
		if err != nil {
			return nil, err
		}
		max, err := num("max")
		if err != nil {
			return nil, err
		}
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max), nil
	case "fast_slow":
		fast, err := num("fast")
		if err != nil {
			return nil, err
		}
		slow, err := num("slow")
		if err != nil {
			return nil, err
		}
		n, err := integer(spec["max_fast"], "max_fast")
		if err != nil {
			return nil, err
		}
		return workqueue.NewTypedItemFastSlowRateLimiter[string](fast, slow, n), nil
	case "bucket":
		qps, err := number(spec["qps"], "qps")
		if err != nil {
			return nil, err
		}
		burst, err := integer(spec["burst"], "burst")
		if err != nil {
			return nil, err
		}
		inner := &workqueue.TypedBucketRateLimiter[string]{
			Limiter: rate.NewLimiter(rate.Limit(qps), burst)}
		return fakeClockBucket{inner, clk}, nil
	case "max_of":
		children, ok := spec["limiters"].([]any)
		if !ok {
			return nil, refuse("bad_request", "max_of needs a list 'limiters'")
		}
		var built []workqueue.TypedRateLimiter[string]
		for _, c := range children {
			l, err := buildLimiter(c, clk)
			if err != nil {
				return nil, err
			}
			built = append(built, l)
		}
		return workqueue.NewTypedMaxOfRateLimiter(built...), nil
	case "with_max_wait":
		inner, err := buildLimiter(spec["limiter"], clk)
		if err != nil {
			return nil, err
		}
		max, err := num("max")
		if err != nil {
			return nil, err
		}
		return workqueue.NewTypedWithMaxWaitRateLimiter(inner, max), nil
	case "default_controller":
		// client-go's own constructor: its bucket (10 qps, burst 100) reads the wall
		// clock, but an example makes fewer than 100 calls on one limiter, so that
		// bucket always answers 0 here, as it does on the fake clock.
		return workqueue.DefaultTypedControllerRateLimiter[string](), nil
	case "default_item_based":
		return workqueue.DefaultTypedItemBasedRateLimiter[string](), nil
	}
	return nil, refuse("unsupported", "limiter %v is not offered by this adapter", spec["name"])
}
