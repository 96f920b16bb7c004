// Command client-go-adapter drives k8s.io/client-go's workqueue through the refimpl
// conformance protocol (JSON lines on stdin/stdout, see docs/protocol.md).
//
// Components: queue, delaying_queue, rate_limiting_queue, rate_limiter. Time is a
// k8s.io/utils/clock/testing FakeClock: it moves only on "advance".
//
// The delaying queue runs a goroutine (waitingLoop). The protocol requires that every
// effect of a request has happened before the answer, so after each request that can
// wake that goroutine the adapter waits for it to go back to sleep. It can tell,
// because of two facts about waitingLoop: it calls clock.NewTimer once per iteration
// whenever something is waiting, and it is woken only by a new AddAfter entry, by
// its timer, by its heartbeat ticker or by ShutDown. The adapter (1) keeps a sentinel
// item waiting about 200 years in the future, so the heap is never empty and every
// iteration ends in exactly one NewTimer; (2) hands the queue a heartbeat ticker that
// never ticks (a 10 s safety net that changes nothing when the timer works); and
// (3) after an AddAfter with a positive delay, or a clock step that reaches the
// current timer, waits for the NewTimer count to go up by one. The sentinel is never
// due within a run (the adapter refuses to advance past 100 years).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	protocolVersion = 2
	sentinel        = "\x00conform-sentinel"
	sentinelDelay   = 200 * 365 * 24 * time.Hour
	maxAdvance      = 100 * 365 * 24 * time.Hour
	barrierTimeout  = 5 * time.Second
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// versionOverride names the client-go version when the binary carries no module
// information (set with -ldflags "-X main.versionOverride=...").
var versionOverride = ""

// ---------------------------------------------------------------- protocol types

type request struct {
	ID        json.RawMessage `json:"id"`
	Op        string          `json:"op"`
	Protocol  int             `json:"protocol"`
	Instance  string          `json:"instance"`
	Component string          `json:"component"`
	Options   map[string]any  `json:"options"`
	Method    string          `json:"method"`
	Args      map[string]any  `json:"args"`
	Seconds   *float64        `json:"seconds"`
}

type okResponse struct {
	ID     json.RawMessage `json:"id"`
	Result any             `json:"result"`
}

type errorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type errResponse struct {
	ID    json.RawMessage `json:"id"`
	Error errorBody       `json:"error"`
}

// refusal is an error answered in-protocol with the given kind.
type refusal struct{ kind, msg string }

func (r refusal) Error() string { return r.msg }

func refuse(kind, format string, args ...any) refusal {
	return refusal{kind, fmt.Sprintf(format, args...)}
}

// ---------------------------------------------------------------- the clock

// deadTicker never ticks: the delaying queue's heartbeat is a safety net that adds
// nothing when its timer works, and it would wake the loop at times we cannot see.
type deadTicker struct{ c chan time.Time }

func (t deadTicker) C() <-chan time.Time { return t.c }
func (t deadTicker) Stop()               {}

// syncClock is the shared FakeClock as one delaying queue sees it, counting the
// timers that queue's waitingLoop creates.
type syncClock struct {
	*clocktesting.FakeClock
	mu         sync.Mutex
	timers     int
	lastTarget time.Time
}

func (c *syncClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d) // registered with the fake clock before we count it
	c.mu.Lock()
	c.timers++
	c.lastTarget = c.FakeClock.Now().Add(d)
	c.mu.Unlock()
	return t
}

func (c *syncClock) NewTicker(time.Duration) clock.Ticker {
	return deadTicker{make(chan time.Time)}
}

func (c *syncClock) count() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timers, c.lastTarget
}

