package adapter;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.kubernetes.client.common.KubernetesObject;
import io.kubernetes.client.informer.ListerWatcher;
import io.kubernetes.client.informer.ResourceEventHandler;
import io.kubernetes.client.informer.SharedInformerFactory;
import io.kubernetes.client.informer.cache.Cache;
import io.kubernetes.client.informer.cache.Caches;
import io.kubernetes.client.informer.cache.DeltaFIFO;
import io.kubernetes.client.informer.cache.ProcessorListener;
import io.kubernetes.client.informer.impl.DefaultSharedIndexInformer;
import io.kubernetes.client.openapi.ApiClient;
import io.kubernetes.client.openapi.models.V1ConfigMap;
import io.kubernetes.client.openapi.models.V1ConfigMapList;
import io.kubernetes.client.util.generic.GenericKubernetesApi;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import okhttp3.Interceptor;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okio.Buffer;
import okio.BufferedSource;
import okio.Okio;
import okio.Source;
import okio.Timeout;
import org.apache.commons.lang3.tuple.MutablePair;

/**
 * client-java's real informer ({@code DefaultSharedIndexInformer}: Controller, ReflectorRunnable,
 * DeltaFIFO, Cache, SharedProcessor, ProcessorListener) over the real {@code GenericKubernetesApi},
 * {@code ApiClient} and {@code Watch}; only the HTTP transport is the seam (an OkHttp interceptor
 * that parks each request until the harness answers it, and a response body that parks each read
 * until the next event). See README.md for every seam and the barrier.
 */
final class InformerInstance implements Instance {
  static final List<String> METHODS =
      List.of(
          "add_handler",
          "start",
          "list_reply",
          "list_error",
          "watch_open",
          "watch_error",
          "watch_event",
          "watch_end",
          "pause",
          "resume",
          "state");

  private static final MediaType JSON_TYPE = MediaType.get("application/json");

  // ------------------------------------------------------------------ the seam

  /** Where the reflector thread parks, and how the harness's answers reach it. */
  static final class Seam {
    volatile String state; // list, watch, watching (null: the reflector is not parked here)
    volatile String rv = "";
    volatile Object[] reply;
    volatile boolean closed;
    volatile boolean watchRequested;

    Object[] park(String op, String resourceVersion) throws IOException {
      synchronized (FakeClock.LOCK) {
        if (closed) {
          throw new IOException("informer discarded");
        }
        rv = resourceVersion;
        state = op;
        FakeClock.LOCK.notifyAll();
        try {
          while (reply == null && !closed) {
            FakeClock.LOCK.wait();
          }
        } catch (InterruptedException e) {
          state = null;
          Thread.currentThread().interrupt();
          throw new java.io.InterruptedIOException("informer stopped");
        }
        Object[] r = reply;
        reply = null;
        state = null;
        if (r == null) {
          throw new IOException("informer discarded");
        }
        return r;
      }
    }

    /**
     * Read under the lock the reflector thread changes both fields in: read one at a time, a
     * stale {@code state} and a fresh {@code reply} would call a thread that just took its answer
     * parked, and the barrier would observe before the answer was handled.
     */
    boolean parked() {
      synchronized (FakeClock.LOCK) {
        return state != null && reply == null;
      }
    }

    void answer(Object... r) {
      synchronized (FakeClock.LOCK) {
        reply = r;
        FakeClock.LOCK.notifyAll();
      }
    }

    void close() {
      synchronized (FakeClock.LOCK) {
        closed = true;
        FakeClock.LOCK.notifyAll();
      }
    }
  }

  static JsonObject status(String reason) {
    JsonObject s = new JsonObject();
    s.addProperty("kind", "Status");
    s.addProperty("apiVersion", "v1");
    s.add("metadata", new JsonObject());
    s.addProperty("status", "Failure");
    switch (reason) {
      case "expired":
        s.addProperty("message", "too old resource version");
        s.addProperty("reason", "Expired");
        s.addProperty("code", 410);
        break;
      case "internal":
        s.addProperty("message", "internal error");
        s.addProperty("reason", "InternalError");
        s.addProperty("code", 500);
        break;
      case "too_many_requests":
        s.addProperty("message", "too many requests, please try again later");
        s.addProperty("reason", "TooManyRequests");
        s.addProperty("code", 429);
        break;
      default:
        throw new Refused("bad_request", "unknown reason " + reason);
    }
    return s;
  }

  static byte[] line(JsonObject o) {
    return (Main.GSON.toJson(o) + "\n").getBytes(StandardCharsets.UTF_8);
  }

