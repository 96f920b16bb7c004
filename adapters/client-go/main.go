// Command client-go-adapter drives k8s.io/client-go through the refimpl conformance
// protocol (JSON lines on stdin/stdout, see docs/protocol.md).
//
// This file is the protocol loop and the dispatch only: hello, reset, create, call and
// advance. The components live in their own files (workqueue*.go: queue, delaying_queue,
// rate_limiting_queue, rate_limiter) and are listed in registry() below, the one place
// where components are registered. Time is one k8s.io/utils/clock/testing FakeClock per
// example (created at reset), shared by every instance; it moves only on "advance".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// protocolVersions are the protocol versions this adapter speaks; hello answers with the
// one the harness asks for. Version 2 only adds the informer component.
var protocolVersions = []int{1, 2}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ---------------------------------------------------------------- the registry

// component is one registry entry: what hello declares for it and how create builds it.
type component struct {
	name string
	// minProtocol is the first protocol version that has this component (1, or 2 for
	// the informer); hello leaves it out when the harness speaks an older one.
	minProtocol int
	// capabilities is the component's entry in hello's "components" (methods, limiters,
	// heap_order, options, observe, ...); adapter.call reads its "observe" list.
	capabilities func() map[string]any
	// create builds an instance on the example's shared fake clock.
	create func(env *env, options map[string]any) (instance, error)
}

// registry lists every component this adapter offers. THE ONE PLACE WHERE COMPONENTS ARE
// REGISTERED: a new group of components (in its own files) adds one line here.
func registry() []component {
	var all []component
	all = append(all, workqueueComponents()...)     // workqueue.go
	all = append(all, extComponentsAsRegistry()...) // cache_components.go, informer.go (ext_bridge.go)
	return all
}

// env is what every instance of one example shares.
type env struct {
	clock *clocktesting.FakeClock
}

// instance is one created component instance.
type instance interface {
	// call runs one method; errors are refusals (their kind is answered).
	call(method string, args map[string]any) (any, error)
	// beforeStep is called before the fake clock moves from now to target; the function
	// it returns (nil: nothing to wait for) is called after the step and must return
	// once everything the step caused in this instance has happened (the protocol's
	// quiescence rule).
	beforeStep(now, target time.Time) func() error
	// close releases the instance's goroutines (at reset).
	close()
}

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
	// Observe is a call's optional "observe" list (docs/protocol.md, "Observations
	// carried by a call"); kept raw so that a malformed one is a bad_request answered
	// with the request's id.
	Observe json.RawMessage `json:"observe"`
}

type okResponse struct {
	ID     json.RawMessage `json:"id"`
	Result any             `json:"result"`
}

// observedResponse answers a call that carried "observe": the call's result and, beside
// it, what each named method answered after it.
type observedResponse struct {
	ID       json.RawMessage `json:"id"`
	Result   any             `json:"result"`
	Observed map[string]any  `json:"observed"`
}

// observed is what adapter.call returns for a call that carried "observe"; main turns it
// into an observedResponse.
type observed struct {
	result   any
	observed map[string]any
}

type errorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type errResponse struct {
	ID    json.RawMessage `json:"id"`
	Error errorBody       `json:"error"`
}

// errorOf is the protocol's error body for err: a refusal's kind, otherwise exception.
func errorOf(err error) errorBody {
	kind := "exception"
	if rf, ok := err.(refusal); ok {
		kind = rf.kind
	}
	return errorBody{kind, err.Error()}
}

// refusal is an error answered in-protocol with the given kind.
type refusal struct{ kind, msg string }

func (r refusal) Error() string { return r.msg }

func refuse(kind, format string, args ...any) refusal {
	return refusal{kind, fmt.Sprintf(format, args...)}
}

// duration reads a protocol duration (seconds) as a Go Duration, rounded to the
// nanosecond as the harness does (docs/protocol.md, "Durations and comparison").
func duration(v any, what string) (time.Duration, error) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, refuse("bad_request", "%s must be a finite number of seconds, got %v", what, v)
	}
	if math.Abs(f) > 9.2e9 {
		return 0, refuse("invalid_argument", "%s out of range: %v s", what, f)
	}
	return time.Duration(math.Round(f * 1e9)), nil
}

// ---------------------------------------------------------------- the adapter

type adapter struct {
	protocol   int
	components map[string]component
	env        *env
	instances  map[string]instance
	order      []string // instance names in creation order (advance visits them so)
	// observable: per instance, the methods its component declares under "observe" in
	// hello (docs/protocol.md, "Observations carried by a call"); a call may name only
	// those.
	observable map[string][]string
}

func newAdapter() *adapter {
	a := &adapter{protocol: 1, components: map[string]component{}}
	for _, c := range registry() {
		a.components[c.name] = c
	}
	a.reset()
	return a
}

func (a *adapter) reset() {
	for _, name := range a.order {
		a.instances[name].close()
	}
	a.env = &env{clock: clocktesting.NewFakeClock(epoch)}
	a.instances = map[string]instance{}
	a.order = nil
	a.observable = map[string][]string{}
}

