// The cache components of docs/protocol.md: store, delta_fifo and real_fifo, each the
// real k8s.io/client-go/tools/cache type, and the one hook main.go calls for every
// component it does not implement itself (extComponents).
package main

import (
	"errors"
	"reflect"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// extInstance is a component instance implemented outside main.go.
type extInstance interface {
	// call runs one method of the protocol's "call" request.
	call(method string, args map[string]any) (any, error)
	// advance lets what is due after the adapter's clock moved by d happen.
	advance(d time.Duration) error
	// close releases the instance (at reset).
	close()
}

// extComponent is one component offered outside main.go.
type extComponent struct {
	minProtocol int                                       // the first protocol version that has it
	caps        func() map[string]any                     // its hello entry
	create      func(map[string]any) (extInstance, error) // create with these options
}

// extComponents is the registration hook: each file adds its components in init().
var extComponents = map[string]extComponent{}

// extHello adds the registered components to hello's "components" for a protocol.
func extHello(components map[string]any, protocol int) {
	for name, c := range extComponents {
		if protocol >= c.minProtocol {
			components[name] = c.caps()
		}
	}
}

var fifoMethods = []string{"add", "update", "delete", "replace", "resync", "pop_nowait",
	"has_synced", "close", "is_closed", "known_add", "known_delete"}

// fifoObserve lists the FIFOs' no-argument read-only methods, which a call may carry
// under "observe" (main.go, adapter.call; docs/protocol.md "Observations carried by a
// call").
func fifoObserve() []string { return []string{"has_synced", "is_closed"} }

func init() {
	extComponents["store"] = extComponent{
		minProtocol: 1,
		caps: func() map[string]any {
			return map[string]any{
				"methods": []string{"add", "update", "delete", "replace", "get_by_key",
					"list_keys", "list", "by_index", "index_keys", "list_index_func_values"},
				"indexers": []string{"labels", "namespace"},
			}
		},
		create: newStoreInstance,
	}
	extComponents["delta_fifo"] = extComponent{
		minProtocol: 1,
		caps: func() map[string]any {
			return map[string]any{"methods": fifoMethods,
				"options": []string{"known_objects", "emit_delta_type_replaced"},
				"observe": fifoObserve()}
		},
		create: newDeltaFIFOInstance,
	}
	extComponents["real_fifo"] = extComponent{
		minProtocol: 1,
		caps: func() map[string]any {
			methods := append(append([]string{}, fifoMethods...),
				"pop_begin", "pop_end", "pop_batch_nowait")
			return map[string]any{"methods": methods, "options": []string{"atomic"},
				"observe": fifoObserve()}
		},
		create: newRealFIFOInstance,
	}
}

// ---------------------------------------------------------------- store

func indexFuncs() cache.Indexers {
	return cache.Indexers{
		"namespace": func(obj any) ([]string, error) {
			o, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return nil, errors.New("not an object")
			}
			return []string{o.Namespace}, nil
		},
		"labels": func(obj any) ([]string, error) {
			o, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return nil, errors.New("not an object")
			}
			out := make([]string, 0, len(o.Labels))
			for k, v := range o.Labels {
				out = append(out, k+"="+v)
			}
			sort.Strings(out)
			return out, nil
		},
	}
}

type storeInstance struct{ s cache.Indexer }

func newStoreInstance(options map[string]any) (extInstance, error) {
	all := indexFuncs()
	chosen := cache.Indexers{}
	names, present := options["indexers"]
	if !present {
		chosen = all
	} else {
		list, ok := names.([]any)
		if !ok {
			return nil, refuse("unsupported", "indexers must be a list of names")
		}
		for _, n := range list {
			s, _ := n.(string)
			f, ok := all[s]
			if !ok {
				return nil, refuse("unsupported", "index %v is not offered", n)
			}
			chosen[s] = f
		}
	}
	return &storeInstance{cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, chosen)}, nil
}

