package adapter;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import io.kubernetes.client.common.KubernetesObject;
import io.kubernetes.client.informer.cache.Cache;
import io.kubernetes.client.informer.cache.Caches;
import io.kubernetes.client.informer.cache.DeltaFIFO;
import io.kubernetes.client.openapi.models.V1ConfigMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.commons.lang3.tuple.MutablePair;

/**
 * client-java's {@code Cache} (its Indexer) as the {@code store} component and its {@code
 * DeltaFIFO} as {@code delta_fifo}. Both are single-threaded here: no barrier needed.
 */
final class CacheComponents {
  private CacheComponents() {}

  /** Index functions: {@code namespace} is the Cache's built-in one (Caches). */
  static final List<String> INDEXERS = List.of("labels", "namespace");

  static List<String> labelValues(V1ConfigMap obj) {
    List<String> out = new ArrayList<>();
    Map<String, String> labels = obj.getMetadata().getLabels();
    if (labels != null) {
      for (Map.Entry<String, String> l : labels.entrySet()) {
        out.add(l.getKey() + "=" + l.getValue());
      }
    }
    return out;
  }

  static JsonArray objects(List<? extends KubernetesObject> objs) {
    List<KubernetesObject> sorted = new ArrayList<>(objs);
    sorted.sort(Comparator.comparing(Objects::key));
    JsonArray a = new JsonArray();
    for (KubernetesObject o : sorted) {
      a.add(Objects.toJson(o));
    }
    return a;
  }

  static JsonArray sortedKeys(List<String> keys) {
    List<String> s = new ArrayList<>(keys);
    Collections.sort(s);
    return Queues.strings(s);
  }

  static List<V1ConfigMap> objectList(JsonElement e) {
    if (e == null || !e.isJsonArray()) {
      throw new Refused("bad_request", "objs must be a list");
    }
    List<V1ConfigMap> out = new ArrayList<>();
    for (JsonElement o : e.getAsJsonArray()) {
      out.add(Objects.toConfigMap(o));
    }
    return out;
  }

  static String str(JsonObject args, String name) {
    JsonElement e = args.get(name);
    if (e == null || !e.isJsonPrimitive()) {
      throw new Refused("bad_request", name + " must be a string");
    }
    return e.getAsString();
  }

  /** {@code new Cache<>()} (key func deletionHandlingMetaNamespaceKeyFunc, namespace index). */
  static final class StoreInstance implements Instance {
    final Cache<V1ConfigMap> cache = new Cache<>();

    StoreInstance(JsonObject options) {
      JsonElement idx = options.get("indexers");
      if (idx != null && idx.isJsonArray()) {
        for (JsonElement e : idx.getAsJsonArray()) {
          String name = e.getAsString();
          if (name.equals("labels")) {
            Map<String, Function<V1ConfigMap, List<String>>> m =
                Map.of("labels", CacheComponents::labelValues);
            cache.addIndexers(m);
          } else if (!name.equals("namespace")) {
            throw new Refused("unsupported", "no index function " + name);
          }
        }
      }
    }

    @Override
    public JsonElement call(String method, JsonObject args) {
      try {
        switch (method) {
          case "add":
            cache.add(Objects.toConfigMap(args.get("obj")));
            return JsonNull.INSTANCE;
          case "update":
            cache.update(Objects.toConfigMap(args.get("obj")));
            return JsonNull.INSTANCE;
          case "delete":
            cache.delete(Objects.toConfigMap(args.get("obj")));
            return JsonNull.INSTANCE;
          case "replace":
            cache.replace(objectList(args.get("objs")), str(args, "rv"));
            return JsonNull.INSTANCE;
          case "get_by_key":
            {
              V1ConfigMap got = cache.getByKey(str(args, "key"));
              JsonObject r = new JsonObject();
              r.addProperty("exists", got != null);
              r.add("obj", Objects.toJson(got));
              return r;
            }
          case "list_keys":
            return sortedKeys(cache.listKeys());
          case "list":
            return objects(cache.list());
          case "by_index":
            return objects(cache.byIndex(str(args, "index"), str(args, "value")));
          case "index_keys":
            return sortedKeys(cache.indexKeys(str(args, "index"), str(args, "value")));
          default:
            throw new Refused("unsupported", "store has no " + method);
        }
      } catch (IllegalArgumentException e) {
        throw new Refused("invalid_argument", e.getMessage());
      }
    }
  }

  /** {@code new DeltaFIFO(deletionHandlingMetaNamespaceKeyFunc, knownObjects or null)}. */
  static final class FifoInstance implements Instance {
    final Cache<V1ConfigMap> known;
    final DeltaFIFO fifo;

    FifoInstance(JsonObject options) {
      boolean withKnown = !options.has("known_objects") || options.get("known_objects").getAsBoolean();
      if (options.has("emit_delta_type_replaced")
          && options.get("emit_delta_type_replaced").getAsBoolean()) {
        throw new Refused("unsupported", "client-java's DeltaFIFO has no Replaced delta type");
      }
      known = withKnown ? new Cache<>() : null;
      fifo = new DeltaFIFO(Caches::deletionHandlingMetaNamespaceKeyFunc, known);
    }

    @Override
    public JsonElement call(String method, JsonObject args) throws InterruptedException {
      switch (method) {
        case "add":
          fifo.add(Objects.toConfigMap(args.get("obj")));
          return JsonNull.INSTANCE;
        case "update":
          fifo.update(Objects.toConfigMap(args.get("obj")));
          return JsonNull.INSTANCE;
        case "delete":
          fifo.delete(Objects.toConfigMap(args.get("obj")));
          return JsonNull.INSTANCE;
        case "replace":
          {
            List<KubernetesObject> objs = new ArrayList<>(objectList(args.get("objs")));
            fifo.replace(objs, str(args, "rv"));
            return JsonNull.INSTANCE;
          }
        case "resync":
          fifo.resync();
          return JsonNull.INSTANCE;
        case "has_synced":
          return new JsonPrimitive(fifo.hasSynced());
        case "pop_nowait":
          {
            JsonObject r = new JsonObject();
            // pop blocks on an empty FIFO; its items and queue hold the same keys
            if (fifo.listKeys().isEmpty()) {
              r.addProperty("kind", "empty");
              return r;
            }
            Deque<MutablePair<DeltaFIFO.DeltaType, KubernetesObject>> deltas = fifo.pop(d -> {});
            JsonArray a = new JsonArray();
            for (MutablePair<DeltaFIFO.DeltaType, KubernetesObject> d : deltas) {
              JsonObject delta = new JsonObject();
              delta.addProperty("type", d.getLeft().name());
              delta.add("object", Objects.toJson(d.getRight()));
              a.add(delta);
            }
            r.addProperty("kind", "item");
            r.add("deltas", a);
            return r;
          }
        case "known_add":
        case "known_delete":
          {
            if (known == null) {
              // protocol.md: accepted on a FIFO without known objects, and changes nothing
              return JsonNull.INSTANCE;
            }
            V1ConfigMap obj = Objects.toConfigMap(args.get("obj"));
            if (method.equals("known_add")) {
              if (known.getByKey(Objects.key(obj)) != null) {
                known.update(obj);
              } else {
                known.add(obj);
              }
            } else {
              known.delete(obj);
            }
            return JsonNull.INSTANCE;
          }
        default:
          throw new Refused("unsupported", "delta_fifo has no " + method);
      }
    }
  }
}