func (a *adapter) create(r request) error {
	if r.Instance == "" {
		return refuse("bad_request", "create needs an instance name")
	}
	if _, ok := a.instances[r.Instance]; ok {
		return refuse("bad_request", "instance %q exists", r.Instance)
	}
	c, ok := a.components[r.Component]
	if !ok || c.minProtocol > a.protocol {
		return refuse("unsupported", "component %q is not offered by this adapter", r.Component)
	}
	options := r.Options
	if options == nil {
		options = map[string]any{}
	}
	in, err := c.create(a.env, options)
	if err != nil {
		return err
	}
	a.instances[r.Instance] = in
	a.order = append(a.order, r.Instance)
	a.observable[r.Instance] = observeList(c.capabilities())
	return nil
}

// observeList is the "observe" entry of a component's hello capabilities (nil: none).
func observeList(caps map[string]any) []string {
	list, _ := caps["observe"].([]string)
	return list
}

// call runs one method. With "observe" it then calls each named method (no arguments)
// on the same instance, in order, once the call has answered, i.e. after its
// quiescence wait (every instance's call returns only then), and answers the results
// beside the call's own (docs/protocol.md, "Observations carried by a call").
func (a *adapter) call(r request) (any, error) {
	in, ok := a.instances[r.Instance]
	if !ok {
		return nil, refuse("no_instance", "no instance %q", r.Instance)
	}
	args := r.Args
	if args == nil {
		args = map[string]any{}
	}
	var names []string
	if len(r.Observe) > 0 && string(r.Observe) != "null" {
		if err := json.Unmarshal(r.Observe, &names); err != nil {
			return nil, refuse("bad_request", "observe must be a list of method names: %v", err)
		}
		allowed := a.observable[r.Instance]
		for _, name := range names {
			if !slices.Contains(allowed, name) {
				return nil, refuse("bad_request",
					"observe: %q is not among the observable methods %v of this component", name, allowed)
			}
		}
	}
	result, err := in.call(r.Method, args)
	if err != nil || names == nil {
		return result, err
	}
	out := observed{result: result, observed: make(map[string]any, len(names))}
	for _, name := range names {
		got, err := observeOne(in, name)
		if err != nil {
			out.observed[name] = map[string]any{"error": errorOf(err)}
		} else {
			out.observed[name] = got
		}
	}
	return out, nil
}

// observeOne calls one observed method; a panic is that method's exception, not the
// whole request's.
func observeOne(in instance, name string) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = refuse("exception", "panic: %v\n%s", p, debug.Stack())
		}
	}()
	return in.call(name, map[string]any{})
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
	now := a.env.clock.Now()
	target := now.Add(d)
	var waits []func() error
	for _, name := range a.order {
		if w := a.instances[name].beforeStep(now, target); w != nil {
			waits = append(waits, w)
		}
	}
	a.env.clock.Step(d)
	for _, w := range waits {
		if err := w(); err != nil {
			return err
		}
	}
	return nil
}

func (a *adapter) hello(r request) (any, error) {
	speaks := false
	for _, v := range protocolVersions {
		speaks = speaks || v == r.Protocol
	}
	if !speaks {
		return nil, refuse("unsupported", "this adapter speaks protocols %v", protocolVersions)
	}
	a.protocol = r.Protocol
	components := map[string]any{}
	names := make([]string, 0, len(a.components))
	for name := range a.components {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if c := a.components[name]; c.minProtocol <= a.protocol {
			components[name] = c.capabilities()
		}
	}
	return map[string]any{
		"protocol":       a.protocol,
		"name":           "client-go-adapter",
		"version":        "0.3.0",
		"implementation": "k8s.io/client-go " + moduleVersion("k8s.io/client-go"),
		"components":     components,
	}, nil
}

func (a *adapter) handle(r request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = refuse("exception", "panic: %v\n%s", p, debug.Stack())
		}
	}()
	switch r.Op {
	case "hello":
		return a.hello(r)
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

// moduleVersion is the version of a dependency as the binary's build info records it
// (the go.mod pin).
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				if dep.Replace != nil {
					return dep.Version + " (replaced by " + dep.Replace.Path + ")"
				}
				return dep.Version
			}
		}
	}
	return "(unknown version)"
}

// respond answers one request line with one response line (no newline).
func (a *adapter) respond(text []byte) []byte {
	var r request
	var reply any
	if err := json.Unmarshal(text, &r); err != nil {
		reply = errResponse{json.RawMessage("null"), errorBody{"bad_request", err.Error()}}
	} else {
		id := r.ID
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		result, err := a.handle(r)
		if err != nil {
			reply = errResponse{id, errorOf(err)}
		} else if o, ok := result.(observed); ok {
			reply = observedResponse{id, o.result, o.observed}
		} else {
			reply = okResponse{id, result}
		}
	}
	line, err := json.Marshal(reply)
	if err != nil {
		line = []byte(`{"id":null,"error":{"kind":"internal","message":"cannot encode"}}`)
	}
	return line
}

// usage: bin/adapter [--wire [--quiescence SECONDS]]; --wire offers only the wire-mode
// informer (wire.go), --quiescence the convergence bound it declares.
func main() {
	a := newAdapter()
	if len(os.Args) > 1 {
		wire, err := wireFlags(os.Args[1:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "usage: adapter [--wire [--quiescence SECONDS]]:", err)
			os.Exit(2)
		}
		a.components = map[string]component{"informer": wire}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20+2)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		out.Write(a.respond(in.Bytes()))
		out.WriteByte('\n')
		out.Flush()
	}
}