// implErr is an error the implementation returned: invalid_argument.
func implErr(err error) error {
	if err == nil {
		return nil
	}
	return refuse("invalid_argument", "%v", err)
}

func (in *storeInstance) call(method string, args map[string]any) (any, error) {
	s := in.s
	switch method {
	case "add", "update", "delete":
		o, err := objectFromJSON(args["obj"])
		if err != nil {
			return nil, err
		}
		switch method {
		case "add":
			return nil, implErr(s.Add(o))
		case "update":
			return nil, implErr(s.Update(o))
		}
		return nil, implErr(s.Delete(o))
	case "replace":
		objs, err := objectsFromJSON(args["objs"], "args.objs")
		if err != nil {
			return nil, err
		}
		rv, _ := args["rv"].(string)
		return nil, implErr(s.Replace(objs, rv))
	case "get_by_key":
		key, err := strArg(args, "key")
		if err != nil {
			return nil, err
		}
		obj, exists, err := s.GetByKey(key)
		if err != nil {
			return nil, implErr(err)
		}
		if !exists {
			return map[string]any{"exists": false, "obj": nil}, nil
		}
		return map[string]any{"exists": true, "obj": objectJSON(obj)}, nil
	case "list_keys":
		keys := s.ListKeys()
		sort.Strings(keys)
		return keys, nil
	case "list":
		return sortedObjects(s.List()), nil
	case "by_index", "index_keys":
		index, err := strArg(args, "index")
		if err != nil {
			return nil, err
		}
		value, err := strArg(args, "value")
		if err != nil {
			return nil, err
		}
		if method == "by_index" {
			objs, err := s.ByIndex(index, value)
			if err != nil {
				return nil, implErr(err)
			}
			return sortedObjects(objs), nil
		}
		keys, err := s.IndexKeys(index, value)
		if err != nil {
			return nil, implErr(err)
		}
		sort.Strings(keys)
		return keys, nil
	case "list_index_func_values":
		index, err := strArg(args, "index")
		if err != nil {
			return nil, err
		}
		values := s.ListIndexFuncValues(index)
		sort.Strings(values)
		if values == nil {
			values = []string{}
		}
		return values, nil
	}
	return nil, refuse("unsupported", "a store has no method %q", method)
}

func (in *storeInstance) advance(time.Duration) error { return nil }
func (in *storeInstance) close()                      {}

// ---------------------------------------------------------------- FIFOs

// fifo is what DeltaFIFO and RealFIFO share as the protocol drives them.
type fifo interface {
	Add(any) error
	Update(any) error
	Delete(any) error
	Replace([]any, string) error
	Resync() error
	Pop(cache.PopProcessFunc) (any, error)
	HasSynced() bool
	Close()
	IsClosed() bool
}

type fifoInstance struct {
	f     fifo
	known cache.Store // the known-objects store (an informer's indexer in real use)
	// queued tells whether Pop would return at once. client-go v0.37 exports no
	// length for either FIFO, so this reads the length of the FIFO's own queue
	// (DeltaFIFO.queue, RealFIFO.items) through reflect: a read, never a write, and
	// only while no other goroutine touches the FIFO (these components have none).
	queued func() int
	pop    *pendingPop // pop_begin's Pop, until pop_end
}

// pendingPop is a Pop running on its own goroutine whose process function is blocked
// until pop_end (the split of docs/protocol.md "Methods for spec-driven walks").
type pendingPop struct {
	release  chan struct{} // closed by pop_end: the process function returns
	finished chan error    // Pop's error once it returned
}

// popTimeout bounds (in real time) the waits of pop_begin and pop_end.
const popTimeout = 5 * time.Second

// queueLen reads the length of an unexported slice field of a client-go FIFO.
func queueLen(f any, field string) func() int {
	v := reflect.ValueOf(f).Elem().FieldByName(field)
	if !v.IsValid() || v.Kind() != reflect.Slice {
		panic("client-go's FIFO has no slice field " + field)
	}
	return v.Len
}

