// The workqueue components: queue, delaying_queue, rate_limiting_queue, rate_limiter,
// driving k8s.io/client-go/util/workqueue itself (limiters: workqueue_limiters.go).
//
// The delaying queue moves due items from a goroutine (waitingLoop). The protocol
// requires that every effect of a request has happened before the answer, so after each
// request that wakes that goroutine the adapter waits until it is asleep again. It can
// tell without changing anything in client-go, from how waitingLoop uses the clock it is
// given (delaying_queue.go, waitingLoop):
//
//   - every iteration of its loop ends in one select whose operands Go evaluates, in
//     source order, on entering it; one operand is heartbeat.C(), the ticker the queue
//     got from clock.NewTicker(maxWait) when it was built. So each call of that C() says
//     "this iteration has moved every due entry into the queue, set its next timer, and
//     is about to block". The adapter's heartbeat never ticks (a 10 s safety net that
//     adds nothing while the timer works) and counts those calls;
//   - the loop wakes only for a new AddAfter entry, its timer, the heartbeat, or
//     ShutDown. So after an AddAfter with a positive delay (an entry is sent to the
//     loop), and after a clock step that reaches the loop's live timer (the target of its
//     last clock.NewTimer, if that is still in the future), the adapter waits for the
//     count to rise by one. The loop's wait is bounded by barrierTimeout, then the
//     request is answered with an "internal" error.
//
// Nothing is added to the queue's heap, so the order in which entries due at one
// instant leave it is client-go's own (invariant DQ-7): the adapter declares heap_order.
package main

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// heartbeatPeriod is client-go's maxWait: the period of the delaying queue's heartbeat
// ticker, which is how the adapter recognises that ticker among NewTicker calls.
const heartbeatPeriod = 10 * time.Second

// barrierTimeout bounds the wait for waitingLoop to settle.
const barrierTimeout = 5 * time.Second

// workqueueComponents is this file's registry entry (see registry in main.go).
func workqueueComponents() []component {
	queue := []string{"add", "get_nowait", "done", "len", "shut_down", "shutting_down",
		"drain_start", "drain_returned"}
	with := func(extra ...string) []string { return append(append([]string{}, queue...), extra...) }
	// observe: the no-argument read-only methods a call may carry (main.go, adapter.call;
	// docs/protocol.md "Observations carried by a call"); every queue has the drain pair.
	observe := func() []string { return []string{"len", "shutting_down", "drain_returned"} }
	return []component{
		{name: "queue", minProtocol: 1,
			capabilities: func() map[string]any {
				return map[string]any{"methods": queue, "observe": observe()}
			},
			create: newQueueInstance},
		{name: "delaying_queue", minProtocol: 1,
			capabilities: func() map[string]any {
				return map[string]any{"methods": with("add_after"), "heap_order": true,
					"observe": observe()}
			},
			create: newDelayingInstance},
		{name: "rate_limiting_queue", minProtocol: 1,
			capabilities: func() map[string]any {
				return map[string]any{
					"methods":    with("add_after", "add_rate_limited", "forget", "num_requeues"),
					"limiters":   limiterNames(),
					"heap_order": true,
					"observe":    observe(),
				}
			},
			create: newRateLimitingInstance},
		{name: "rate_limiter", minProtocol: 1,
			capabilities: func() map[string]any {
				return map[string]any{
					"methods":  []string{"when", "forget", "num_requeues"},
					"limiters": limiterNames(),
				}
			},
			create: newLimiterInstance},
	}
}

// ---------------------------------------------------------------- the clock

// syncClock is the example's FakeClock as one delaying queue sees it: it hands that
// queue a counting heartbeat and remembers the target of the queue's latest timer.
type syncClock struct {
	*clocktesting.FakeClock
	mu        sync.Mutex
	selects   int           // heartbeat.C() calls: waitingLoop iterations that ended
	wake      chan struct{} // signalled on every such call
	timerAt   time.Time     // target of the last timer waitingLoop created
	gotTicker bool
}

func newSyncClock(fake *clocktesting.FakeClock) *syncClock {
	return &syncClock{FakeClock: fake, wake: make(chan struct{}, 1)}
}

func (c *syncClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d) // registered with the fake clock before it is counted
	c.mu.Lock()
	c.timerAt = c.FakeClock.Now().Add(d)
	c.mu.Unlock()
	return t
}

// NewTicker gives the first ticker of heartbeatPeriod (the delaying queue's heartbeat)
// a counting channel that never ticks; any other ticker never ticks either.
func (c *syncClock) NewTicker(d time.Duration) clock.Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d == heartbeatPeriod && !c.gotTicker {
		c.gotTicker = true
		return heartbeat{c, make(chan time.Time)}
	}
	return deadTicker{make(chan time.Time)}
}

