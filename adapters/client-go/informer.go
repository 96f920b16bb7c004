// The informer component (docs/protocol.md, "The informer component", protocol 2):
// client-go's own shared informer (cache.NewSharedIndexInformerWithOptions) over a
// scripted ListerWatcher that the harness drives. Each instance lives in a synctest
// bubble (informer_bubble.go), which gives it fake time and the quiescence barrier.
//
// The scripted ListerWatcher: a list or watch call blocks on a channel of the bubble
// until the harness answers it (list_reply / list_error, watch_open / watch_error);
// an open watch is a buffered event channel the harness fills (watch_event) and
// closes (watch_end). What the informer waits for ("waiting") is read from the
// ListerWatcher after the barrier: a pending list call, a pending watch call, an open
// watch that the reflector has not stopped, or else nothing (a backoff: "sleeping").
//
// The client-go generation (create option "fifo") is chosen through client-go's own
// feature gates, replaced once at start-up by a Gates that answers InOrderInformers,
// AtomicFIFO and WatchListClient for the informer being started (the gates are read
// when the informer and its reflector are built, inside Start), and delegates every
// other feature to client-go's default gates:
//
//	real-atomic  InOrderInformers, AtomicFIFO   (RealFIFO, atomic Replace; v1.36+ default)
//	real         InOrderInformers, !AtomicFIFO  (RealFIFO with known objects; v1.33-v1.35)
//	delta        !InOrderInformers              (DeltaFIFO; v1.32 and before)
package main

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

var informerMethods = []string{"add_handler", "start", "list_reply", "list_error",
	"watch_open", "watch_error", "watch_event", "watch_end", "state"}

// ---------------------------------------------------------------- feature gates

type modeGates struct {
	base                    clientfeatures.Gates
	inOrder, atomicFIFO, wl atomic.Bool
}

func (g *modeGates) Enabled(key clientfeatures.Feature) bool {
	switch key {
	case clientfeatures.InOrderInformers:
		return g.inOrder.Load()
	case clientfeatures.AtomicFIFO:
		return g.atomicFIFO.Load()
	case clientfeatures.WatchListClient:
		return g.wl.Load()
	}
	return g.base.Enabled(key)
}

var gates *modeGates

// offerResync: the informer declares "resync" unless the adapter is started with
// --informer-resync=off (a way to look past the resync finding in README.md). The
// flag is taken out of os.Args here, so main's own argument handling never sees it.
var offerResync = true

func init() {
	kept := os.Args[:1]
	for _, a := range os.Args[1:] {
		if a == "--informer-resync=off" {
			offerResync = false
			continue
		}
		kept = append(kept, a)
	}
	os.Args = kept

	gates = &modeGates{base: clientfeatures.FeatureGates()}
	gates.inOrder.Store(true)
	gates.atomicFIFO.Store(true)
	clientfeatures.ReplaceFeatureGates(gates)

	extComponents["informer"] = extComponent{
		minProtocol: 2,
		caps: func() map[string]any {
			return map[string]any{
				"methods":      informerMethods,
				"behaves_like": []string{"real-atomic", "real", "delta"},
				"initial":      true,
				"resync":       offerResync,
				"watch_list":   true,
			}
		},
		create: newInformerInstance,
	}
}

// ---------------------------------------------------------------- the seam

type listAnswer struct {
	list runtime.Object
	err  error
}

type pendingList struct {
	rv    string
	reply chan listAnswer
}

type watchAnswer struct {
	w   *scriptedWatch
	err error
}

type pendingWatch struct {
	rv      string
	initial bool // SendInitialEvents: a watch-list request
	reply   chan watchAnswer
}

type scriptedWatch struct {
	rv       string
	initial  bool
	ch       chan watch.Event
	stopOnce sync.Once
	stopped  atomic.Bool
	ended    bool // the harness closed the stream (root goroutine only)
}

func (w *scriptedWatch) ResultChan() <-chan watch.Event { return w.ch }
func (w *scriptedWatch) Stop()                          { w.stopOnce.Do(func() { w.stopped.Store(true) }) }

// scriptedLW is the informer's ListerWatcher: every call waits for the harness.
type scriptedLW struct {
	watchList bool
	mu        sync.Mutex
	list      *pendingList
	watch     *pendingWatch
	open      *scriptedWatch
}

// IsWatchListSemanticsUnSupported is how client-go's util/watchlist asks a
// ListerWatcher whether it can serve a watch-list; this one can when asked to.
func (lw *scriptedLW) IsWatchListSemanticsUnSupported() bool { return !lw.watchList }