func boolOption(options map[string]any, name string, def bool) (bool, error) {
	raw, present := options[name]
	if !present || raw == nil {
		return def, nil
	}
	b, ok := raw.(bool)
	if !ok {
		return false, refuse("bad_request", "option %s must be a boolean", name)
	}
	return b, nil
}

func newDeltaFIFOInstance(options map[string]any) (extInstance, error) {
	useKnown, err := boolOption(options, "known_objects", true)
	if err != nil {
		return nil, err
	}
	replaced, err := boolOption(options, "emit_delta_type_replaced", true)
	if err != nil {
		return nil, err
	}
	in := &fifoInstance{known: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)}
	opts := cache.DeltaFIFOOptions{EmitDeltaTypeReplaced: replaced}
	if useKnown {
		opts.KnownObjects = in.known
	}
	f := cache.NewDeltaFIFOWithOptions(opts)
	in.f, in.queued = f, queueLen(f, "queue")
	return in, nil
}

func newRealFIFOInstance(options map[string]any) (extInstance, error) {
	atomic, err := boolOption(options, "atomic", false)
	if err != nil {
		return nil, err
	}
	in := &fifoInstance{known: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)}
	// atomic is what an informer's newQueueFIFO builds with client-go's default gates
	// (v1.36+): AtomicFIFO, and UnlockWhileProcessingFIFO, so Pop releases the lock
	// while its process function runs (whileProcessing_locked).
	opts := cache.RealFIFOOptions{AtomicEvents: atomic, UnlockWhileProcessing: atomic}
	if !atomic {
		opts.KnownObjects = in.known
	}
	f := cache.NewRealFIFOWithOptions(opts)
	in.f, in.queued = f, queueLen(f, "items")
	return in, nil
}

func (in *fifoInstance) call(method string, args map[string]any) (any, error) {
	switch method {
	case "add", "update", "delete", "known_add", "known_delete":
		o, err := objectFromJSON(args["obj"])
		if err != nil {
			return nil, err
		}
		switch method {
		case "add":
			return nil, implErr(in.f.Add(o))
		case "update":
			return nil, implErr(in.f.Update(o))
		case "delete":
			return nil, implErr(in.f.Delete(o))
		case "known_add":
			return nil, implErr(in.known.Update(o))
		}
		return nil, implErr(in.known.Delete(o))
	case "replace":
		objs, err := objectsFromJSON(args["objs"], "args.objs")
		if err != nil {
			return nil, err
		}
		rv, _ := args["rv"].(string)
		return nil, implErr(in.f.Replace(objs, rv))
	case "resync":
		return nil, implErr(in.f.Resync())
	case "pop_nowait":
		if in.queued() == 0 && !in.f.IsClosed() {
			return map[string]any{"kind": "empty"}, nil
		}
		var got any
		_, err := in.f.Pop(func(obj any, isInInitialList bool) error {
			got = popped(obj, isInInitialList)
			return nil
		})
		return popAnswer(got, err)
	case "pop_batch_nowait":
		return in.popBatchNowait()
	case "pop_begin":
		return in.popBegin()
	case "pop_end":
		return nil, in.popEnd()
	case "has_synced":
		return in.f.HasSynced(), nil
	case "close":
		in.f.Close()
		return nil, nil
	case "is_closed":
		return in.f.IsClosed(), nil
	}
	return nil, refuse("unsupported", "a FIFO has no method %q", method)
}

// popped is the answer for what Pop handed its process function.
func popped(obj any, isInInitialList bool) map[string]any {
	deltas, _ := obj.(cache.Deltas)
	return poppedAs("item", deltas, isInInitialList)
}

// poppedAs is a pop answer of the given kind ("item", or "batch" for what PopBatch
// handed its processBatch) for these deltas.
func poppedAs(kind string, deltas []cache.Delta, isInInitialList bool) map[string]any {
	out := make([]any, 0, len(deltas))
	for _, d := range deltas {
		out = append(out, deltaJSON(d))
	}
	return map[string]any{"kind": kind, "deltas": out, "initial": isInInitialList}
}