type heartbeat struct {
	c     *syncClock
	never chan time.Time
}

// C is evaluated by waitingLoop's select on entering it: count the iteration.
func (h heartbeat) C() <-chan time.Time {
	h.c.mu.Lock()
	h.c.selects++
	h.c.mu.Unlock()
	select {
	case h.c.wake <- struct{}{}:
	default:
	}
	return h.never
}
func (h heartbeat) Stop() {}

type deadTicker struct{ never chan time.Time }

func (t deadTicker) C() <-chan time.Time { return t.never }
func (t deadTicker) Stop()               {}

func (c *syncClock) state() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.selects, c.timerAt
}

// waitSelects waits until waitingLoop has ended n iterations.
func (c *syncClock) waitSelects(n int) error {
	deadline := time.NewTimer(barrierTimeout) // the wall clock: only a safety bound
	defer deadline.Stop()
	for {
		if got, _ := c.state(); got >= n {
			return nil
		}
		select {
		case <-c.wake:
		case <-deadline.C:
			return refuse("internal", "waitingLoop did not settle within %v", barrierTimeout)
		}
	}
}

// ---------------------------------------------------------------- instances

// queueInstance is any of the three queues (dq and rq nil where the component lacks
// them) or, with limiter set, the bare rate limiter.
type queueInstance struct {
	component string
	q         workqueue.TypedInterface[string]
	dq        workqueue.TypedDelayingInterface[string]
	rq        workqueue.TypedRateLimitingInterface[string]
	rec       *recorder // the rate-limiting queue's limiter, as the queue calls it
	clk       *syncClock
	drain     *drainer // set by drain_start
}

// drainer is one ShutDownWithDrain call running on a goroutine of its own bubble
// (informer_bubble.go). The call blocks in the queue's sync.Cond until nothing is in
// flight (or ShutDown cuts it short); inside a bubble that wait is durably blocking,
// so synctest.Wait on the bubble's root returns exactly when the drainer is waiting
// again or has returned: the barrier. Waking a bubbled Cond waiter from outside its
// bubble is a fatal error in Go, so once a drain has started every call of the
// instance runs on the bubble's root (call, close).
type drainer struct {
	b        *bubble
	returned atomic.Bool // set by the drainer goroutine after ShutDownWithDrain returned
}

func (in *queueInstance) startDrain() error {
	d := &drainer{b: newBubble()}
	in.drain = d
	q := in.q
	_, err := d.b.do(func() error {
		go func() {
			q.ShutDownWithDrain()
			d.returned.Store(true)
		}()
		return nil
	}, func() (any, error) { return nil, nil })
	return err
}

func newQueueInstance(_ *env, _ map[string]any) (instance, error) {
	return &queueInstance{component: "queue", q: workqueue.NewTyped[string]()}, nil
}

func newDelayingInstance(e *env, _ map[string]any) (instance, error) {
	in := &queueInstance{component: "delaying_queue", clk: newSyncClock(e.clock)}
	in.dq = workqueue.NewTypedDelayingQueueWithConfig(
		workqueue.TypedDelayingQueueConfig[string]{Clock: in.clk})
	in.q = in.dq
	return in, in.clk.waitSelects(1)
}

func newRateLimitingInstance(e *env, options map[string]any) (instance, error) {
	spec := options["limiter"]
	if spec == nil {
		spec = map[string]any{"name": "default_controller"}
	}
	l, err := buildLimiter(spec, e.clock)
	if err != nil {
		return nil, err
	}
	in := &queueInstance{component: "rate_limiting_queue", clk: newSyncClock(e.clock),
		rec: &recorder{inner: l}}
	in.rq = workqueue.NewTypedRateLimitingQueueWithConfig[string](in.rec,
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: in.clk})
	in.dq, in.q = in.rq, in.rq
	return in, in.clk.waitSelects(1)
}

func item(args map[string]any) (string, error) {
	s, ok := args["item"].(string)
	if !ok {
		return "", refuse("bad_request", "args.item must be a string")
	}
	return s, nil
}

// delayed runs an operation that may send waitingLoop an entry, then waits for the
// loop to take it (sent() says, after op, whether an entry was sent).
func (in *queueInstance) delayed(sent func() bool, op func()) error {
	before, _ := in.clk.state()
	running := !in.q.ShuttingDown()
	op()
	if running && sent() {
		return in.clk.waitSelects(before + 1)
	}
	return nil
}

