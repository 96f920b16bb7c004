package adapter;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.kubernetes.client.informer.ResourceEventHandler;
import io.kubernetes.client.informer.SharedIndexInformer;
import io.kubernetes.client.informer.SharedInformerFactory;
import io.kubernetes.client.openapi.ApiClient;
import io.kubernetes.client.openapi.apis.CoreV1Api;
import io.kubernetes.client.openapi.models.V1ConfigMap;
import io.kubernetes.client.openapi.models.V1ConfigMapList;
import io.kubernetes.client.util.ClientBuilder;
import io.kubernetes.client.util.KubeConfig;
import java.io.File;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;

/**
 * The wire mode's informer (`run --wire`, docs/protocol.md "Wire mode"): client-java's own
 * informer for ConfigMaps in all namespaces, built on "start" from the kubeconfig the harness
 * names the way the library's InformerExample builds one: an ApiClient from {@code
 * ClientBuilder.kubeconfig(KubeConfig.loadKubeConfig(reader))}, a {@code SharedInformerFactory}
 * over it, {@code sharedIndexInformerFor} a CallGenerator over {@code
 * CoreV1Api.listConfigMapForAllNamespaces}, handlers by {@code addEventHandler}, then {@code
 * startAllRegisteredInformers}. Nothing scripted in between and no fake clock: the library's
 * threads, its OkHttp client and its Watch decoder against the harness's server. Each answer is
 * taken at once: has_synced, the whole cache, and the handler calls since the previous answer.
 */
final class WireInformer implements Instance {
  static final List<String> METHODS = List.of("add_handler", "start", "state");

  private final List<Handler> handlers = new ArrayList<>();
  private final List<JsonObject> calls = new ArrayList<>();
  private SharedInformerFactory factory;
  private volatile SharedIndexInformer<V1ConfigMap> informer;

  /** Records each call with what the informer's cache held for its key at that moment. */
  private final class Handler implements ResourceEventHandler<V1ConfigMap> {
    final String name;
    final boolean raises;

    Handler(String name, boolean raises) {
      this.name = name;
      this.raises = raises;
    }

    private void record(String kind, V1ConfigMap obj, JsonObject extra) {
      JsonObject call =
          Objects.call(name, kind, obj, extra, informer.getIndexer().getByKey(Objects.key(obj)));
      synchronized (calls) {
        calls.add(call);
      }
      if (raises) { // ProcessorListener.run catches it and goes on
        throw new RuntimeException("handler " + name + " raises, as asked");
      }
    }

    @Override
    public void onAdd(V1ConfigMap obj) {
      record("add", obj, new JsonObject());
    }

    @Override
    public void onUpdate(V1ConfigMap oldObj, V1ConfigMap newObj) {
      JsonObject extra = new JsonObject();
      extra.addProperty("old_rv", Objects.rv(oldObj));
      record("update", newObj, extra);
    }

    @Override
    public void onDelete(V1ConfigMap obj, boolean deletedFinalStateUnknown) {
      JsonObject extra = new JsonObject();
      extra.addProperty("tombstone", deletedFinalStateUnknown);
      record("delete", obj, extra);
    }
  }

  @Override
  public JsonElement call(String method, JsonObject args) throws Exception {
    switch (method) {
      case "add_handler":
        {
          JsonElement resync = args.get("resync");
          if (resync != null && !resync.isJsonNull() && resync.getAsDouble() != 0) {
            throw new Refused("unsupported", "per-handler resync needs the wall clock here");
          }
          if (!args.has("name")) {
            throw new Refused("bad_request", "add_handler needs a name");
          }
          Handler h =
              new Handler(
                  args.get("name").getAsString(),
                  args.has("raises") && args.get("raises").getAsBoolean());
          handlers.add(h);
          if (informer != null) {
            informer.addEventHandler(h);
          }
          break;
        }
      case "start":
        if (!args.has("kubeconfig")) {
          throw new Refused("bad_request", "start needs a kubeconfig path");
        }
        if (informer != null) {
          throw new Refused("bad_request", "the informer has started");
        }
        start(args.get("kubeconfig").getAsString());
        break;
      case "state":
        break;
      default:
        throw new Refused("unsupported", "unsupported method " + method + " in wire mode");
    }
    return observe();
  }

