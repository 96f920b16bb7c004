// The wire mode (`bin/adapter --wire`, docs/protocol.md "Wire mode"): the informer
// component is client-go's own dynamic SharedIndexInformer for core/v1 ConfigMaps, built
// on "start" from the kubeconfig the harness names, over the real REST client,
// reflector and watch decoder; nothing scripted in between. It answers the requests
// refimpl's reference wire adapter (refimpl/conformance/wire/adapter.py) answers:
// add_handler, start and state, each with the observation taken at once (has_synced,
// the whole cache, the handler calls since the previous answer).
package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// wireFlags reads `--wire [--quiescence SECONDS]` into the informer registry entry of
// the wire mode (main() keeps only this component under --wire).
func wireFlags(args []string) (component, error) {
	if args[0] != "--wire" || (len(args) != 1 && len(args) != 3) {
		return component{}, fmt.Errorf("unknown arguments %v", args)
	}
	quiescence := 0.0 // 0: the harness's default
	if len(args) == 3 {
		q, err := strconv.ParseFloat(args[2], 64)
		if args[1] != "--quiescence" || err != nil || q <= 0 {
			return component{}, fmt.Errorf("--quiescence takes a positive number of seconds")
		}
		quiescence = q
	}
	// informer.go's gates answer the scripted informer's generation (WatchListClient off
	// unless asked); the wire informer runs with client-go's own defaults.
	for _, g := range []struct {
		gate *atomic.Bool
		key  clientfeatures.Feature
	}{{&gates.inOrder, clientfeatures.InOrderInformers},
		{&gates.atomicFIFO, clientfeatures.AtomicFIFO},
		{&gates.wl, clientfeatures.WatchListClient}} {
		g.gate.Store(gates.base.Enabled(g.key))
	}
	return wireComponent(quiescence), nil
}

// wireComponent is the informer registry entry of the wire mode.
func wireComponent(quiescence float64) component {
	return component{
		name:        "informer",
		minProtocol: 2,
		capabilities: func() map[string]any {
			// tls: the harness serves HTTPS with its CA in the kubeconfig, where clientcmd
			// reads the user's token itself, as it does for any real cluster.
			caps := map[string]any{"methods": []string{"add_handler", "start", "state"},
				"behaves_like": nil, "wire": true, "tls": true}
			if quiescence > 0 {
				caps["quiescence_seconds"] = quiescence
			}
			return caps
		},
		create: func(_ *env, options map[string]any) (instance, error) {
			resync, err := duration(orZero(options["resync"]), "resync")
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithCancel(context.Background())
			return &wireInformer{resync: resync, ctx: ctx, cancel: cancel}, nil
		},
	}
}

func orZero(v any) any {
	if v == nil {
		return 0.0
	}
	return v
}

// wireInformer is one wire-mode informer; calls is appended to from the listeners'
// goroutines and taken by each answer.
type wireInformer struct {
	resync   time.Duration
	ctx      context.Context
	cancel   context.CancelFunc
	handlers []wireHandler
	informer cache.SharedIndexInformer

	mu    sync.Mutex
	calls []any
}

func (w *wireInformer) call(method string, args map[string]any) (any, error) {
	switch method {
	case "add_handler":
		name, ok := args["name"].(string)
		if !ok {
			return nil, refuse("bad_request", "add_handler needs a name")
		}
		raises, _ := args["raises"].(bool)
		w.handlers = append(w.handlers, wireHandler{name: name, raises: raises, w: w})
	case "start":
		path, ok := args["kubeconfig"].(string)
		if !ok {
			return nil, refuse("bad_request", "start needs a kubeconfig path")
		}
		if w.informer != nil {
			return nil, refuse("bad_request", "the informer has started")
		}
		if err := w.start(path); err != nil {
			return nil, err
		}
	case "state":
	default:
		return nil, refuse("unsupported", "unsupported method %q in wire mode", method)
	}
	return w.observation(), nil
}