func (in *queueInstance) call(method string, args map[string]any) (any, error) {
	d := in.drain
	switch {
	case method == "drain_start" && d != nil:
		return nil, refuse("bad_request", "drain_start: a ShutDownWithDrain was already started")
	case method == "drain_start":
		return nil, in.startDrain()
	case d == nil && method == "drain_returned":
		return false, nil
	case d == nil:
		return in.callQueue(method, args)
	}
	// A drain has started: run the call on the drainer's bubble root, then wait for
	// the bubble to be quiescent (the drainer waiting again, or returned) and answer.
	var res any
	return d.b.do(func() error {
		if method == "drain_returned" {
			return nil
		}
		var err error
		res, err = in.callQueue(method, args)
		return err
	}, func() (any, error) {
		if method == "drain_returned" {
			return d.returned.Load(), nil
		}
		return res, nil
	})
}

func (in *queueInstance) callQueue(method string, args map[string]any) (any, error) {
	switch method {
	case "add", "done", "forget", "num_requeues", "add_after", "add_rate_limited":
		it, err := item(args)
		if err != nil {
			return nil, err
		}
		switch method {
		case "add":
			in.q.Add(it)
			return nil, nil
		case "done":
			in.q.Done(it)
			return nil, nil
		case "add_after":
			if in.dq == nil {
				break
			}
			d, err := duration(args["delay"], "args.delay")
			if err != nil {
				return nil, err
			}
			return nil, in.delayed(func() bool { return d > 0 }, func() { in.dq.AddAfter(it, d) })
		case "add_rate_limited":
			if in.rq == nil {
				break
			}
			return nil, in.delayed(func() bool { return in.rec.last > 0 },
				func() { in.rq.AddRateLimited(it) })
		case "forget":
			if in.rq == nil {
				break
			}
			in.rq.Forget(it)
			return nil, nil
		case "num_requeues":
			if in.rq == nil {
				break
			}
			return in.rq.NumRequeues(it), nil
		}
	case "get_nowait":
		// Get would block on an empty queue that is not shutting down; nothing else
		// can add to it meanwhile (waitingLoop is asleep), so Len decides.
		if in.q.Len() == 0 && !in.q.ShuttingDown() {
			return map[string]any{"kind": "empty"}, nil
		}
		got, shutdown := in.q.Get()
		if shutdown {
			return map[string]any{"kind": "shutdown"}, nil
		}
		return map[string]any{"kind": "item", "item": got}, nil
	case "len":
		return in.q.Len(), nil
	case "shut_down":
		in.q.ShutDown()
		return nil, nil
	case "shutting_down":
		return in.q.ShuttingDown(), nil
	}
	return nil, refuse("unsupported", "%s has no method %q", in.component, method)
}

// beforeStep: the step wakes waitingLoop iff it reaches the loop's live timer (one
// whose target is still ahead of now; a fired timer is not replaced when nothing is
// left waiting).
func (in *queueInstance) beforeStep(now, target time.Time) func() error {
	if in.clk == nil || in.q.ShuttingDown() {
		return nil
	}
	n, at := in.clk.state()
	if !at.After(now) || at.After(target) {
		return nil
	}
	return func() error { return in.clk.waitSelects(n + 1) }
}

// close shuts the queue down (which ends the example's waitingLoop goroutine and cuts a
// drain short; ShutDown after ShutDownWithDrain is what stops a delaying queue's loop).
func (in *queueInstance) close() {
	d := in.drain
	if d == nil {
		in.q.ShutDown()
		return
	}
	_, _ = d.b.do(func() error { in.q.ShutDown(); return nil }, func() (any, error) { return nil, nil })
	d.b.close(d.returned.Load())
}

// limiterInstance is the bare rate limiter component.
type limiterInstance struct {
	limiter workqueue.TypedRateLimiter[string]
}

func newLimiterInstance(e *env, options map[string]any) (instance, error) {
	spec := options["limiter"]
	if spec == nil {
		spec = map[string]any{"name": "default_controller"}
	}
	l, err := buildLimiter(spec, e.clock)
	if err != nil {
		return nil, err
	}
	return &limiterInstance{l}, nil
}

func (in *limiterInstance) call(method string, args map[string]any) (any, error) {
	it, err := item(args)
	if err != nil {
		return nil, err
	}
	switch method {
	case "when":
		return seconds(in.limiter.When(it)), nil
	case "forget":
		in.limiter.Forget(it)
		return nil, nil
	case "num_requeues":
		return in.limiter.NumRequeues(it), nil
	}
	return nil, refuse("unsupported", "rate_limiter has no method %q", method)
}

func (in *limiterInstance) beforeStep(time.Time, time.Time) func() error { return nil }
func (in *limiterInstance) close()                                       {}

// seconds is a Duration as protocol seconds: whole nanoseconds divided by 1e9, so the
// harness rounds it back to the same nanosecond count.
func seconds(d time.Duration) float64 { return float64(d) / 1e9 }