  private void start(String path) throws IOException {
    KubeConfig config;
    try (Reader reader = Files.newBufferedReader(new File(path).toPath(), StandardCharsets.UTF_8)) {
      config = KubeConfig.loadKubeConfig(reader);
    }
    config.setFile(new File(path)); // relative file references resolve next to it
    // ClientBuilder's read timeout is 0 (none) by default, as a watch needs; the kubeconfig's
    // user token becomes an AccessTokenAuthentication, sent over http:// too (README.md).
    ApiClient client = ClientBuilder.kubeconfig(config).build();
    CoreV1Api core = new CoreV1Api(client);
    factory = new SharedInformerFactory(client);
    SharedIndexInformer<V1ConfigMap> made =
        factory.sharedIndexInformerFor(
            params ->
                core.listConfigMapForAllNamespaces()
                    .resourceVersion(params.resourceVersion)
                    .watch(params.watch)
                    .timeoutSeconds(params.timeoutSeconds)
                    .buildCall(null),
            V1ConfigMap.class,
            V1ConfigMapList.class);
    informer = made; // before any handler can run: they read its indexer
    for (Handler h : handlers) {
      made.addEventHandler(h);
    }
    factory.startAllRegisteredInformers();
  }

  /**
   * Loads, before the first request, the classes a first list and watch would load (KubeConfig's
   * YAML, ClientBuilder, OkHttp, the generated API, the Gson adapters of ConfigMap lists and watch
   * events), touching no network: on a cold JVM the first watch went out 0.4-0.6 s after the
   * first list (0.03-0.08 s warmed), a good part of a harness plan that lasts about a second.
   * Nothing of it is kept.
   */
  static void warmUp() throws Exception {
    String kubeconfig =
        "{\"apiVersion\": \"v1\", \"kind\": \"Config\", \"current-context\": \"w\","
            + " \"clusters\": [{\"name\": \"w\","
            + " \"cluster\": {\"server\": \"http://127.0.0.1:9\"}}],"
            + " \"users\": [{\"name\": \"w\", \"user\": {\"token\": \"w\"}}],"
            + " \"contexts\": [{\"name\": \"w\","
            + " \"context\": {\"cluster\": \"w\", \"user\": \"w\"}}]}";
    ApiClient client =
        ClientBuilder.kubeconfig(KubeConfig.loadKubeConfig(new java.io.StringReader(kubeconfig)))
            .build();
    new CoreV1Api(client).listConfigMapForAllNamespaces().watch(true).buildCall(null);
    String item =
        "{\"metadata\": {\"name\": \"a\", \"namespace\": \"d\", \"resourceVersion\": \"1\","
            + " \"labels\": {\"k\": \"v\"}, \"creationTimestamp\": \"2024-01-01T00:00:00Z\"},"
            + " \"data\": {}}";
    client.getJSON().deserialize(
        "{\"metadata\": {\"resourceVersion\": \"1\"}, \"items\": [" + item + "]}",
        V1ConfigMapList.class);
    client.getJSON().deserialize(
        "{\"type\": \"ADDED\", \"object\": " + item + "}",
        com.google.gson.reflect.TypeToken.getParameterized(
                io.kubernetes.client.util.Watch.Response.class, V1ConfigMap.class)
            .getType());
  }

  private JsonObject observe() {
    SharedIndexInformer<V1ConfigMap> inf = informer;
    JsonArray taken = new JsonArray();
    synchronized (calls) {
      for (JsonObject c : calls) {
        taken.add(c);
      }
      calls.clear();
    }
    JsonObject o = new JsonObject();
    JsonObject waiting = new JsonObject();
    waiting.addProperty("op", "wire");
    o.add("waiting", waiting);
    o.addProperty("has_synced", inf != null && inf.hasSynced());
    o.add("cache", CacheComponents.objects(inf == null ? List.of() : inf.getIndexer().list()));
    o.add("calls", taken);
    return o;
  }

  @Override
  public void close() {
    if (factory != null) {
      factory.stopAllRegisteredInformers();
    }
  }
}
