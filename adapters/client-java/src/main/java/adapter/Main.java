package adapter;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The driver-protocol adapter (docs/protocol.md, versions 1 and 2) for the official Kubernetes
 * Java client, io.kubernetes:client-java and client-java-extended (the version in pom.xml).
 * Reads one JSON request per line on stdin, writes one response per line on stdout; the library's
 * logs go to stderr.
 */
public final class Main {
  static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();
  static final String VERSION = "0.1.0";
  static final String LIBRARY = "io.kubernetes:client-java 25.0.0, client-java-extended 25.0.0";

  private final Map<String, Instance> instances = new LinkedHashMap<>();
  /** The wire mode (--wire): only the informer, over the harness's server. */
  private final boolean wire;
  /** The convergence bound --quiescence declares in wire mode; 0: the harness's default. */
  private final double quiescence;

  private Main(boolean wire, double quiescence) {
    this.wire = wire;
    this.quiescence = quiescence;
  }

  static JsonArray names(Iterable<String> values) {
    JsonArray a = new JsonArray();
    for (String v : values) {
      a.add(v);
    }
    return a;
  }

  private static JsonObject methods(String... ms) {
    JsonObject c = new JsonObject();
    c.add("methods", names(java.util.List.of(ms)));
    return c;
  }

  /** The wire mode's components: the informer only, declaring "wire". */
  private JsonObject wireComponents() {
    JsonObject inf = methods(WireInformer.METHODS.toArray(new String[0]));
    inf.add("behaves_like", JsonNull.INSTANCE);
    inf.addProperty("wire", true);
    if (quiescence > 0) {
      inf.addProperty("quiescence_seconds", quiescence);
    }
    JsonObject c = new JsonObject();
    c.add("informer", inf);
    return c;
  }

  static JsonObject components(int protocol) {
    JsonObject c = new JsonObject();
    String[] queue = {"add", "get_nowait", "done", "len", "shut_down", "shutting_down"};
    c.add("queue", methods(queue));
    c.add(
        "delaying_queue",
        methods("add", "get_nowait", "done", "len", "shut_down", "shutting_down", "add_after"));
    JsonObject rlq =
        methods(
            "add",
            "get_nowait",
            "done",
            "len",
            "shut_down",
            "shutting_down",
            "add_after",
            "add_rate_limited",
            "forget",
            "num_requeues");
    rlq.add("limiters", names(Queues.LIMITERS));
    c.add("rate_limiting_queue", rlq);
    JsonObject rl = methods("when", "forget", "num_requeues");
    rl.add("limiters", names(Queues.LIMITERS));
    c.add("rate_limiter", rl);
    JsonObject store =
        methods(
            "add", "update", "delete", "replace", "get_by_key", "list_keys", "list", "by_index",
            "index_keys");
    store.add("indexers", names(CacheComponents.INDEXERS));
    c.add("store", store);
    JsonObject fifo =
        methods(
            "add",
            "update",
            "delete",
            "replace",
            "resync",
            "pop_nowait",
            "has_synced",
            "known_add",
            "known_delete");
    fifo.add("options", names(java.util.List.of("known_objects")));
    JsonObject values = new JsonObject();
    JsonArray onlyFalse = new JsonArray();
    onlyFalse.add(false);
    values.add("emit_delta_type_replaced", onlyFalse);
    fifo.add("option_values", values);
    c.add("delta_fifo", fifo);
    if (protocol >= 2) {
      JsonObject inf = new JsonObject();
      inf.add("methods", names(InformerInstance.METHODS));
      inf.add("behaves_like", JsonNull.INSTANCE); // a 2019-20 port with changes of its own
      inf.addProperty("initial", false); // no isInInitialList
      inf.addProperty("resync", false); // resync reads OffsetDateTime.now(): see README
      inf.addProperty("watch_list", false);
      c.add("informer", inf);
    }
    return c;
  }

  private void reset() {
    for (Instance i : instances.values()) {
      try {
        i.close();
      } catch (RuntimeException e) {
        System.err.println("close: " + e);
      }
    }
    instances.clear();
    FakeClock.set(0);
  }

  private boolean allQuiet() {
    for (Instance i : instances.values()) {
      if (!i.quiet()) {
        return false;
      }
    }
    return true;
  }

  private void advance(JsonElement seconds) {
    long step = Queues.nanos(seconds);
    if (step < 0) {
      throw new Refused("bad_request", "time never goes back");
    }
    long target = FakeClock.nanos() + step;
    // From deadline to deadline, so a wait that ends and starts another inside this advance
    // sees time pass as it would.
    for (int i = 0; i < 100_000; i++) {
      Long next = null;
      for (Instance inst : instances.values()) {
        Long d = inst.deadlineNs();
        if (d != null && d <= target && (next == null || d < next)) {
          next = d;
        }
      }
      if (next == null) {
        break;
      }
      FakeClock.set(Math.max(FakeClock.nanos(), next));
      Barrier.await("advance", this::allQuiet); // every waiter due now has run and parked again
    }
    FakeClock.set(target);
    Barrier.await("advance", this::allQuiet);
  }

