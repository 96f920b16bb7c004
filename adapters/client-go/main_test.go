// Tests of the two optional protocol features of docs/protocol.md that the request
// dispatch and the RealFIFO add: observations carried by a call ("Observations carried
// by a call") and pop_batch_nowait ("Methods for spec-driven walks"). Requests go
// through adapter.respond, the same path as the binary's stdin lines. (The drain methods
// need the informer's synctest host, so they are checked through the binary, not here.)
package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ask sends one request and decodes the response line.
func ask(t *testing.T, a *adapter, req map[string]any) map[string]any {
	t.Helper()
	line, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var resp map[string]any
	if err := json.Unmarshal(a.respond(line), &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func call(instance, method string, args map[string]any, observe ...string) map[string]any {
	if args == nil {
		args = map[string]any{}
	}
	req := map[string]any{"id": 1, "op": "call", "instance": instance, "method": method, "args": args}
	if observe != nil {
		req["observe"] = observe
	}
	return req
}

func create(instance, component string, options map[string]any) map[string]any {
	return map[string]any{"id": 1, "op": "create", "instance": instance,
		"component": component, "options": options}
}

func advance(seconds float64) map[string]any {
	return map[string]any{"id": 1, "op": "advance", "seconds": seconds}
}

// started is an adapter after a hello for protocol 2.
func started(t *testing.T) *adapter {
	t.Helper()
	a := newAdapter()
	if resp := ask(t, a, map[string]any{"id": 0, "op": "hello", "protocol": 2}); resp["error"] != nil {
		t.Fatalf("hello: %v", resp)
	}
	return a
}

func obj(ns, name, rv string) map[string]any {
	return map[string]any{"namespace": ns, "name": name, "rv": rv, "labels": map[string]any{}}
}

func objArg(ns, name, rv string) map[string]any { return map[string]any{"obj": obj(ns, name, rv)} }

// mustOK is the result of a response that must not be an error.
func mustOK(t *testing.T, resp map[string]any) any {
	t.Helper()
	if resp["error"] != nil {
		t.Fatalf("unexpected error: %v", resp["error"])
	}
	return resp["result"]
}

func errorKind(resp map[string]any) string {
	e, _ := resp["error"].(map[string]any)
	kind, _ := e["kind"].(string)
	return kind
}

func TestHelloDeclaresObserveAndPopBatch(t *testing.T) {
	a := newAdapter()
	hello := mustOK(t, ask(t, a, map[string]any{"id": 0, "op": "hello", "protocol": 2}))
	components := hello.(map[string]any)["components"].(map[string]any)
	want := map[string][]any{
		"queue":               {"len", "shutting_down", "drain_returned"},
		"delaying_queue":      {"len", "shutting_down", "drain_returned"},
		"rate_limiting_queue": {"len", "shutting_down", "drain_returned"},
		"delta_fifo":          {"has_synced", "is_closed"},
		"real_fifo":           {"has_synced", "is_closed"},
		"store":               nil,
		"rate_limiter":        nil,
		"informer":            nil,
	}
	for name, observe := range want {
		caps := components[name].(map[string]any)
		got, _ := caps["observe"].([]any)
		if !reflect.DeepEqual(got, observe) {
			t.Errorf("%s: observe %v, want %v", name, got, observe)
		}
		methods, _ := caps["methods"].([]any)
		for _, m := range got {
			if !containsAny(methods, m) {
				t.Errorf("%s: observable %v is not among its methods", name, m)
			}
		}
	}
	realMethods := components["real_fifo"].(map[string]any)["methods"].([]any)
	deltaMethods := components["delta_fifo"].(map[string]any)["methods"].([]any)
	if !containsAny(realMethods, "pop_batch_nowait") || containsAny(deltaMethods, "pop_batch_nowait") {
		t.Errorf("pop_batch_nowait must be declared for real_fifo only: %v / %v", realMethods, deltaMethods)
	}
}

func containsAny(list []any, v any) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// script is a sequence of requests; calls with "observe" are the ones checked.
type script []map[string]any

// TestObserveEqualsSeparateCalls: what a call observes is exactly what the observed
// methods answer as requests of their own right after it (the protocol's definition),
// checked on one adapter sending "observe" and one sending the checks separately.
func TestObserveEqualsSeparateCalls(t *testing.T) {
	scripts := map[string]script{
		"delaying_queue": {
			create("q", "delaying_queue", map[string]any{}),
			call("q", "add", map[string]any{"item": "a"}, "len"),
			call("q", "add_after", map[string]any{"item": "b", "delay": 1.0}, "len", "shutting_down"),
			advance(1),
			call("q", "get_nowait", nil, "len", "shutting_down", "drain_returned"),
			call("q", "add", map[string]any{"item": "a"}, "len"),
			call("q", "done", map[string]any{"item": "a"}, "len"),
			call("q", "shut_down", nil, "shutting_down", "len", "drain_returned"),
			call("q", "get_nowait", nil, "len"),
		},
		"rate_limiting_queue": {
			create("r", "rate_limiting_queue", map[string]any{
				"limiter": map[string]any{"name": "exponential", "base": 0.005, "max": 1000.0}}),
			call("r", "add_rate_limited", map[string]any{"item": "a"}, "len"),
			advance(0.005),
			call("r", "len", nil, "len", "shutting_down"),
		},
		"real_fifo": {
			create("f", "real_fifo", map[string]any{"atomic": false}),
			call("f", "has_synced", nil, "has_synced"),
			call("f", "replace", map[string]any{"objs": []any{obj("", "a", "1"), obj("", "b", "2")}, "rv": "3"},
				"has_synced", "is_closed"),
			call("f", "pop_nowait", nil, "has_synced"),
			call("f", "pop_batch_nowait", nil, "is_closed", "has_synced"),
			call("f", "close", nil, "is_closed"),
		},
		"real_fifo atomic": {
			create("g", "real_fifo", map[string]any{"atomic": true}),
			call("g", "replace", map[string]any{"objs": []any{obj("", "a", "1")}, "rv": "3"}, "has_synced"),
			call("g", "add", objArg("", "b", "4"), "has_synced"),
			call("g", "pop_begin", nil, "has_synced", "is_closed"),
			call("g", "pop_end", nil, "has_synced"),
		},
		"delta_fifo": {
			create("d", "delta_fifo", map[string]any{}),
			call("d", "add", objArg("x", "a", "1"), "has_synced", "is_closed"),
			call("d", "pop_nowait", nil, "has_synced"),
		},
	}
	for name, s := range scripts {
		t.Run(name, func(t *testing.T) {
			carried, separate := started(t), started(t)
			checked := 0
			for _, req := range s {
				names, _ := req["observe"].([]string)
				got := ask(t, carried, req)
				plain := map[string]any{}
				for k, v := range req {
					if k != "observe" {
						plain[k] = v
					}
				}
				want := ask(t, separate, plain)
				if !reflect.DeepEqual(got["result"], want["result"]) || !reflect.DeepEqual(got["error"], want["error"]) {
					t.Fatalf("%v: %v, without observe %v", req, got, want)
				}
				if names == nil {
					if _, has := got["observed"]; has {
						t.Fatalf("%v: observed without observe: %v", req, got)
					}
					continue
				}
				observed, _ := got["observed"].(map[string]any)
				if len(observed) != len(names) {
					t.Fatalf("%v: observed %v", req, got["observed"])
				}
				for _, m := range names {
					alone := mustOK(t, ask(t, separate, call(req["instance"].(string), m, nil)))
					if !reflect.DeepEqual(observed[m], alone) {
						t.Errorf("%v: observed %s = %v, as a request of its own %v", req, m, observed[m], alone)
					}
					checked++
				}
			}
			if checked == 0 {
				t.Fatal("nothing observed")
			}
		})
	}
}

// TestObserveNotDeclaredRefusesTheWholeCall: a name outside the component's list is
// bad_request, and the call itself does not run.
func TestObserveNotDeclaredRefusesTheWholeCall(t *testing.T) {
	a := started(t)
	mustOK(t, ask(t, a, create("q", "queue", map[string]any{})))
	mustOK(t, ask(t, a, create("s", "store", map[string]any{})))
	for _, bad := range [][]string{{"has_synced"}, {"len", "get_nowait"}, {"nope"}} {
		resp := ask(t, a, call("q", "add", map[string]any{"item": "a"}, bad...))
		if errorKind(resp) != "bad_request" || resp["observed"] != nil {
			t.Errorf("observe %v: %v, want a bad_request alone", bad, resp)
		}
	}
	if n := mustOK(t, ask(t, a, call("q", "len", nil))); n != 0.0 {
		t.Errorf("a refused call ran: len %v", n)
	}
	if resp := ask(t, a, call("s", "add", objArg("", "a", "1"), "len")); errorKind(resp) != "bad_request" {
		t.Errorf("store (no observe list): %v", resp)
	}
	if keys := mustOK(t, ask(t, a, call("s", "list_keys", nil))); len(keys.([]any)) != 0 {
		t.Errorf("a refused call ran: %v", keys)
	}
	req := call("q", "add", map[string]any{"item": "a"})
	req["observe"] = "len"
	if resp := ask(t, a, req); errorKind(resp) != "bad_request" || resp["id"] != 1.0 {
		t.Errorf("observe not a list: %v", resp)
	}
	empty := ask(t, a, call("q", "len", nil, []string{}...))
	if empty["result"] != 0.0 || !reflect.DeepEqual(empty["observed"], map[string]any{}) {
		t.Errorf("observe []: %v", empty)
	}
}

// TestObserveAfterAFailedCall: the response is the call's error and nothing else.
func TestObserveAfterAFailedCall(t *testing.T) {
	a := started(t)
	mustOK(t, ask(t, a, create("q", "queue", map[string]any{})))
	resp := ask(t, a, call("q", "add", map[string]any{}, "len"))
	if errorKind(resp) != "bad_request" {
		t.Fatalf("add without an item: %v", resp)
	}
	for _, k := range []string{"result", "observed"} {
		if _, has := resp[k]; has {
			t.Errorf("an error response carries %q: %v", k, resp)
		}
	}
}

// failing is an instance whose "broken" method always fails.
type failing struct{ calls []string }

func (f *failing) call(method string, _ map[string]any) (any, error) {
	f.calls = append(f.calls, method)
	if method == "broken" {
		return nil, refuse("invalid_argument", "broken on purpose")
	}
	return len(f.calls), nil
}
func (f *failing) beforeStep(time.Time, time.Time) func() error { return nil }
func (f *failing) close()                                       {}

// TestAnObservedFailureTakesItsPlace: an observed method's error is put in its place;
// the other observations and the call's result stand; the methods run in order.
func TestAnObservedFailureTakesItsPlace(t *testing.T) {
	a := started(t)
	f := &failing{}
	a.instances["x"], a.observable["x"] = f, []string{"first", "broken", "last"}
	a.order = append(a.order, "x")
	resp := ask(t, a, call("x", "run", nil, "first", "broken", "last"))
	want := map[string]any{
		"id":     1.0,
		"result": 1.0,
		"observed": map[string]any{
			"first":  2.0,
			"broken": map[string]any{"error": map[string]any{"kind": "invalid_argument", "message": "broken on purpose"}},
			"last":   4.0,
		},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("got %v, want %v", resp, want)
	}
	if strings.Join(f.calls, " ") != "run first broken last" {
		t.Errorf("calls %v", f.calls)
	}
}

// popBatch runs pop_batch_nowait and returns its kind, the deltas as "Type ns/name@rv"
// (or just the type for the atomic markers) and initial.
func popBatch(t *testing.T, a *adapter, instance string) (string, []string, any) {
	t.Helper()
	res := mustOK(t, ask(t, a, call(instance, "pop_batch_nowait", nil))).(map[string]any)
	kind := res["kind"].(string)
	var deltas []string
	list, _ := res["deltas"].([]any)
	for _, d := range list {
		d := d.(map[string]any)
		o := d["object"].(map[string]any)
		s := d["type"].(string)
		if name, ok := o["name"]; ok {
			s += " " + o["namespace"].(string) + "/" + name.(string) + "@" + o["rv"].(string)
		}
		deltas = append(deltas, s)
	}
	return kind, deltas, res["initial"]
}

func expectPop(t *testing.T, a *adapter, instance, kind string, deltas []string, initial any) {
	t.Helper()
	gk, gd, gi := popBatch(t, a, instance)
	if gk != kind || strings.Join(gd, ", ") != strings.Join(deltas, ", ") || gi != initial {
		t.Errorf("pop_batch_nowait: %s %v initial %v, want %s %v initial %v", gk, gd, gi, kind, deltas, initial)
	}
}

func TestPopBatchNowait(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		a := started(t)
		mustOK(t, ask(t, a, create("f", "real_fifo", map[string]any{"atomic": atomic})))
		expectPop(t, a, "f", "empty", nil, nil)
		// Distinct keys after an Add (synced at once: not initial) form one batch.
		mustOK(t, ask(t, a, call("f", "add", objArg("", "a", "1"))))
		mustOK(t, ask(t, a, call("f", "add", objArg("", "b", "2"))))
		mustOK(t, ask(t, a, call("f", "update", objArg("x", "c", "3"))))
		expectPop(t, a, "f", "batch", []string{"Added /a@1", "Added /b@2", "Updated x/c@3"}, false)
		expectPop(t, a, "f", "empty", nil, nil)
		// A repeated key closes the batch; what remains is one entry: processSingle.
		mustOK(t, ask(t, a, call("f", "add", objArg("", "a", "4"))))
		mustOK(t, ask(t, a, call("f", "delete", objArg("", "b", "5"))))
		mustOK(t, ask(t, a, call("f", "update", objArg("", "a", "6"))))
		expectPop(t, a, "f", "batch", []string{"Added /a@4", "Deleted /b@5"}, false)
		expectPop(t, a, "f", "item", []string{"Updated /a@6"}, false)
		// Entries queued before Close are still handed out, then closed.
		mustOK(t, ask(t, a, call("f", "add", objArg("", "d", "7"))))
		mustOK(t, ask(t, a, call("f", "close", nil)))
		expectPop(t, a, "f", "item", []string{"Added /d@7"}, false)
		expectPop(t, a, "f", "closed", nil, nil)
	}
}

// TestPopBatchNowaitInitialList: the batch stops at the initial population count
// (non-atomic Replace queues one Replaced per object); atomic Replace queues one
// ReplacedAll, which is never batched.
func TestPopBatchNowaitInitialList(t *testing.T) {
	a := started(t)
	mustOK(t, ask(t, a, create("f", "real_fifo", map[string]any{"atomic": false})))
	mustOK(t, ask(t, a, create("g", "real_fifo", map[string]any{"atomic": true})))
	for _, in := range []string{"f", "g"} {
		mustOK(t, ask(t, a, call(in, "replace", map[string]any{"objs": []any{obj("", "a", "1"), obj("", "b", "2")}, "rv": "5"})))
		mustOK(t, ask(t, a, call(in, "add", objArg("", "c", "6"))))
		if synced := mustOK(t, ask(t, a, call(in, "has_synced", nil))); synced != false {
			t.Fatalf("%s: synced before the initial list was popped", in)
		}
	}
	expectPop(t, a, "f", "batch", []string{"Replaced /a@1", "Replaced /b@2"}, true)
	expectPop(t, a, "g", "item", []string{"ReplacedAll"}, true)
	for _, in := range []string{"f", "g"} {
		if synced := mustOK(t, ask(t, a, call(in, "has_synced", nil))); synced != true {
			t.Errorf("%s: not synced after the initial list was popped", in)
		}
		expectPop(t, a, in, "item", []string{"Added /c@6"}, false)
	}
	mustOK(t, ask(t, a, call("g", "resync", nil)))
	expectPop(t, a, "g", "item", []string{"SyncAll"}, false)
}

// TestPopBatchNowaitBetweenPopBeginAndEnd is refused, like a second pop_begin; a
// DeltaFIFO has no PopBatch.
func TestPopBatchNowaitBetweenPopBeginAndEnd(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		a := started(t)
		mustOK(t, ask(t, a, create("f", "real_fifo", map[string]any{"atomic": atomic})))
		mustOK(t, ask(t, a, call("f", "add", objArg("", "a", "1"))))
		mustOK(t, ask(t, a, call("f", "add", objArg("", "b", "2"))))
		mustOK(t, ask(t, a, call("f", "pop_begin", nil)))
		if resp := ask(t, a, call("f", "pop_batch_nowait", nil)); errorKind(resp) != "bad_request" {
			t.Errorf("atomic %v: pop_batch_nowait inside pop_begin: %v", atomic, resp)
		}
		mustOK(t, ask(t, a, call("f", "pop_end", nil)))
		expectPop(t, a, "f", "item", []string{"Added /b@2"}, false)
	}
	a := started(t)
	mustOK(t, ask(t, a, create("d", "delta_fifo", map[string]any{})))
	mustOK(t, ask(t, a, call("d", "add", objArg("", "a", "1"))))
	if resp := ask(t, a, call("d", "pop_batch_nowait", nil)); errorKind(resp) != "unsupported" {
		t.Errorf("delta_fifo pop_batch_nowait: %v", resp)
	}
}