func (w *wireInformer) start(path string) error {
	config, err := restConfig(path)
	if err != nil {
		return refuse("bad_request", "kubeconfig %s: %v", path, err)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, w.resync)
	informer := factory.ForResource(configMaps).Informer()
	for i := range w.handlers {
		if _, err := informer.AddEventHandlerWithResyncPeriod(&w.handlers[i], w.resync); err != nil {
			return err
		}
	}
	w.informer = informer
	factory.Start(w.ctx.Done())
	return nil
}

// restConfig builds the rest.Config from the kubeconfig. clientcmd reads a user's
// credentials only for a TLS server (client_config.go, ClientConfig): the harness serves
// TLS to this adapter, but for a plain http:// server (refimpl serve without --tls) the
// token is set here from the kubeconfig's current user.
func restConfig(path string) (*rest.Config, error) {
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil || rest.IsConfigTransportTLS(*config) {
		return config, err
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	current, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("no current context")
	}
	if user, ok := raw.AuthInfos[current.AuthInfo]; ok {
		config.BearerToken = user.Token
	}
	return config, nil
}

// observation is the protocol's informer observation, taken now.
func (w *wireInformer) observation() map[string]any {
	w.mu.Lock()
	calls := w.calls
	w.calls = nil
	w.mu.Unlock()
	if calls == nil {
		calls = []any{}
	}
	cached := []any{}
	synced := false
	if w.informer != nil {
		synced = w.informer.HasSynced()
		objs := w.informer.GetIndexer().List()
		sort.Slice(objs, func(i, j int) bool { return keyOf(objs[i]) < keyOf(objs[j]) })
		for _, o := range objs {
			cached = append(cached, unstructuredJSON(o))
		}
	}
	return map[string]any{"waiting": map[string]any{"op": "wire"}, "has_synced": synced,
		"cache": cached, "calls": calls}
}

func (w *wireInformer) beforeStep(_, _ time.Time) func() error { return nil }

func (w *wireInformer) close() { w.cancel() }

// unstructuredJSON is the protocol form of a cached ConfigMap (its metadata only).
func unstructuredJSON(obj any) any {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return map[string]any{"unknown": fmt.Sprintf("%T", obj)}
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	return map[string]any{"namespace": u.GetNamespace(), "name": u.GetName(),
		"rv": u.GetResourceVersion(), "labels": labels}
}

// wireRV is an object's (or a tombstone's object's) resourceVersion, "" if none.
func wireRV(obj any) string {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetResourceVersion()
	}
	return ""
}

// wireHandler records each call with what the informer's cache held for its key at
// that moment; a "raises" handler then panics (recovered: informer.go's init).
type wireHandler struct {
	name   string
	raises bool
	w      *wireInformer
}

func (h *wireHandler) record(kind string, obj any, extra map[string]any) {
	key := keyOf(obj)
	call := map[string]any{"handler": h.name, "kind": kind, "key": key, "rv": wireRV(obj),
		"cache": nil}
	for k, v := range extra {
		call[k] = v
	}
	if cached, exists, _ := h.w.informer.GetIndexer().GetByKey(key); exists {
		call["cache"] = wireRV(cached)
	}
	h.w.mu.Lock()
	h.w.calls = append(h.w.calls, call)
	h.w.mu.Unlock()
	if h.raises {
		panic(fmt.Sprintf("handler %s raises, as asked", h.name))
	}
}

func (h *wireHandler) OnAdd(obj any, initial bool) {
	h.record("add", obj, map[string]any{"initial": initial})
}

func (h *wireHandler) OnUpdate(old, new any) {
	h.record("update", new, map[string]any{"old_rv": wireRV(old)})
}

func (h *wireHandler) OnDelete(obj any) {
	_, tomb := obj.(cache.DeletedFinalStateUnknown)
	h.record("delete", obj, map[string]any{"tombstone": tomb})
}