  private JsonElement handle(JsonObject request) throws Exception {
    String op = request.has("op") ? request.get("op").getAsString() : "";
    switch (op) {
      case "hello":
        {
          int protocol = request.has("protocol") ? request.get("protocol").getAsInt() : 1;
          if (protocol != 1 && protocol != 2) {
            throw new Refused("unsupported", "this adapter speaks protocols 1 and 2");
          }
          if (wire && protocol != 2) {
            throw new Refused("unsupported", "the wire mode speaks protocol 2");
          }
          JsonObject r = new JsonObject();
          r.addProperty("protocol", protocol);
          r.addProperty("name", "client-java-adapter");
          r.addProperty("version", VERSION);
          r.addProperty(
              "implementation",
              LIBRARY
                  + ": extended.workqueue (DefaultWorkQueue, DefaultDelayingQueue,"
                  + " DefaultRateLimitingQueue, rate limiters), informer.cache (Cache, DeltaFIFO)"
                  + (protocol == 2 ? ", DefaultSharedIndexInformer" : "")
                  + (wire ? " from SharedInformerFactory over the wire" : ""));
          r.add("components", wire ? wireComponents() : components(protocol));
          return r;
        }
      case "reset":
        reset();
        return JsonNull.INSTANCE;
      case "create":
        {
          String name = request.get("instance").getAsString();
          String component = request.get("component").getAsString();
          JsonObject options =
              request.has("options") && request.get("options").isJsonObject()
                  ? request.getAsJsonObject("options")
                  : new JsonObject();
          Instance old = instances.remove(name);
          if (old != null) {
            old.close();
          }
          Instance inst;
          switch (wire ? "wire " + component : component) {
            case "queue":
            case "delaying_queue":
            case "rate_limiting_queue":
              inst = new Queues.QueueInstance(component, options);
              break;
            case "rate_limiter":
              inst = new Queues.LimiterInstance(options);
              break;
            case "store":
              inst = new CacheComponents.StoreInstance(options);
              break;
            case "delta_fifo":
              inst = new CacheComponents.FifoInstance(options);
              break;
            case "informer":
              {
                double resync = options.has("resync") ? options.get("resync").getAsDouble() : 0;
                if (resync != 0) {
                  throw new Refused("unsupported", "resync needs the wall clock here");
                }
                inst = new InformerInstance(0);
                break;
              }
            case "wire informer":
              {
                double resync = options.has("resync") ? options.get("resync").getAsDouble() : 0;
                if (resync != 0) {
                  throw new Refused("unsupported", "resync needs the wall clock here");
                }
                inst = new WireInformer();
                break;
              }
            default:
              throw new Refused("unsupported", "no component " + component);
          }
          instances.put(name, inst);
          return JsonNull.INSTANCE;
        }
      case "advance":
        if (wire) {
          throw new Refused("unsupported", "no fake clock in wire mode");
        }
        advance(request.get("seconds"));
        return JsonNull.INSTANCE;
      case "call":
        {
          Instance inst = instances.get(request.get("instance").getAsString());
          if (inst == null) {
            throw new Refused("no_instance", "no instance " + request.get("instance"));
          }
          JsonObject args =
              request.has("args") && request.get("args").isJsonObject()
                  ? request.getAsJsonObject("args")
                  : new JsonObject();
          return inst.call(request.get("method").getAsString(), args);
        }
      default:
        throw new Refused("bad_request", "unknown op " + op);
    }
  }

  /** The usage error of bad arguments: exit status 2. */
  private static void usage(String why) {
    System.err.println("adapter: " + why);
    System.err.println("usage: run [--wire [--quiescence SECONDS]]");
    System.exit(2);
  }

  public static void main(String[] argv) throws Exception {
    boolean wire = false;
    double quiescence = 0;
    if (argv.length > 0) {
      if (!argv[0].equals("--wire") || (argv.length != 1 && argv.length != 3)) {
        usage("unknown arguments " + String.join(" ", argv));
      }
      wire = true;
      if (argv.length == 3) {
        try {
          quiescence = argv[1].equals("--quiescence") ? Double.parseDouble(argv[2]) : -1;
        } catch (NumberFormatException e) {
          quiescence = -1;
        }
        if (!(quiescence > 0)) {
          usage("--quiescence takes a positive number of seconds");
        }
      }
    }
    // The library logs through SLF4J (slf4j-simple, to stderr); a handler asked to throw is
    // not worth a stack trace each time.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    System.setProperty(
        "org.slf4j.simpleLogger.log.io.kubernetes.client.informer.cache.ProcessorListener", "off");
    PrintStream out =
        new PrintStream(
            new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
    if (wire) {
      WireInformer.warmUp();
    }
    Main adapter = new Main(wire, quiescence);
    String line;
    while ((line = in.readLine()) != null) {
      JsonElement id = JsonNull.INSTANCE;
      JsonObject response = new JsonObject();
      try {
        JsonObject request = JsonParser.parseString(line).getAsJsonObject();
        if (request.has("id")) {
          id = request.get("id");
        }
        JsonElement result = adapter.handle(request);
        response.add("id", id);
        response.add("result", result);
      } catch (Refused e) {
        response.add("id", id);
        response.add("error", error(e.kind, e.getMessage()));
      } catch (Exception e) {
        response.add("id", id);
        response.add(
            "error", error("exception", e.getClass().getSimpleName() + ": " + e.getMessage()));
      }
      out.print(GSON.toJson(response));
      out.print("\n");
      out.flush();
    }
    adapter.reset();
    System.exit(0);
  }

  private static JsonObject error(String kind, String message) {
    JsonObject e = new JsonObject();
    e.addProperty("kind", kind);
    e.addProperty("message", message == null ? "" : message);
    return e;
  }
}