  /** The OkHttp interceptor: every list or watch request waits for the harness. */
  static final class SeamInterceptor implements Interceptor {
    final Seam seam;

    SeamInterceptor(Seam seam) {
      this.seam = seam;
    }

    @Override
    public Response intercept(Chain chain) throws IOException {
      Request request = chain.request();
      boolean watch = "true".equals(request.url().queryParameter("watch"));
      String rv = request.url().queryParameter("resourceVersion");
      if (rv == null) {
        rv = "";
      }
      if (watch) {
        seam.watchRequested = true;
      }
      Object[] r = seam.park(watch ? "watch" : "list", rv);
      Response.Builder b =
          new Response.Builder().request(request).protocol(Protocol.HTTP_1_1);
      if (r[0].equals("error")) {
        JsonObject s = (JsonObject) r[1];
        int code = s.get("code").getAsInt();
        b.code(code).message(s.get("reason").getAsString());
        if (code == 429) {
          b.header("Retry-After", "1");
        }
        return b.body(ResponseBody.create(Main.GSON.toJson(s), JSON_TYPE)).build();
      }
      b.code(200).message("OK");
      if (watch) {
        BufferedSource body = Okio.buffer(new WatchSource(seam, rv));
        return b.body(ResponseBody.create(body, JSON_TYPE, -1)).build();
      }
      JsonObject list = new JsonObject();
      list.addProperty("apiVersion", "v1");
      list.addProperty("kind", "ConfigMapList");
      JsonObject meta = new JsonObject();
      meta.addProperty("resourceVersion", (String) r[2]);
      list.add("metadata", meta);
      list.add("items", (JsonArray) r[1]);
      return b.body(ResponseBody.create(Main.GSON.toJson(list), JSON_TYPE)).build();
    }
  }

  /** An open watch's response body: each read parks until the harness sends something. */
  static final class WatchSource implements Source {
    final Seam seam;
    final String rv;
    boolean ended;

    WatchSource(Seam seam, String rv) {
      this.seam = seam;
      this.rv = rv;
    }

    @Override
    public long read(Buffer sink, long byteCount) throws IOException {
      if (ended) {
        return -1;
      }
      Object[] r = seam.park("watching", rv);
      if (r[0].equals("event")) {
        byte[] bytes = (byte[]) r[1];
        sink.write(bytes);
        return bytes.length;
      }
      String how = (String) r[1];
      ended = true;
      switch (how) {
        case "clean":
          return -1;
        case "reset":
          // what a socket read throws when the connection breaks
          throw new java.net.SocketException("Connection reset");
        default:
          {
            JsonObject event = new JsonObject();
            event.addProperty("type", "ERROR");
            event.add("object", status(how));
            byte[] bytes = line(event);
            sink.write(bytes);
            return bytes.length;
          }
      }
    }

    @Override
    public Timeout timeout() {
      return Timeout.NONE;
    }

    @Override
    public void close() {}
  }

  // ------------------------------------------------------------------ scheduling seams

  /**
   * The DeltaFIFO the informer is built with: client-java's own, with a gate in front of {@code
   * pop} so the adapter can see the process loop idle (parked at the gate with nothing queued) and
   * can pause it. Every method is the library's; the gate only decides when {@code pop} is called.
   */
  static final class GatedFifo extends DeltaFIFO {
    final Object gate = new Object();
    volatile boolean waiting;
    volatile boolean paused;

    GatedFifo(Cache<V1ConfigMap> known) {
      super(Caches::deletionHandlingMetaNamespaceKeyFunc, known);
    }

    private void wake() {
      synchronized (gate) {
        gate.notifyAll();
      }
      FakeClock.tick();
    }

    @Override
    public Deque<MutablePair<DeltaType, KubernetesObject>> pop(
        Consumer<Deque<MutablePair<DeltaType, KubernetesObject>>> func)
        throws InterruptedException {
      synchronized (gate) {
        waiting = true;
        FakeClock.tick();
        try {
          while (paused || listKeys().isEmpty()) {
            gate.wait();
          }
        } finally {
          waiting = false;
        }
      }
      return super.pop(func);
    }

    /**
     * Under the gate, as {@code pop} changes {@code waiting}: read apart, a stale {@code waiting}
     * and a queue the loop has just emptied would call a loop that is processing idle.
     */
    boolean idle() {
      synchronized (gate) {
        return waiting && (paused || listKeys().isEmpty());
      }
    }

    void setPaused(boolean p) {
      paused = p;
      wake();
    }

    @Override
    public void add(KubernetesObject obj) {
      super.add(obj);
      wake();
    }

    @Override
    public void update(KubernetesObject obj) {
      super.update(obj);
      wake();
    }

