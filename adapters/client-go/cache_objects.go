// Objects, tombstones and deltas between the protocol's JSON (docs/protocol.md, "call")
// and the values client-go's tools/cache holds.
//
// A protocol object {namespace, name, rv, labels} is a *metav1.PartialObjectMetadata:
// a runtime.Object with real ObjectMeta, so client-go's own key functions
// (MetaNamespaceKeyFunc, DeletionHandlingMetaNamespaceKeyFunc) and its reflector's
// type check work on it unchanged.
package main

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// objectFromJSON turns a protocol object into the value client-go stores.
func objectFromJSON(v any) (*metav1.PartialObjectMetadata, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, refuse("bad_request", "an object is {namespace, name, rv, labels}, got %v", v)
	}
	name, ok := m["name"].(string)
	if !ok {
		return nil, refuse("bad_request", "an object needs a string 'name': %v", v)
	}
	str := func(key string) (string, error) {
		raw, present := m[key]
		if !present || raw == nil {
			return "", nil
		}
		s, ok := raw.(string)
		if !ok {
			return "", refuse("bad_request", "object field %q must be a string: %v", key, v)
		}
		return s, nil
	}
	namespace, err := str("namespace")
	if err != nil {
		return nil, err
	}
	rv, err := str("rv")
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	if raw, present := m["labels"]; present && raw != nil {
		lm, ok := raw.(map[string]any)
		if !ok {
			return nil, refuse("bad_request", "labels must map strings to strings: %v", raw)
		}
		for k, lv := range lm {
			s, ok := lv.(string)
			if !ok {
				return nil, refuse("bad_request", "labels must map strings to strings: %v", raw)
			}
			labels[k] = s
		}
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: namespace, ResourceVersion: rv, Labels: labels,
	}}, nil
}

func objectsFromJSON(v any, what string) ([]any, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, refuse("bad_request", "%s must be a list of objects", what)
	}
	out := make([]any, 0, len(list))
	for _, raw := range list {
		o, err := objectFromJSON(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// objectJSON is the protocol form of an object, a tombstone or a RealFIFO payload.
func objectJSON(v any) any {
	switch o := v.(type) {
	case nil:
		return nil
	case *metav1.PartialObjectMetadata:
		labels := map[string]string{}
		for k, lv := range o.Labels {
			labels[k] = lv
		}
		return map[string]any{"namespace": o.Namespace, "name": o.Name,
			"rv": o.ResourceVersion, "labels": labels}
	case cache.DeletedFinalStateUnknown:
		return map[string]any{"tombstone": map[string]any{"key": o.Key, "obj": objectJSON(o.Obj)}}
	case *cache.DeletedFinalStateUnknown:
		return objectJSON(*o)
	case cache.ReplacedAllInfo:
		objs := make([]any, 0, len(o.Objects))
		for _, x := range o.Objects {
			objs = append(objs, objectJSON(x))
		}
		return map[string]any{"replaced_all": map[string]any{"rv": o.ResourceVersion, "objects": objs}}
	case cache.SyncAllInfo:
		return map[string]any{"sync_all": map[string]any{}}
	case cache.BookmarkInfo:
		return map[string]any{"bookmark": map[string]any{"rv": o.ResourceVersion}}
	}
	return map[string]any{"unknown": true}
}

func deltaJSON(d cache.Delta) any {
	return map[string]any{"type": string(d.Type), "object": objectJSON(d.Object)}
}

// keyOf is client-go's DeletionHandlingMetaNamespaceKeyFunc, for sorting.
func keyOf(v any) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(v)
	if err != nil {
		return ""
	}
	return k
}

// sortedObjects answers a list in key order (client-go's is Go map order).
func sortedObjects(list []any) []any {
	sort.Slice(list, func(i, j int) bool { return keyOf(list[i]) < keyOf(list[j]) })
	out := make([]any, 0, len(list))
	for _, o := range list {
		out = append(out, objectJSON(o))
	}
	return out
}

func strArg(args map[string]any, name string) (string, error) {
	s, ok := args[name].(string)
	if !ok {
		return "", refuse("bad_request", "args.%s must be a string", name)
	}
	return s, nil
}