// waitTimers waits until waitingLoop has created at least n timers.
func (c *syncClock) waitTimers(n int) error {
	deadline := time.Now().Add(barrierTimeout)
	for {
		if got, _ := c.count(); got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return refuse("internal", "waitingLoop did not settle within %v", barrierTimeout)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// ---------------------------------------------------------------- rate limiters

// recorder remembers the last delay its limiter chose, so the adapter knows whether
// AddRateLimited handed waitingLoop an entry.
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

func duration(v any, what string) (time.Duration, error) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, refuse("bad_request", "%s must be a number of seconds, got %v", what, v)
	}
	return time.Duration(math.Round(f * 1e9)), nil
}

func buildLimiter(v any) (workqueue.TypedRateLimiter[string], error) {
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
		n, ok := spec["max_fast"].(float64)
		if !ok {
			return nil, refuse("bad_request", "fast_slow needs max_fast")
		}
		return workqueue.NewTypedItemFastSlowRateLimiter[string](fast, slow, int(n)), nil
	case "max_of":
		children, ok := spec["limiters"].([]any)
		if !ok {
			return nil, refuse("bad_request", "max_of needs a list 'limiters'")
		}
		var built []workqueue.TypedRateLimiter[string]
		for _, c := range children {
			l, err := buildLimiter(c)
			if err != nil {
				return nil, err
			}
			built = append(built, l)
		}
		return workqueue.NewTypedMaxOfRateLimiter(built...), nil
	case "with_max_wait":
		inner, err := buildLimiter(spec["limiter"])
		if err != nil {
			return nil, err
		}
		max, err := num("max")
		if err != nil {
			return nil, err
		}
		return workqueue.NewTypedWithMaxWaitRateLimiter(inner, max), nil
	case "default_controller":
		return workqueue.DefaultTypedControllerRateLimiter[string](), nil
	case "default_item_based":
		return workqueue.DefaultTypedItemBasedRateLimiter[string](), nil
	}
	// "bucket" is left out on purpose: TypedBucketRateLimiter reads the wall clock
	// (rate.Limiter.Reserve uses time.Now), so no fake clock can drive it.
	return nil, refuse("unsupported", "limiter %v is not offered by this adapter", spec["name"])
}

// ---------------------------------------------------------------- instances

type instance struct {
	component string
	q         workqueue.TypedInterface[string]
	dq        workqueue.TypedDelayingInterface[string]
	rq        workqueue.TypedRateLimitingInterface[string]
	limiter   workqueue.TypedRateLimiter[string]
	rec       *recorder
	clk       *syncClock
	shut      bool
	ext       extInstance // a component registered in extComponents (cache_*.go, informer*.go)
}

type adapter struct {
	protocol  int // the version agreed in hello
	fake      *clocktesting.FakeClock
	instances map[string]*instance
}

func newAdapter() *adapter {
	return &adapter{fake: clocktesting.NewFakeClock(epoch), instances: map[string]*instance{}}
}

func (a *adapter) reset() {
	for _, in := range a.instances {
		if in.ext != nil {
			in.ext.close()
		}
		if in.q != nil && !in.q.ShuttingDown() {
			in.q.ShutDown() // ends waitingLoop goroutines of the last example
		}
	}
	a.fake = clocktesting.NewFakeClock(epoch)
	a.instances = map[string]*instance{}
}