func (lw *scriptedLW) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	p := &pendingList{rv: options.ResourceVersion, reply: make(chan listAnswer, 1)}
	lw.mu.Lock()
	lw.list = p
	lw.mu.Unlock()
	defer func() {
		lw.mu.Lock()
		if lw.list == p {
			lw.list = nil
		}
		lw.mu.Unlock()
	}()
	select {
	case a := <-p.reply:
		return a.list, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (lw *scriptedLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	p := &pendingWatch{rv: options.ResourceVersion, reply: make(chan watchAnswer, 1),
		initial: options.SendInitialEvents != nil && *options.SendInitialEvents}
	lw.mu.Lock()
	lw.watch = p
	lw.mu.Unlock()
	defer func() {
		lw.mu.Lock()
		if lw.watch == p {
			lw.watch = nil
		}
		lw.mu.Unlock()
	}()
	select {
	case a := <-p.reply:
		if a.err != nil {
			return nil, a.err
		}
		return a.w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (lw *scriptedLW) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

func (lw *scriptedLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

func apiError(reason string) (error, error) {
	switch reason {
	case "expired":
		return apierrors.NewResourceExpired("too old resource version"), nil
	case "internal":
		return apierrors.NewInternalError(errors.New("injected: internal error")), nil
	case "too_many_requests":
		return apierrors.NewTooManyRequests("injected: too many requests", 0), nil
	}
	return nil, refuse("bad_request", "reason must be expired, internal or too_many_requests, got %q", reason)
}

// ---------------------------------------------------------------- the instance

type informerInstance struct {
	b         *bubble
	resync    time.Duration
	fifoMode  string
	watchList bool

	// Created and used inside the bubble only.
	lw       *scriptedLW
	informer cache.SharedIndexInformer
	ctx      context.Context
	cancel   context.CancelFunc
	started  bool
	runDone  chan struct{} // closed when RunWithContext has returned
	handlers map[string]bool

	mu    sync.Mutex // guards calls (handlers run on listener goroutines)
	calls []map[string]any
}

func newInformerInstance(options map[string]any) (extInstance, error) {
	in := &informerInstance{fifoMode: "real-atomic", handlers: map[string]bool{}}
	if raw, ok := options["resync"]; ok && raw != nil {
		d, err := duration(raw, "resync")
		if err != nil {
			return nil, err
		}
		if d < 0 {
			return nil, refuse("bad_request", "resync must be >= 0")
		}
		in.resync = d
	}
	if raw, ok := options["fifo"]; ok && raw != nil {
		s, _ := raw.(string)
		switch s {
		case "real-atomic", "real", "delta":
			in.fifoMode = s
		default:
			return nil, refuse("bad_request", "fifo must be real-atomic, real or delta, got %v", raw)
		}
	}
	wl, err := boolOption(options, "watch_list", false)
	if err != nil {
		return nil, err
	}
	in.watchList = wl
	rand.Seed(1) //nolint:staticcheck // deterministic jitter, see informer_bubble.go
	in.b = newBubble()
	_, err = in.b.do(func() error {
		in.lw = &scriptedLW{watchList: wl}
		in.runDone = make(chan struct{})
		in.ctx, in.cancel = context.WithCancel(context.Background())
		in.informer = cache.NewSharedIndexInformerWithOptions(in.lw, &metav1.PartialObjectMetadata{},
			cache.SharedIndexInformerOptions{ResyncPeriod: in.resync})
		// The default handler only logs; logs are off (see quietLogs).
		return implErr(in.informer.SetWatchErrorHandlerWithContext(
			func(context.Context, *cache.Reflector, error) {}))
	}, func() (any, error) { return nil, nil })
	if err != nil {
		return nil, err
	}
	return in, nil
}

func (in *informerInstance) close() {
	finished := false
	if in.cancel != nil {
		cancel := in.cancel
		_, _ = in.b.do(func() error { cancel(); return nil }, func() (any, error) {
			// After the barrier: did the informer's Run return (every goroutine it
			// started has then ended, or is about to)?
			select {
			case <-in.runDone:
				finished = true
			default:
				finished = !in.started
			}
			return nil, nil
		})
	}
	in.b.close(finished)
}

func (in *informerInstance) advance(d time.Duration) error {
	_, err := in.b.do(func() error { time.Sleep(d); return nil }, func() (any, error) { return nil, nil })
	return err
}

func (in *informerInstance) call(method string, args map[string]any) (any, error) {
	var act func() error
	switch method {
	case "add_handler":
		act = func() error { return in.addHandler(args) }
	case "start":
		act = in.start
	case "list_reply":
		act = func() error {
			objs, err := objectsFromJSON(args["objects"], "args.objects")
			if err != nil {
				return err
			}
			rv, err := strArg(args, "rv")
			if err != nil {
				return err
			}
			list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, o := range objs {
				list.Items = append(list.Items, *o.(*metav1.PartialObjectMetadata))
			}
			return in.answerList(listAnswer{list: list})
		}
	case "list_error":
		act = func() error {
			reason, _ := args["reason"].(string)
			e, err := apiError(reason)
			if err != nil {
				return err
			}
			return in.answerList(listAnswer{err: e})
		}
	case "watch_open":
		act = func() error {
			p, err := in.pendingWatch()
			if err != nil {
				return err
			}
			w := &scriptedWatch{rv: p.rv, initial: p.initial, ch: make(chan watch.Event, 4096)}
			in.lw.mu.Lock()
			in.lw.open = w
			in.lw.mu.Unlock()
			p.reply <- watchAnswer{w: w}
			return nil
		}
	case "watch_error":
		act = func() error {
			reason, _ := args["reason"].(string)
			e, err := apiError(reason)
			if err != nil {
				return err
			}
			p, err := in.pendingWatch()
			if err != nil {
				return err
			}
			p.reply <- watchAnswer{err: e}
			return nil
		}
	case "watch_event":
		act = func() error { return in.watchEvent(args) }
	case "watch_end":
		act = func() error { return in.watchEnd(args) }
	case "state":
		act = func() error { return nil }
	default:
		return nil, refuse("unsupported", "the informer has no method %q", method)
	}
	return in.b.do(act, in.observation)
}

// ---------------------------------------------------------------- methods (in the bubble)

func (in *informerInstance) addHandler(args map[string]any) error {
	name, err := strArg(args, "name")
	if err != nil {
		return err
	}
	if in.handlers[name] {
		return refuse("bad_request", "handler %q already added", name)
	}
	raises, _ := args["raises"].(bool)
	h := &recordingHandler{name: name, raises: raises, in: in}
	var opts cache.HandlerOptions
	if raw, ok := args["resync"]; ok && raw != nil {
		d, err := duration(raw, "args.resync")
		if err != nil {
			return err
		}
		opts.ResyncPeriod = &d
	}
	in.handlers[name] = true
	_, err = in.informer.AddEventHandlerWithOptions(h, opts)
	return implErr(err)
}

func (in *informerInstance) start() error {
	if in.started {
		return refuse("bad_request", "the informer was already started")
	}
	in.started = true
	gates.inOrder.Store(in.fifoMode != "delta")
	gates.atomicFIFO.Store(in.fifoMode == "real-atomic")
	gates.wl.Store(in.watchList)
	go func() {
		in.informer.RunWithContext(in.ctx)
		close(in.runDone)
	}()
	return nil
}

func (in *informerInstance) answerList(a listAnswer) error {
	in.lw.mu.Lock()
	p := in.lw.list
	in.lw.mu.Unlock()
	if p == nil {
		return refuse("bad_request", "the informer is not waiting for a list")
	}
	p.reply <- a
	return nil
}

func (in *informerInstance) pendingWatch() (*pendingWatch, error) {
	in.lw.mu.Lock()
	defer in.lw.mu.Unlock()
	if in.lw.watch == nil {
		return nil, refuse("bad_request", "the informer is not waiting for a watch")
	}
	return in.lw.watch, nil
}

func (in *informerInstance) openWatch() (*scriptedWatch, error) {
	in.lw.mu.Lock()
	defer in.lw.mu.Unlock()
	w := in.lw.open
	if w == nil || w.ended || w.stopped.Load() {
		return nil, refuse("bad_request", "the informer is not watching")
	}
	return w, nil
}

func (in *informerInstance) watchEvent(args map[string]any) error {
	w, err := in.openWatch()
	if err != nil {
		return err
	}
	raw, _ := args["object"].(map[string]any)
	kind, _ := args["type"].(string)
	if kind == "BOOKMARK" && raw != nil {
		if n, _ := raw["name"].(string); n == "" {
			copied := map[string]any{}
			for k, v := range raw {
				copied[k] = v
			}
			copied["name"] = "bookmark"
			raw = copied
		}
	}
	obj, err := objectFromJSON(raw)
	if err != nil {
		return err
	}
	var t watch.EventType
	switch kind {
	case "ADDED":
		t = watch.Added
	case "MODIFIED":
		t = watch.Modified
	case "DELETED":
		t = watch.Deleted
	case "BOOKMARK":
		t = watch.Bookmark
	default:
		return refuse("bad_request", "args.type must be ADDED, MODIFIED, DELETED or BOOKMARK")
	}
	end, _ := args["initial_events_end"].(bool)
	if end {
		if t != watch.Bookmark {
			return refuse("bad_request", "initial_events_end is for a BOOKMARK")
		}
		obj.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	if t == watch.Bookmark {
		// A bookmark carries only its resourceVersion.
		obj = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: obj.ResourceVersion, Annotations: obj.Annotations}}
	}
	w.ch <- watch.Event{Type: t, Object: obj}
	return nil
}

func (in *informerInstance) watchEnd(args map[string]any) error {
	w, err := in.openWatch()
	if err != nil {
		return err
	}
	how, _ := args["how"].(string)
	switch how {
	case "clean", "reset":
		// A reset while reading is the end of the stream for client-go's
		// StreamWatcher (net.IsProbableEOF), as a clean close is.
	case "expired", "internal":
		e, _ := apiError(how)
		var status apierrors.APIStatus
		if errors.As(e, &status) {
			st := status.Status()
			w.ch <- watch.Event{Type: watch.Error, Object: &st}
		}
	default:
		return refuse("bad_request", "how must be clean, expired, internal or reset")
	}
	in.lw.mu.Lock()
	w.ended = true
	in.lw.mu.Unlock()
	close(w.ch)
	return nil
}

// ---------------------------------------------------------------- the observation

func (in *informerInstance) waiting() map[string]any {
	if !in.started {
		return map[string]any{"op": "idle"}
	}
	lw := in.lw
	lw.mu.Lock()
	defer lw.mu.Unlock()
	switch {
	case lw.list != nil:
		return map[string]any{"op": "list", "rv": lw.list.rv}
	case lw.watch != nil:
		out := map[string]any{"op": "watch", "rv": lw.watch.rv}
		if lw.watch.initial {
			out["send_initial_events"] = true
		}
		return out
	case lw.open != nil && !lw.open.stopped.Load() && !lw.open.ended:
		out := map[string]any{"op": "watching", "rv": lw.open.rv}
		if lw.open.initial {
			out["send_initial_events"] = true
		}
		return out
	}
	return map[string]any{"op": "sleeping"}
}

func (in *informerInstance) observation() (any, error) {
	objs := in.informer.GetIndexer().List()
	sort.Slice(objs, func(i, j int) bool { return keyOf(objs[i]) < keyOf(objs[j]) })
	cached := make([]any, 0, len(objs))
	for _, o := range objs {
		cached = append(cached, objectJSON(o))
	}
	in.mu.Lock()
	calls := in.calls
	in.calls = nil
	in.mu.Unlock()
	if calls == nil {
		calls = []map[string]any{}
	}
	return map[string]any{
		"waiting":    in.waiting(),
		"has_synced": in.informer.HasSynced(),
		"cache":      cached,
		"calls":      calls,
	}, nil
}

// ---------------------------------------------------------------- the handlers

type recordingHandler struct {
	name   string
	raises bool
	in     *informerInstance
}

func rvOf(obj any) string {
	if o, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return o.ResourceVersion
	}
	return ""
}

func (h *recordingHandler) record(kind string, obj any, extra map[string]any) {
	key := keyOf(obj)
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	call := map[string]any{"handler": h.name, "kind": kind, "key": key, "rv": rvOf(obj)}
	for k, v := range extra {
		call[k] = v
	}
	call["cache"] = nil
	if cur, exists, err := h.in.informer.GetIndexer().GetByKey(key); err == nil && exists {
		call["cache"] = rvOf(cur)
	}
	h.in.mu.Lock()
	h.in.calls = append(h.in.calls, call)
	h.in.mu.Unlock()
	if h.raises {
		panic("handler " + h.name + " raises, as asked")
	}
}

func (h *recordingHandler) OnAdd(obj any, isInInitialList bool) {
	h.record("add", obj, map[string]any{"initial": isInInitialList})
}

func (h *recordingHandler) OnUpdate(old, new any) {
	h.record("update", new, map[string]any{"old_rv": rvOf(old)})
}

func (h *recordingHandler) OnDelete(obj any) {
	_, tomb := obj.(cache.DeletedFinalStateUnknown)
	h.record("delete", obj, map[string]any{"tombstone": tomb})
}

// quietLogs: client-go logs every watch end and every recovered handler panic;
// thousands of examples would bury the adapter's stderr. Handler panics are
// recovered (utilruntime.ReallyCrash = false, client-go's documented switch): the
// listener then skips that notification and sleeps one second (processorListener.run)
// instead of crashing the adapter, which is what a "raises" handler shows.
func init() {
	klog.SetLogger(logr.Discard())
	utilruntime.ReallyCrash = false
}
