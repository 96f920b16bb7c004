// Command wireprobe runs client-go's own informer machinery against `refimpl serve`
// (issue #29 item 1's check that a real client's informer syncs over the wire): a
// dynamic SharedInformer for core/v1 ConfigMaps built from the kubeconfig `refimpl serve`
// writes, the real REST client, reflector and watch decoder, nothing scripted.
//
// Usage: wireprobe KUBECONFIG. It waits for the informer to sync, creates, updates and
// deletes one ConfigMap through the dynamic client, and prints one line per handler
// call ("add ns/name rv", "update ns/name rv", "delete ns/name rv") and "synced N" once
// synced; it exits 0 once the delete was seen, 1 on an error or after 20 seconds.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func describe(verb string, obj interface{}) string {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Sprintf("%s %T", verb, obj)
	}
	return fmt.Sprintf("%s %s/%s %s", verb, u.GetNamespace(), u.GetName(), u.GetResourceVersion())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wireprobe:", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: wireprobe KUBECONFIG"))
	}
	config, err := restConfig(os.Args[1])
	if err != nil {
		fail(err)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lines := make(chan string, 100)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	informer := factory.ForResource(configMaps).Informer()
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { lines <- describe("add", obj) },
		UpdateFunc: func(_, obj interface{}) { lines <- describe("update", obj) },
		DeleteFunc: func(obj interface{}) { lines <- describe("delete", obj) },
	})
	if err != nil {
		fail(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail(fmt.Errorf("the informer did not sync"))
	}
	fmt.Printf("synced %d\n", len(informer.GetStore().List()))
	if err := write(ctx, client.Resource(configMaps).Namespace("probe")); err != nil {
		fail(err)
	}
	for {
		select {
		case line := <-lines:
			fmt.Println(line)
			if len(line) > 6 && line[:6] == "delete" {
				cancel()
				factory.Shutdown()
				return
			}
		case <-ctx.Done():
			fail(fmt.Errorf("no delete event within the deadline"))
		}
	}
}

// restConfig builds the rest.Config from the kubeconfig. clientcmd reads a user's
// credentials only for a TLS server (client_config.go, ClientConfig skips them for an
// insecure one), so over refimpl serve's plain http:// the token is set here from the
// kubeconfig's current user.
func restConfig(path string) (*rest.Config, error) {
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil || rest.IsConfigTransportTLS(*config) {
		return config, err
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	context, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("%s: no current context", path)
	}
	if user, ok := raw.AuthInfos[context.AuthInfo]; ok {
		config.BearerToken = user.Token
	}
	return config, nil
}

// write creates, updates and deletes ConfigMap probe/p.
func write(ctx context.Context, configs dynamic.ResourceInterface) error {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "p"},
		"data":     map[string]interface{}{"k": "1"},
	}}
	created, err := configs.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(created.Object, "2", "data", "k"); err != nil {
		return err
	}
	if _, err := configs.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return configs.Delete(ctx, "p", metav1.DeleteOptions{})
}