func (a *adapter) create(r request) error {
	if r.Instance == "" {
		return refuse("bad_request", "create needs an instance name")
	}
	if _, ok := a.instances[r.Instance]; ok {
		return refuse("bad_request", "instance %q exists", r.Instance)
	}
	in := &instance{component: r.Component}
	limiterSpec := r.Options["limiter"]
	if limiterSpec == nil {
		limiterSpec = map[string]any{"name": "default_controller"}
	}
	switch r.Component {
	case "queue":
		in.q = workqueue.NewTyped[string]()
	case "delaying_queue":
		in.clk = &syncClock{FakeClock: a.fake}
		in.dq = workqueue.NewTypedDelayingQueueWithConfig(
			workqueue.TypedDelayingQueueConfig[string]{Clock: in.clk})
		in.q = in.dq
	case "rate_limiting_queue":
		l, err := buildLimiter(limiterSpec)
		if err != nil {
			return err
		}
		in.rec = &recorder{inner: l}
		in.clk = &syncClock{FakeClock: a.fake}
		in.rq = workqueue.NewTypedRateLimitingQueueWithConfig[string](in.rec,
			workqueue.TypedRateLimitingQueueConfig[string]{Clock: in.clk})
		in.dq, in.q = in.rq, in.rq
	case "rate_limiter":
		l, err := buildLimiter(limiterSpec)
		if err != nil {
			return err
		}
		in.limiter = l
	default:
		c, ok := extComponents[r.Component]
		if !ok || a.protocol < c.minProtocol {
			return refuse("unsupported", "component %q is not offered by this adapter", r.Component)
		}
		ext, err := c.create(r.Options)
		if err != nil {
			return err
		}
		in.ext = ext
	}
	if in.dq != nil {
		in.dq.AddAfter(sentinel, sentinelDelay)
		if err := in.clk.waitTimers(1); err != nil {
			return err
		}
	}
	a.instances[r.Instance] = in
	return nil
}

func item(args map[string]any) (string, error) {
	s, ok := args["item"].(string)
	if !ok {
		return "", refuse("bad_request", "args.item must be a string")
	}
	if s == sentinel {
		return "", refuse("invalid_argument", "that item is reserved by the adapter")
	}
	return s, nil
}

// delayed runs an operation that may hand waitingLoop an entry, then waits for it.
func (in *instance) delayed(willWake func() bool, op func()) error {
	before, _ := in.clk.count()
	running := !in.q.ShuttingDown()
	op()
	if running && willWake() {
		return in.clk.waitTimers(before + 1)
	}
	return nil
}