// popBatchNowait is RealFIFO.PopBatch (the_real_fifo.go) with process functions that
// only record what they were handed: processBatch ("batch", two or more entries) or
// processSingle ("item", one). It decides "empty" as pop_nowait does (PopBatch, like
// Pop, would block on an empty open FIFO). Between pop_begin and pop_end it is refused,
// as a second pop_begin is: the RealFIFO is documented for one consumer.
func (in *fifoInstance) popBatchNowait() (any, error) {
	rf, ok := in.f.(*cache.RealFIFO)
	if !ok {
		return nil, refuse("unsupported", "pop_batch_nowait: only a RealFIFO has PopBatch")
	}
	if in.pop != nil {
		return nil, refuse("bad_request", "pop_batch_nowait while a pop_begin is unfinished")
	}
	if in.queued() == 0 && !rf.IsClosed() {
		return map[string]any{"kind": "empty"}, nil
	}
	var got any
	err := rf.PopBatch(func(deltas []cache.Delta, isInInitialList bool) error {
		got = poppedAs("batch", deltas, isInInitialList)
		return nil
	}, func(obj any, isInInitialList bool) error {
		got = popped(obj, isInInitialList)
		return nil
	})
	return popAnswer(got, err)
}

// popAnswer is pop_nowait's answer from Pop's result (got: what process recorded).
func popAnswer(got any, err error) (any, error) {
	if errors.Is(err, cache.ErrFIFOClosed) {
		return map[string]any{"kind": "closed"}, nil
	}
	if err != nil {
		return nil, implErr(err)
	}
	return got, nil
}

// popBegin runs Pop on a goroutine of its own with a process function that records
// what it was given, says so, and blocks until pop_end. The answer comes once the
// process function is running (or Pop returned without calling it: closed). Both
// sides of that handshake are channels, so no other barrier is needed: in atomic mode
// client-go has released the FIFO's lock by then (whileProcessing_locked), otherwise
// the Pop goroutine holds it until pop_end.
func (in *fifoInstance) popBegin() (any, error) {
	if in.pop != nil {
		return nil, refuse("bad_request", "pop_begin while a pop_begin is unfinished")
	}
	if in.queued() == 0 && !in.f.IsClosed() {
		return map[string]any{"kind": "empty"}, nil
	}
	p := &pendingPop{release: make(chan struct{}), finished: make(chan error, 1)}
	running := make(chan any, 1)
	go func() {
		_, err := in.f.Pop(func(obj any, isInInitialList bool) error {
			running <- popped(obj, isInInitialList)
			<-p.release
			return nil
		})
		p.finished <- err
	}()
	timer := time.NewTimer(popTimeout)
	defer timer.Stop()
	select {
	case got := <-running:
		in.pop = p
		return got, nil
	case err := <-p.finished:
		return popAnswer(nil, err)
	case <-timer.C:
		return nil, refuse("internal", "Pop did not reach its process function within %v", popTimeout)
	}
}

// popEnd lets pop_begin's process function return and waits for Pop to return.
func (in *fifoInstance) popEnd() error {
	p := in.pop
	if p == nil {
		return refuse("bad_request", "pop_end without an unfinished pop_begin")
	}
	in.pop = nil
	close(p.release)
	timer := time.NewTimer(popTimeout)
	defer timer.Stop()
	select {
	case err := <-p.finished:
		return implErr(err)
	case <-timer.C:
		return refuse("internal", "Pop did not return within %v of its process function", popTimeout)
	}
}

func (in *fifoInstance) advance(time.Duration) error { return nil }

// close lets an unfinished pop_begin's Pop return (at reset).
func (in *fifoInstance) close() {
	if in.pop != nil {
		_ = in.popEnd()
	}
}