    @Override
    public void delete(KubernetesObject obj) {
      super.delete(obj);
      wake();
    }

    @Override
    public void replace(List<KubernetesObject> list, String resourceVersion) {
      super.replace(list, resourceVersion);
      wake();
    }

    @Override
    public void resync() {
      super.resync();
      wake();
    }
  }

  /**
   * A ProcessorListener's notification queue that counts what was ever added to it and, once it
   * is added, waits until the listener's handler has run it: the schedule in which the listener
   * thread runs at once, before the thread that distributed the notification goes on (a schedule
   * the real threads may always take, and the one refimpl's reference takes). Without it a
   * listener may lag behind the cache, and the cache it reads says nothing about store-before-
   * notify (INF-1). The wait is bounded (Barrier.GUARD_NS) and ends on interrupt.
   */
  static final class CountingQueue<E> extends LinkedBlockingQueue<E> {
    private static final long serialVersionUID = 1L;
    final AtomicLong added = new AtomicLong();
    final transient RecordingHandler handler;

    CountingQueue(RecordingHandler handler) {
      this.handler = handler;
    }

    @Override
    public boolean offer(E e) {
      long ticket = added.incrementAndGet(); // before the listener thread can see it
      boolean ok = super.offer(e);
      FakeClock.tick();
      if (handler == null || !ok) {
        return ok;
      }
      long giveUp = System.nanoTime() + Barrier.GUARD_NS;
      synchronized (FakeClock.LOCK) {
        while (handler.handled.get() < ticket && System.nanoTime() < giveUp) {
          try {
            FakeClock.LOCK.wait(1);
          } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
      return ok;
    }
  }

  /**
   * SharedProcessor's executor: like its default cached thread pool, one thread per listener;
   * before a ProcessorListener starts, its notification queue becomes a {@link CountingQueue}
   * (same LinkedBlockingQueue, counted), so the barrier can tell when its handler is caught up.
   */
  static final class ListenerExecutor extends AbstractExecutorService {
    final List<Thread> threads = new ArrayList<>();
    volatile boolean shutdown;

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public synchronized void execute(Runnable command) {
      if (command instanceof ProcessorListener) {
        try {
          Object handler = field(command, "handler");
          RecordingHandler recording =
              handler instanceof RecordingHandler ? (RecordingHandler) handler : null;
          BlockingQueue old = (BlockingQueue) field(command, "queue");
          CountingQueue counting = new CountingQueue(recording);
          if (!old.isEmpty()) { // nothing is distributed to a listener before it starts
            throw new IllegalStateException("a listener got notifications before it started");
          }
          set(command, "queue", counting);
          if (recording != null) {
            recording.queue = counting;
          }
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException(e);
        }
      }
      Thread t = new Thread(command, "listener-" + threads.size());
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }

    @Override
    public synchronized void shutdown() {
      shutdown = true;
    }

    @Override
    public synchronized List<Runnable> shutdownNow() {
      shutdown = true;
      for (Thread t : threads) {
        t.interrupt();
      }
      return new ArrayList<>();
    }

    @Override
    public boolean isShutdown() {
      return shutdown;
    }

    @Override
    public synchronized boolean isTerminated() {
      return shutdown && threads.stream().noneMatch(Thread::isAlive);
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      List<Thread> ts;
      synchronized (this) {
        ts = new ArrayList<>(threads);
      }
      for (Thread t : ts) {
        t.join(Math.max(1, unit.toMillis(timeout)));
      }
      return isTerminated();
    }
  }

  static Object field(Object target, String name) throws ReflectiveOperationException {
    Field f = findField(target.getClass(), name);
    f.setAccessible(true);
    return f.get(target);
  }

  static void set(Object target, String name, Object value) throws ReflectiveOperationException {
    Field f = findField(target.getClass(), name);
    f.setAccessible(true);
    f.set(target, value);
  }

  private static Field findField(Class<?> c, String name) throws NoSuchFieldException {
    for (Class<?> k = c; k != null; k = k.getSuperclass()) {
      try {
        return k.getDeclaredField(name);
      } catch (NoSuchFieldException e) {
        // look in the superclass
      }
    }
    throw new NoSuchFieldException(c.getName() + "." + name);
  }

  // ------------------------------------------------------------------ handlers

  /** An event handler that records each call as the protocol reports it. */
  final class RecordingHandler implements ResourceEventHandler<V1ConfigMap> {
    final String name;
    final boolean raises;
    volatile CountingQueue<?> queue;
    final AtomicLong handled = new AtomicLong();

    RecordingHandler(String name, boolean raises) {
      this.name = name;
      this.raises = raises;
    }

    boolean quiet() {
      CountingQueue<?> q = queue;
      return q == null || handled.get() == q.added.get();
    }

    private void record(String kind, V1ConfigMap obj, JsonObject extra) {
      try {
        JsonObject call =
            Objects.call(name, kind, obj, extra, cache.getByKey(Objects.key(obj)));
        synchronized (calls) {
          calls.add(call);
        }
        if (raises) {
          throw new RuntimeException("handler " + name + " raises, as asked");
        }
      } finally {
        handled.incrementAndGet();
        FakeClock.tick();
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

  // ------------------------------------------------------------------ the informer

  final Seam seam = new Seam();
  final Cache<V1ConfigMap> cache = new Cache<>();
  final GatedFifo fifo = new GatedFifo(cache);
  final FakeScheduler reflectScheduler = new FakeScheduler("controller-reflector");
  final FakeScheduler resyncScheduler = new FakeScheduler("controller-resync");
  final ListenerExecutor listenerExecutor = new ListenerExecutor();
  final DefaultSharedIndexInformer<V1ConfigMap, V1ConfigMapList> informer;
  final Thread controllerThread;
  final List<RecordingHandler> handlers = new ArrayList<>();
  final List<JsonObject> calls = new ArrayList<>();
  boolean started;

  @SuppressWarnings("unchecked")
  InformerInstance(long resyncMillis) throws ReflectiveOperationException {
    OkHttpClient http = new OkHttpClient.Builder().addInterceptor(new SeamInterceptor(seam)).build();
    ApiClient apiClient = new ApiClient(http);
    apiClient.setBasePath("http://harness.invalid");
    apiClient.setReadTimeout(0); // GenericKubernetesApi requires it (watches never time out)
    GenericKubernetesApi<V1ConfigMap, V1ConfigMapList> api =
        new GenericKubernetesApi<>(
            V1ConfigMap.class, V1ConfigMapList.class, "", "v1", "configmaps", apiClient);
    // The ListerWatcher SharedInformerFactory builds over a GenericKubernetesApi (all
    // namespaces), taken from an informer the factory made and that is never started.
    DefaultSharedIndexInformer<V1ConfigMap, V1ConfigMapList> made =
        (DefaultSharedIndexInformer<V1ConfigMap, V1ConfigMapList>)
            new SharedInformerFactory(apiClient)
                .sharedIndexInformerFor(api, V1ConfigMap.class, resyncMillis);
    ListerWatcher<V1ConfigMap, V1ConfigMapList> listerWatcher =
        (ListerWatcher<V1ConfigMap, V1ConfigMapList>)
            field(field(made, "controller"), "listerWatcher");
    shutDownExecutors(field(made, "controller"));
    // The same informer as the factory's, with the DeltaFIFO over its Cache given explicitly
    // (the public constructor DefaultSharedIndexInformer(..., DeltaFIFO, Indexer, handler)).
    informer =
        new DefaultSharedIndexInformer<>(
            V1ConfigMap.class, listerWatcher, resyncMillis, fifo, cache, null);
    Object controller = field(informer, "controller");
    shutDownExecutors(controller);
    set(controller, "reflectExecutor", reflectScheduler);
    set(controller, "resyncExecutor", resyncScheduler);
    Object processor = field(informer, "processor");
    ((ExecutorService) field(processor, "executorService")).shutdownNow();
    set(processor, "executorService", listenerExecutor);
    controllerThread = (Thread) field(informer, "controllerThread");
  }

  private static void shutDownExecutors(Object controller) throws ReflectiveOperationException {
    ((ScheduledExecutorService) field(controller, "reflectExecutor")).shutdownNow();
    ((ScheduledExecutorService) field(controller, "resyncExecutor")).shutdownNow();
  }

  @Override
  public boolean quiet() {
    if (!started) {
      return handlers.stream().allMatch(RecordingHandler::quiet);
    }
    // upstream first: once the reflector is parked it feeds nothing more, and so on down.
    // Except at start, where the controller thread is upstream of the reflector: Controller.run
    // schedules the reflector, then pops. While that thread lives, a scheduler with no worker
    // yet is starting, not quiet (counted as quiet, a reflector read just before it was
    // scheduled and a process loop read just after it began to pop made the barrier answer
    // start with waiting "idle" while the first list was on its way: INF-9 under load).
    boolean reflector =
        seam.parked()
            || seam.closed
            || (controllerThread.isAlive()
                ? reflectScheduler.sleepingOnceStarted()
                : reflectScheduler.sleeping());
    if (!reflector) {
      return false;
    }
    boolean controller = !controllerThread.isAlive() || fifo.idle();
    if (!controller) {
      return false;
    }
    for (RecordingHandler h : handlers) {
      if (!h.quiet()) {
        return false;
      }
    }
    return true;
  }

  @Override
  public Long deadlineNs() {
    Long a = reflectScheduler.deadlineNs();
    Long b = resyncScheduler.deadlineNs();
    if (a == null) {
      return b;
    }
    return b == null ? a : Math.min(a, b);
  }

  private void settle() {
    Barrier.await("informer", this::quiet);
  }

  private JsonObject waiting() {
    JsonObject w = new JsonObject();
    if (!started) {
      w.addProperty("op", "idle");
    } else if (seam.parked()) {
      w.addProperty("op", seam.state);
      w.addProperty("rv", seam.rv);
    } else if (reflectScheduler.sleepingOnTask()) {
      w.addProperty("op", "sleeping");
    } else {
      w.addProperty("op", "idle");
    }
    return w;
  }

  private JsonObject observe() {
    JsonObject o = new JsonObject();
    o.add("waiting", waiting());
    o.addProperty("has_synced", informer.hasSynced());
    o.add("cache", CacheComponents.objects(cache.list()));
    JsonArray a = new JsonArray();
    synchronized (calls) {
      for (JsonObject c : calls) {
        a.add(c);
      }
      calls.clear();
    }
    o.add("calls", a);
    return o;
  }

  private void expect(String op) {
    if (!started || !seam.parked() || !op.equals(seam.state)) {
      throw new Refused("bad_request", "the informer is not waiting for " + op);
    }
  }

  @Override
  public JsonElement call(String method, JsonObject args) {
    switch (method) {
      case "add_handler":
        {
          JsonElement resync = args.get("resync");
          if (resync != null && !resync.isJsonNull() && resync.getAsDouble() != 0) {
            throw new Refused("unsupported", "per-handler resync needs the wall clock here");
          }
          RecordingHandler h =
              new RecordingHandler(
                  args.get("name").getAsString(),
                  args.has("raises") && args.get("raises").getAsBoolean());
          handlers.add(h);
          informer.addEventHandler(h);
          break;
        }
      case "start":
        if (started) {
          throw new Refused("bad_request", "already started");
        }
        started = true;
        informer.run();
        break;
      case "list_reply":
        {
          expect("list");
          JsonArray items = new JsonArray();
          JsonElement objs = args.get("objects");
          if (objs != null && objs.isJsonArray()) {
            for (JsonElement e : objs.getAsJsonArray()) {
              items.add(Objects.toWire(e));
            }
          }
          seam.answer("reply", items, args.get("rv").getAsString());
          break;
        }
      case "list_error":
        expect("list");
        seam.answer("error", status(args.get("reason").getAsString()));
        break;
      case "watch_error":
        expect("watch");
        seam.answer("error", status(args.get("reason").getAsString()));
        break;
      case "watch_open":
        expect("watch");
        seam.answer("open");
        break;
      case "watch_event":
        {
          expect("watching");
          String type = args.get("type").getAsString();
          JsonObject event = new JsonObject();
          event.addProperty("type", type);
          if (type.equals("BOOKMARK")) {
            JsonObject meta = new JsonObject();
            JsonObject obj = args.getAsJsonObject("object");
            meta.addProperty("resourceVersion", obj.has("rv") ? obj.get("rv").getAsString() : "");
            JsonObject wire = new JsonObject();
            wire.addProperty("apiVersion", "v1");
            wire.addProperty("kind", "ConfigMap");
            wire.add("metadata", meta);
            event.add("object", wire);
          } else if (type.equals("ADDED") || type.equals("MODIFIED") || type.equals("DELETED")) {
            event.add("object", Objects.toWire(args.get("object")));
          } else {
            throw new Refused("bad_request", "unknown event type " + type);
          }
          seam.answer("event", line(event));
          break;
        }
      case "watch_end":
        {
          expect("watching");
          String how = args.get("how").getAsString();
          if (!List.of("clean", "expired", "internal", "reset").contains(how)) {
            throw new Refused("bad_request", "unknown end " + how);
          }
          seam.answer("end", how);
          break;
        }
      case "pause":
        fifo.setPaused(true);
        break;
      case "resume":
        fifo.setPaused(false);
        break;
      case "state":
        break;
      default:
        throw new Refused("unsupported", "informer has no " + method);
    }
    settle();
    return observe();
  }

  @Override
  public void close() {
    seam.close();
    if (started) {
      informer.stop();
    }
    reflectScheduler.shutdownNow();
    resyncScheduler.shutdownNow();
    listenerExecutor.shutdownNow();
  }
}