func (a *adapter) call(r request) (any, error) {
	in, ok := a.instances[r.Instance]
	if !ok {
		return nil, refuse("no_instance", "no instance %q", r.Instance)
	}
	args := r.Args
	if in.ext != nil {
		return in.ext.call(r.Method, args)
	}
	if in.limiter != nil { // the bare rate limiter
		it, err := item(args)
		if err != nil {
			return nil, err
		}
		switch r.Method {
		case "when":
			return float64(in.limiter.When(it)) / 1e9, nil
		case "forget":
			in.limiter.Forget(it)
			return nil, nil
		case "num_requeues":
			return in.limiter.NumRequeues(it), nil
		}
		return nil, refuse("unsupported", "rate_limiter has no %q", r.Method)
	}
	switch r.Method {
	case "add", "done", "forget", "num_requeues", "add_after", "add_rate_limited":
		it, err := item(args)
		if err != nil {
			return nil, err
		}
		switch r.Method {
		case "add":
			in.q.Add(it)
			return nil, nil
		case "done":
			in.q.Done(it)
			return nil, nil
		case "add_after":
			if in.dq == nil {
				return nil, refuse("unsupported", "%s has no add_after", in.component)
			}
			d, err := duration(args["delay"], "args.delay")
			if err != nil {
				return nil, err
			}
			return nil, in.delayed(func() bool { return d > 0 }, func() { in.dq.AddAfter(it, d) })
		}
		if in.rq == nil {
			return nil, refuse("unsupported", "%s has no %s", in.component, r.Method)
		}
		switch r.Method {
		case "add_rate_limited":
			return nil, in.delayed(func() bool { return in.rec.last > 0 },
				func() { in.rq.AddRateLimited(it) })
		case "forget":
			in.rq.Forget(it)
			return nil, nil
		default:
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
		in.shut = true
		return nil, nil
	case "shutting_down":
		return in.q.ShuttingDown(), nil
	}
	return nil, refuse("unsupported", "%s has no %q", in.component, r.Method)
}

func (a *adapter) advance(r request) error {
	if r.Seconds == nil {
		return refuse("bad_request", "advance needs seconds")
	}
	d, err := duration(*r.Seconds, "seconds")
	if err != nil {
		return err
	}
	if d < 0 {
		return refuse("bad_request", "the clock cannot go backwards")
	}
	if a.fake.Since(epoch)+d > maxAdvance {
		return refuse("invalid_argument", "this adapter keeps time below 100 years")
	}
	target := a.fake.Now().Add(d)
	type pending struct {
		in     *instance
		before int
	}
	var wake []pending
	for _, in := range a.instances {
		if in.clk == nil || in.q.ShuttingDown() {
			continue
		}
		n, last := in.clk.count()
		if !last.After(target) { // the current timer fires at this step
			wake = append(wake, pending{in, n})
		}
	}
	a.fake.Step(d)
	for _, p := range wake {
		if err := p.in.clk.waitTimers(p.before + 1); err != nil {
			return err
		}
	}
	for _, in := range a.instances {
		if in.ext != nil {
			if err := in.ext.advance(d); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *adapter) handle(r request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = refuse("exception", "panic: %v\n%s", p, debug.Stack())
		}
	}()
	switch r.Op {
	case "hello":
		if r.Protocol != 1 && r.Protocol != protocolVersion {
			return nil, refuse("unsupported", "this adapter speaks protocols 1 and 2")
		}
		a.protocol = r.Protocol
		return hello(r.Protocol), nil
	case "reset":
		a.reset()
		return nil, nil
	case "create":
		return nil, a.create(r)
	case "call":
		return a.call(r)
	case "advance":
		return nil, a.advance(r)
	}
	return nil, refuse("bad_request", "unknown op %q", r.Op)
}

func hello(protocol int) map[string]any {
	queue := []string{"add", "get_nowait", "done", "len", "shut_down", "shutting_down"}
	limiters := []string{"default_controller", "default_item_based", "exponential",
		"fast_slow", "max_of", "with_max_wait"}
	reply := map[string]any{
		"protocol":       protocol,
		"name":           "client-go-adapter",
		"version":        "0.1.0",
		"implementation": "k8s.io/client-go " + clientGoVersion(),
		"components": map[string]any{
			"queue":          map[string]any{"methods": queue},
			"delaying_queue": map[string]any{"methods": append(append([]string{}, queue...), "add_after")},
			"rate_limiting_queue": map[string]any{
				"methods": append(append([]string{}, queue...),
					"add_after", "add_rate_limited", "forget", "num_requeues"),
				"limiters": limiters,
			},
			"rate_limiter": map[string]any{
				"methods":  []string{"when", "forget", "num_requeues"},
				"limiters": limiters,
			},
		},
	}
	extHello(reply["components"].(map[string]any), protocol)
	return reply
}

func clientGoVersion() string {
	if versionOverride != "" {
		return versionOverride
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/client-go" {
				if dep.Replace != nil {
					return dep.Version + " (replaced by " + dep.Replace.Path + ")"
				}
				return dep.Version
			}
		}
	}
	return "(unknown version)"
}

func main() {
	a := newAdapter()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20+2)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var r request
		var reply any
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			reply = errResponse{json.RawMessage("null"), errorBody{"bad_request", err.Error()}}
		} else {
			id := r.ID
			if len(id) == 0 {
				id = json.RawMessage("null")
			}
			result, err := a.handle(r)
			if err != nil {
				kind := "exception"
				if rf, ok := err.(refusal); ok {
					kind = rf.kind
				}
				reply = errResponse{id, errorBody{kind, err.Error()}}
			} else {
				reply = okResponse{id, result}
			}
		}
		line, err := json.Marshal(reply)
		if err != nil {
			line = []byte(`{"id":null,"error":{"kind":"internal","message":"cannot encode"}}`)
		}
		out.Write(line)
		out.WriteByte('\n')
		out.Flush()
	}
}
