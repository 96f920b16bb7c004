package adapter;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import io.kubernetes.client.common.KubernetesObject;
import io.kubernetes.client.informer.cache.Caches;
import io.kubernetes.client.informer.cache.DeltaFIFO;
import io.kubernetes.client.openapi.models.V1ConfigMap;
import io.kubernetes.client.openapi.models.V1ObjectMeta;
import java.util.Map;
import java.util.TreeMap;

/** Protocol objects ({namespace, name, rv, labels}) as ConfigMaps, and back. */
final class Objects {
  private Objects() {}

  static V1ConfigMap toConfigMap(JsonElement e) {
    if (e == null || !e.isJsonObject()) {
      throw new Refused("bad_request", "an object must be a JSON object");
    }
    JsonObject o = e.getAsJsonObject();
    if (!o.has("name") || !o.get("name").isJsonPrimitive()) {
      throw new Refused("bad_request", "an object needs a name");
    }
    V1ObjectMeta meta = new V1ObjectMeta();
    meta.setName(o.get("name").getAsString());
    meta.setNamespace(o.has("namespace") ? o.get("namespace").getAsString() : "");
    meta.setResourceVersion(o.has("rv") ? o.get("rv").getAsString() : "");
    Map<String, String> labels = new TreeMap<>();
    if (o.has("labels") && o.get("labels").isJsonObject()) {
      for (Map.Entry<String, JsonElement> l : o.getAsJsonObject("labels").entrySet()) {
        labels.put(l.getKey(), l.getValue().getAsString());
      }
    }
    meta.setLabels(labels);
    V1ConfigMap cm = new V1ConfigMap();
    cm.setApiVersion("v1");
    cm.setKind("ConfigMap");
    cm.setMetadata(meta);
    return cm;
  }

  /** The API server's JSON for a protocol object (what a list or watch response carries). */
  static JsonObject toWire(JsonElement e) {
    V1ConfigMap cm = toConfigMap(e);
    JsonObject meta = new JsonObject();
    meta.addProperty("name", cm.getMetadata().getName());
    if (!cm.getMetadata().getNamespace().isEmpty()) {
      meta.addProperty("namespace", cm.getMetadata().getNamespace());
    }
    meta.addProperty("resourceVersion", cm.getMetadata().getResourceVersion());
    JsonObject labels = new JsonObject();
    for (Map.Entry<String, String> l : cm.getMetadata().getLabels().entrySet()) {
      labels.addProperty(l.getKey(), l.getValue());
    }
    meta.add("labels", labels);
    JsonObject wire = new JsonObject();
    wire.addProperty("apiVersion", "v1");
    wire.addProperty("kind", "ConfigMap");
    wire.add("metadata", meta);
    return wire;
  }

  static JsonElement toJson(KubernetesObject obj) {
    if (obj == null) {
      return JsonNull.INSTANCE;
    }
    if (obj instanceof DeltaFIFO.DeletedFinalStateUnknown) {
      DeltaFIFO.DeletedFinalStateUnknown<?> t = (DeltaFIFO.DeletedFinalStateUnknown<?>) obj;
      JsonObject inner = new JsonObject();
      inner.addProperty("key", Caches.deletionHandlingMetaNamespaceKeyFunc(t));
      inner.add("obj", toJson(t.getObj()));
      JsonObject out = new JsonObject();
      out.add("tombstone", inner);
      return out;
    }
    V1ObjectMeta meta = obj.getMetadata();
    JsonObject out = new JsonObject();
    out.addProperty("namespace", meta.getNamespace() == null ? "" : meta.getNamespace());
    out.addProperty("name", meta.getName() == null ? "" : meta.getName());
    out.addProperty("rv", meta.getResourceVersion() == null ? "" : meta.getResourceVersion());
    JsonObject labels = new JsonObject();
    if (meta.getLabels() != null) {
      for (Map.Entry<String, String> l : new TreeMap<>(meta.getLabels()).entrySet()) {
        labels.addProperty(l.getKey(), l.getValue());
      }
    }
    out.add("labels", labels);
    return out;
  }

  static String key(KubernetesObject obj) {
    return Caches.deletionHandlingMetaNamespaceKeyFunc(obj);
  }

  static String rv(KubernetesObject obj) {
    if (obj == null || obj.getMetadata() == null) {
      return "";
    }
    String rv = obj.getMetadata().getResourceVersion();
    return rv == null ? "" : rv;
  }

  /**
   * One handler call as the protocol reports it: the handler, the kind, the object's key and
   * resourceVersion, the extra fields, and {@code cache}, the resourceVersion the informer's
   * cache held for the key when the handler ran (null: none), in both informer modes.
   */
  static JsonObject call(
      String handler,
      String kind,
      KubernetesObject obj,
      JsonObject extra,
      KubernetesObject cached) {
    JsonObject call = new JsonObject();
    call.addProperty("handler", handler);
    call.addProperty("kind", kind);
    call.addProperty("key", key(obj));
    call.addProperty("rv", rv(obj));
    for (String k : extra.keySet()) {
      call.add(k, extra.get(k));
    }
    if (cached == null) {
      call.add("cache", JsonNull.INSTANCE);
    } else {
      call.addProperty("cache", rv(cached));
    }
    return call;
  }
}
