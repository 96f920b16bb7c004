//! Conformance adapter (driver protocol 2, docs/protocol.md) for kube-rs' watcher and
//! reflector store: `kube::runtime::watcher` on a `kube::Client` whose HTTP service is a
//! seam the harness answers, with the `reflect` store writer and a stream consumer that
//! plays the handlers. See README.md for what maps and how the barrier works.

use std::{
    collections::{BTreeMap, HashMap},
    future::Future,
    io::{BufRead, Write},
    pin::Pin,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    task::{Context, Poll, Waker},
    time::Duration,
};

use bytes::Bytes;
use futures::{
    channel::{mpsc, oneshot},
    FutureExt, StreamExt,
};
use http::{Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    runtime::{
        reflector::{self, ObjectRef, Store},
        utils::ResetTimerBackoff,
        watcher::{self, ExponentialBackoff},
        WatchStreamExt,
    },
    Api, Client,
};
use serde_json::{json, Map, Value};
use tokio::{task::JoinHandle, time::Instant};

mod wire;

const VERSION: &str = "0.1.0";
const IMPLEMENTATION: &str =
    "kube-runtime 5.0.0 (kube 5.0.0, k8s-openapi 0.29.0): watcher + reflector store";

type RespBody = UnsyncBoxBody<Bytes, std::io::Error>;
type Chunk = Result<Bytes, std::io::Error>;

// ---------------------------------------------------------------------------------------
// Quiescence: the runtime's on_thread_park hook runs exactly when the current-thread
// scheduler has no task to poll and no deferred yield; it wakes the barrier's future.

static IDLE_WAKER: Mutex<Option<Waker>> = Mutex::new(None);
static ACTIVITY: AtomicU64 = AtomicU64::new(0);

fn bump() {
    ACTIVITY.fetch_add(1, Ordering::SeqCst);
}

fn on_park() {
    if let Some(w) = IDLE_WAKER.lock().unwrap().take() {
        w.wake();
    }
}

struct Idle {
    armed: bool,
}

impl Future for Idle {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut slot = IDLE_WAKER.lock().unwrap();
        if self.armed && slot.is_none() {
            return Poll::Ready(());
        }
        *slot = Some(cx.waker().clone());
        self.armed = true;
        Poll::Pending
    }
}

/// Returns once every task is parked and two idle points in a row saw no seam or
/// consumer activity (the first idle point lets the driver fire timers due now).
async fn quiesce() {
    loop {
        let before = ACTIVITY.load(Ordering::SeqCst);
        Idle { armed: false }.await;
        Idle { armed: false }.await;
        if ACTIVITY.load(Ordering::SeqCst) == before {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------
// The seam: the HTTP service under kube::Client.

struct PendingList {
    rv: String,
    reply: oneshot::Sender<Response<RespBody>>,
}

struct PendingWatch {
    rv: String,
    initial: bool,
    reply: oneshot::Sender<Response<RespBody>>,
}

struct OpenWatch {
    rv: String,
    initial: bool,
    tx: mpsc::UnboundedSender<Chunk>,
}

#[derive(Default)]
struct Seam {
    list: Option<PendingList>,
    watch: Option<PendingWatch>,
    open: Option<OpenWatch>,
}

fn query(uri: &http::Uri) -> HashMap<String, String> {
    let mut out = HashMap::new();
    if let Some(q) = uri.query() {
        for pair in q.split('&') {
            let mut it = pair.splitn(2, '=');
            let k = it.next().unwrap_or("").to_string();
            let v = it.next().unwrap_or("").to_string();
            out.insert(k, v);
        }
    }
    out
}

fn make_client(seam: Arc<Mutex<Seam>>) -> Client {
    let svc = tower::service_fn(move |req: Request<kube::client::Body>| {
        let seam = seam.clone();
        async move {
            bump();
            let q = query(req.uri());
            let rv = q.get("resourceVersion").cloned().unwrap_or_default();
            let (tx, rx) = oneshot::channel();
            {
                let mut s = seam.lock().unwrap();
                if q.get("watch").map(String::as_str) == Some("true") {
                    let initial = q.get("sendInitialEvents").map(String::as_str) == Some("true");
                    s.watch = Some(PendingWatch {
                        rv,
                        initial,
                        reply: tx,
                    });
                } else {
                    s.list = Some(PendingList { rv, reply: tx });
                }
            }
            match rx.await {
                Ok(resp) => Ok(resp),
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "the adapter dropped this request",
                )),
            }
        }
    });
    Client::new(svc, "default")
}

fn full(status: StatusCode, body: Value) -> Response<RespBody> {
    let bytes = Bytes::from(serde_json::to_vec(&body).unwrap());
    let body = Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp
}

fn status_body(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("scripted {reason}"), "reason": reason, "code": code})
}

fn reason_code(reason: &str) -> Option<(u16, &'static str)> {
    match reason {
        "expired" => Some((410, "Expired")),
        "internal" => Some((500, "InternalError")),
        "too_many_requests" => Some((429, "TooManyRequests")),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Objects.

fn to_configmap_json(o: &Value) -> Result<Value, String> {
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .ok_or("object needs 'name'")?;
    let ns = o.get("namespace").and_then(Value::as_str).unwrap_or("");
    let rv = o
        .get("rv")
        .and_then(Value::as_str)
        .ok_or("object needs 'rv'")?;
    let labels = o.get("labels").cloned().unwrap_or_else(|| json!({}));
    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    if !ns.is_empty() {
        meta.insert("namespace".into(), json!(ns));
    }
    meta.insert("resourceVersion".into(), json!(rv));
    if labels.as_object().is_some_and(|m| !m.is_empty()) {
        meta.insert("labels".into(), labels);
    }
    Ok(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}))
}

fn from_configmap(cm: &ConfigMap) -> Value {
    let m = &cm.metadata;
    let labels: BTreeMap<String, String> = m.labels.clone().unwrap_or_default();
    json!({
        "namespace": m.namespace.clone().unwrap_or_default(),
        "name": m.name.clone().unwrap_or_default(),
        "rv": m.resource_version.clone().unwrap_or_default(),
        "labels": labels,
    })
}

fn key_of(cm: &ConfigMap) -> String {
    let ns = cm.metadata.namespace.clone().unwrap_or_default();
    let name = cm.metadata.name.clone().unwrap_or_default();
    if ns.is_empty() {
        name
    } else {
        format!("{ns}/{name}")
    }
}

fn rv_of(cm: &ConfigMap) -> String {
    cm.metadata.resource_version.clone().unwrap_or_default()
}

fn cached_rv(store: &Store<ConfigMap>, cm: &ConfigMap) -> Value {
    let name = cm.metadata.name.clone().unwrap_or_default();
    let mut r = ObjectRef::<ConfigMap>::new(&name);
    if let Some(ns) = cm.metadata.namespace.as_deref().filter(|s| !s.is_empty()) {
        r = r.within(ns);
    }
    match store.get(&r) {
        Some(obj) => json!(rv_of(&obj)),
        None => Value::Null,
    }
}

// ---------------------------------------------------------------------------------------
// Handlers: each registered handler is called, in registration order, for every event
// the reflector stream yields (after the store writer applied it).

struct Handler {
    name: String,
    raises: bool,
    view: HashMap<String, String>,
}

#[derive(Default)]
struct Shared {
    handlers: Vec<Handler>,
    calls: Vec<Value>,
}

#[derive(Clone, Copy, PartialEq)]
enum InitMode {
    /// InitApply events reach the handlers when the stream yields them (before the store
    /// holds them: kube swaps its buffer in at InitDone).
    Stream,
    /// The consumer buffers InitApply events until InitDone, as the docs of
    /// `watcher::Event::InitApply` advise when a complete set matters.
    Buffer,
    /// As `Buffer`, and at InitDone each handler is also told of the keys it had that the
    /// relist did not name, as the docs of `watcher::Event::InitDone` say to assume.
    BufferDeletes,
}

struct Opts {
    init: InitMode,
    seeded_backoff: bool,
    /// `watch_error expired` is sent as a 200 whose body is one 410 ERROR event (what an
    /// API server's watch cache answers for an expired resourceVersion) instead of an
    /// HTTP 410.
    watch_410_as_event: bool,
    /// Declare `watch_list` in `hello` (off: the harness never asks for streaming lists).
    declare_watch_list: bool,
}

fn dispatch(shared: &Mutex<Shared>, store: &Store<ConfigMap>, ev: &watcher::Event<ConfigMap>) {
    let (obj, delete) = match ev {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => (o, false),
        watcher::Event::Delete(o) => (o, true),
        watcher::Event::Init | watcher::Event::InitDone => return,
    };
    let key = key_of(obj);
    let rv = rv_of(obj);
    let mut panic_after = None;
    {
        let mut sh = shared.lock().unwrap();
        let Shared { handlers, calls } = &mut *sh;
        for h in handlers.iter_mut() {
            let cache = cached_rv(store, obj);
            let mut call = json!({"handler": h.name, "key": key, "rv": rv, "cache": cache});
            if delete {
                call["kind"] = json!("delete");
                call["tombstone"] = json!(false);
                h.view.remove(&key);
            } else if let Some(old) = h.view.insert(key.clone(), rv.clone()) {
                call["kind"] = json!("update");
                call["old_rv"] = json!(old);
            } else {
                call["kind"] = json!("add");
            }
            calls.push(call);
            if h.raises {
                panic_after = Some(h.name.clone());
                break;
            }
        }
    }
    if let Some(name) = panic_after {
        panic!("handler {name} raises");
    }
}

/// `BufferDeletes` at InitDone: every key a handler has that the relist did not name is
/// deleted from its view, with the last object it was given (its final state unknown:
/// reported as a tombstone).
fn dispatch_vanished(
    shared: &Mutex<Shared>,
    store: &Store<ConfigMap>,
    listed: &std::collections::HashSet<String>,
) {
    let mut panic_after = None;
    let mut sh = shared.lock().unwrap();
    let Shared { handlers, calls } = &mut *sh;
    'handlers: for h in handlers.iter_mut() {
        let mut gone: Vec<(String, String)> = h
            .view
            .iter()
            .filter(|(k, _)| !listed.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        gone.sort();
        for (key, rv) in gone {
            h.view.remove(&key);
            let cache = store
                .state()
                .iter()
                .find(|o| key_of(o) == key)
                .map_or(Value::Null, |o| json!(rv_of(o)));
            calls.push(
                json!({"handler": h.name, "kind": "delete", "key": key, "rv": rv,
                              "tombstone": true, "cache": cache}),
            );
            if h.raises {
                panic_after = Some(h.name.clone());
                break 'handlers;
            }
        }
    }
    drop(sh);
    if let Some(name) = panic_after {
        panic!("handler {name} raises");
    }
}

/// The handlers' side of the reflector stream (README, Handlers): every event it yields,
/// after the store writer applied it, is dispatched per `init` until the stream ends.
async fn consume<S>(stream: S, shared: Arc<Mutex<Shared>>, reader: Store<ConfigMap>, init: InitMode)
where
    S: futures::Stream<Item = Result<watcher::Event<ConfigMap>, watcher::Error>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut held: Vec<watcher::Event<ConfigMap>> = Vec::new();
    while let Some(item) = stream.next().await {
        bump();
        match item {
            Ok(ev) => match (init, &ev) {
                (InitMode::Stream, _) => dispatch(&shared, &reader, &ev),
                (_, watcher::Event::Init) => held.clear(),
                (_, watcher::Event::InitApply(_)) => held.push(ev),
                (_, watcher::Event::InitDone) => {
                    if init == InitMode::BufferDeletes {
                        let listed = held
                            .iter()
                            .filter_map(|e| match e {
                                watcher::Event::InitApply(o) => Some(key_of(o)),
                                _ => None,
                            })
                            .collect();
                        dispatch_vanished(&shared, &reader, &listed);
                    }
                    for e in held.drain(..) {
                        dispatch(&shared, &reader, &e);
                    }
                }
                _ => dispatch(&shared, &reader, &ev),
            },
            Err(e) => eprintln!("kube-rs adapter: watcher error: {e}"),
        }
    }
    eprintln!("kube-rs adapter: the watcher stream ended");
}

fn backoff(seeded: bool) -> Box<dyn kube::runtime::utils::Backoff> {
    if !seeded {
        return Box::new(watcher::DefaultBackoff::default());
    }
    // watcher::DefaultBackoff's parameters, with the jitter's random generator seeded so
    // the same requests give the same answers (protocol rule 4).
    let builder = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(800))
        .with_max_delay(Duration::from_secs(30))
        .with_factor(2.0)
        .without_max_times()
        .with_jitter()
        .with_jitter_seed(0x6b75_6265);
    Box::new(ResetTimerBackoff::new(
        ExponentialBackoff::from(builder),
        Duration::from_secs(120),
    ))
}

struct Informer {
    seam: Arc<Mutex<Seam>>,
    shared: Arc<Mutex<Shared>>,
    watch_list: bool,
    store: Option<Store<ConfigMap>>,
    task: Option<OwnedTask>,
}

impl Informer {
    fn start(&mut self, opts: &Opts) {
        let client = make_client(self.seam.clone());
        let api: Api<ConfigMap> = Api::all(client);
        let mut cfg = watcher::Config::default();
        if self.watch_list {
            cfg = cfg.streaming_lists();
        }
        let (reader, writer) = reflector::store::<ConfigMap>();
        self.store = Some(reader.clone());
        let shared = self.shared.clone();
        let init = opts.init;
        let stream = watcher::watcher(api, cfg)
            .backoff(backoff(opts.seeded_backoff))
            .reflect(writer);
        self.task = Some(OwnedTask(tokio::spawn(consume(
            stream, shared, reader, init,
        ))));
    }

    fn waiting(&self) -> Value {
        let Some(task) = &self.task else {
            return json!({"op": "idle"});
        };
        if task.0.is_finished() {
            return json!({"op": "idle"});
        }
        let mut s = self.seam.lock().unwrap();
        if s.list.as_ref().is_some_and(|l| l.reply.is_canceled()) {
            s.list = None;
        }
        if s.watch.as_ref().is_some_and(|w| w.reply.is_canceled()) {
            s.watch = None;
        }
        if s.open.as_ref().is_some_and(|o| o.tx.is_closed()) {
            s.open = None;
        }
        if let Some(l) = &s.list {
            return json!({"op": "list", "rv": l.rv});
        }
        if let Some(w) = &s.watch {
            let mut v = json!({"op": "watch", "rv": w.rv});
            if w.initial {
                v["send_initial_events"] = json!(true);
            }
            return v;
        }
        if let Some(o) = &s.open {
            let mut v = json!({"op": "watching", "rv": o.rv});
            if o.initial {
                v["send_initial_events"] = json!(true);
            }
            return v;
        }
        json!({"op": "sleeping"})
    }

    fn observation(&self) -> Value {
        observe(self.waiting(), self.store.as_ref(), &self.shared)
    }
}

/// The protocol's informer observation: `has_synced` is the store's readiness (the first
/// `InitDone` applied), `cache` the store's objects by key, `calls` those since the last one.
fn observe(waiting: Value, store: Option<&Store<ConfigMap>>, shared: &Mutex<Shared>) -> Value {
    let (has_synced, mut cache) = match store {
        Some(store) => (
            matches!(store.wait_until_ready().now_or_never(), Some(Ok(()))),
            store
                .state()
                .iter()
                .map(|o| (key_of(o), from_configmap(o)))
                .collect::<Vec<_>>(),
        ),
        None => (false, Vec::new()),
    };
    cache.sort_by(|a, b| a.0.cmp(&b.0));
    let calls = std::mem::take(&mut shared.lock().unwrap().calls);
    json!({
        "waiting": waiting,
        "has_synced": has_synced,
        "cache": cache.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
        "calls": calls,
    })
}

/// A spawned task that ends with its owner (an informer dropped by `reset`).
struct OwnedTask(JoinHandle<()>);

impl Drop for OwnedTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

// ---------------------------------------------------------------------------------------
// Requests.

struct Adapter {
    opts: Opts,
    instances: HashMap<String, Informer>,
    t0: Instant,
    elapsed_ns: u128,
}

type Answer = Result<Value, (&'static str, String)>;

fn bad(msg: impl Into<String>) -> (&'static str, String) {
    ("bad_request", msg.into())
}

fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, (&'static str, String)> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("'args.{name}' must be a string")))
}

impl Adapter {
    async fn handle(&mut self, req: &Value) -> Answer {
        let op = req
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing 'op'"))?;
        match op {
            "hello" => {
                let protocol = req.get("protocol").and_then(Value::as_i64).unwrap_or(1);
                let components = match protocol {
                    2 => json!({"informer": {
                        "methods": ["add_handler", "start", "list_reply", "list_error", "watch_open",
                                    "watch_error", "watch_event", "watch_end", "state"],
                        "behaves_like": null, "initial": false, "resync": false,
                        "watch_list": self.opts.declare_watch_list}}),
                    1 => json!({}),
                    _ => return Err(("unsupported", format!("protocol {protocol}"))),
                };
                Ok(
                    json!({"protocol": protocol, "name": "kube-rs", "version": VERSION,
                          "implementation": IMPLEMENTATION, "components": components}),
                )
            }
            "reset" => {
                self.instances.clear();
                quiesce().await;
                self.t0 = Instant::now();
                self.elapsed_ns = 0;
                Ok(Value::Null)
            }
            "advance" => {
                let s = req
                    .get("seconds")
                    .and_then(Value::as_f64)
                    .ok_or_else(|| bad("'seconds'"))?;
                if s < 0.0 {
                    return Err(bad("time never goes back"));
                }
                self.elapsed_ns += (s * 1e9).round() as u128;
                let target = self.t0 + Duration::from_nanos(self.elapsed_ns as u64);
                // The paused clock auto-advances from timer to timer while every task is
                // idle, so each backoff fires at its own instant, in order.
                tokio::time::sleep_until(target).await;
                quiesce().await;
                Ok(Value::Null)
            }
            "create" => {
                let inst = req
                    .get("instance")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("'instance'"))?;
                let comp = req
                    .get("component")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("'component'"))?;
                if comp != "informer" {
                    return Err(("unsupported", format!("component {comp}")));
                }
                let options = req.get("options").cloned().unwrap_or_else(|| json!({}));
                let resync = options.get("resync").and_then(Value::as_f64).unwrap_or(0.0);
                if resync != 0.0 {
                    return Err(("unsupported", "kube's watcher has no resync".into()));
                }
                let watch_list = options
                    .get("watch_list")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                self.instances.insert(
                    inst.to_string(),
                    Informer {
                        seam: Arc::default(),
                        shared: Arc::default(),
                        watch_list,
                        store: None,
                        task: None,
                    },
                );
                Ok(Value::Null)
            }
            "call" => {
                let inst = req
                    .get("instance")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("'instance'"))?;
                let method = req
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("'method'"))?;
                let args = req.get("args").cloned().unwrap_or_else(|| json!({}));
                let Some(inf) = self.instances.get_mut(inst) else {
                    return Err(("no_instance", format!("no instance {inst:?}")));
                };
                call(inf, &self.opts, method, &args)?;
                quiesce().await;
                Ok(inf.observation())
            }
            _ => Err(bad(format!("unknown op {op:?}"))),
        }
    }
}

fn expect_waiting(inf: &Informer, op: &str) -> Result<(), (&'static str, String)> {
    let w = inf.waiting();
    if w["op"] != op {
        return Err(bad(format!("the informer is not waiting for {op:?} ({w})")));
    }
    Ok(())
}

/// Registers a handler (`add_handler {"name", "raises"}`), in both modes.
fn add_handler(shared: &Mutex<Shared>, args: &Value) -> Result<(), (&'static str, String)> {
    let name = str_arg(args, "name")?.to_string();
    let raises = args.get("raises").and_then(Value::as_bool).unwrap_or(false);
    let mut sh = shared.lock().unwrap();
    if sh.handlers.iter().any(|h| h.name == name) {
        return Err(bad(format!("handler {name:?} already added")));
    }
    sh.handlers.push(Handler {
        name,
        raises,
        view: HashMap::new(),
    });
    Ok(())
}

fn call(
    inf: &mut Informer,
    opts: &Opts,
    method: &str,
    args: &Value,
) -> Result<(), (&'static str, String)> {
    match method {
        "add_handler" => add_handler(&inf.shared, args)?,
        "start" => {
            if inf.task.is_some() {
                return Err(bad("already started"));
            }
            inf.start(opts);
        }
        "state" => {}
        "list_reply" => {
            expect_waiting(inf, "list")?;
            let objects = args
                .get("objects")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("'objects'"))?;
            let rv = str_arg(args, "rv")?;
            let items = objects
                .iter()
                .map(to_configmap_json)
                .collect::<Result<Vec<_>, _>>()
                .map_err(bad)?;
            let body = json!({"apiVersion": "v1", "kind": "ConfigMapList",
                              "metadata": {"resourceVersion": rv}, "items": items});
            let p = inf.seam.lock().unwrap().list.take().unwrap();
            let _ = p.reply.send(full(StatusCode::OK, body));
        }
        "list_error" | "watch_error" => {
            let list = method == "list_error";
            expect_waiting(inf, if list { "list" } else { "watch" })?;
            let reason = str_arg(args, "reason")?;
            let (code, r) = reason_code(reason).ok_or_else(|| bad(format!("reason {reason:?}")))?;
            let resp = if !list && code == 410 && opts.watch_410_as_event {
                let mut line =
                    serde_json::to_vec(&json!({"type": "ERROR", "object": status_body(code, r)}))
                        .unwrap();
                line.push(b'\n');
                let body = Full::new(Bytes::from(line))
                    .map_err(|never| match never {})
                    .boxed_unsync();
                Response::new(body)
            } else {
                full(StatusCode::from_u16(code).unwrap(), status_body(code, r))
            };
            let mut s = inf.seam.lock().unwrap();
            let reply = if list {
                s.list.take().unwrap().reply
            } else {
                s.watch.take().unwrap().reply
            };
            let _ = reply.send(resp);
        }
        "watch_open" => {
            expect_waiting(inf, "watch")?;
            let mut s = inf.seam.lock().unwrap();
            let p = s.watch.take().unwrap();
            let (tx, rx) = mpsc::unbounded::<Chunk>();
            let body = StreamBody::new(rx.map(|c| c.map(Frame::data))).boxed_unsync();
            s.open = Some(OpenWatch {
                rv: p.rv,
                initial: p.initial,
                tx,
            });
            let _ = p.reply.send(Response::new(body));
        }
        "watch_event" => {
            expect_waiting(inf, "watching")?;
            let ty = str_arg(args, "type")?;
            let obj = args.get("object").ok_or_else(|| bad("'args.object'"))?;
            let line = if ty == "BOOKMARK" {
                let rv = obj.get("rv").and_then(Value::as_str).unwrap_or("");
                let mut meta = json!({"resourceVersion": rv});
                if args.get("initial_events_end").and_then(Value::as_bool) == Some(true) {
                    meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                }
                json!({"type": "BOOKMARK", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}})
            } else if ["ADDED", "MODIFIED", "DELETED"].contains(&ty) {
                json!({"type": ty, "object": to_configmap_json(obj).map_err(bad)?})
            } else {
                return Err(bad(format!("event type {ty:?}")));
            };
            send_line(inf, &line);
        }
        "watch_end" => {
            expect_waiting(inf, "watching")?;
            let how = str_arg(args, "how")?;
            match how {
                "clean" => {}
                "expired" | "internal" => {
                    let (code, r) = reason_code(how).unwrap();
                    send_line(
                        inf,
                        &json!({"type": "ERROR", "object": status_body(code, r)}),
                    );
                }
                "reset" => {
                    let s = inf.seam.lock().unwrap();
                    let err = std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "connection reset by peer",
                    );
                    let _ = s.open.as_ref().unwrap().tx.unbounded_send(Err(err));
                }
                _ => return Err(bad(format!("watch_end how {how:?}"))),
            }
            inf.seam.lock().unwrap().open = None; // dropping the sender ends the body
        }
        _ => return Err(("unsupported", format!("method {method:?}"))),
    }
    Ok(())
}

fn send_line(inf: &Informer, line: &Value) {
    let mut bytes = serde_json::to_vec(line).unwrap();
    bytes.push(b'\n');
    let s = inf.seam.lock().unwrap();
    let _ = s
        .open
        .as_ref()
        .unwrap()
        .tx
        .unbounded_send(Ok(Bytes::from(bytes)));
}

/// `--applier-check`: kube's controller applier (`kube::runtime::applier`) over a filled
/// store and a scripted trigger stream, on the paused clock. Each reconcile takes 10 s;
/// triggers arrive while runs are in progress. Prints the runs and checks that no key is
/// reconciled twice at once (WQ-5), that a trigger during a run leads to one more run after
/// it (WQ-4), and that triggers during one run merge into one. Exit 0 if all hold.
fn applier_check(rt: &tokio::runtime::Runtime) -> i32 {
    use kube::runtime::{
        applier,
        controller::{Action, Config as ControllerConfig},
    };
    use std::convert::Infallible;
    rt.block_on(async {
        let t0 = Instant::now();
        let ms = move || (Instant::now() - t0).as_millis();
        let (reader, mut writer) = reflector::store::<ConfigMap>();
        let cm = |n: &str| -> ConfigMap {
            let o = json!({"namespace": "", "name": n, "rv": "1", "labels": {}});
            serde_json::from_value(to_configmap_json(&o).unwrap()).unwrap()
        };
        writer.apply_watcher_event(&watcher::Event::Init);
        for n in ["a", "b"] {
            writer.apply_watcher_event(&watcher::Event::InitApply(cm(n)));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        // (key, start ms, end ms once finished)
        type Runs = Vec<(String, u128, Option<u128>)>;
        let runs: Arc<Mutex<Runs>> = Arc::default();
        let log = runs.clone();
        let reconciler = move |obj: Arc<ConfigMap>, _ctx: Arc<()>| {
            let log = log.clone();
            let key = key_of(&obj);
            Box::pin(async move {
                let i = {
                    let mut l = log.lock().unwrap();
                    l.push((key, ms(), None));
                    l.len() - 1
                };
                tokio::time::sleep(Duration::from_secs(10)).await;
                log.lock().unwrap()[i].2 = Some(ms());
                Ok::<Action, Infallible>(Action::await_change())
            })
        };
        let (tx, rx) = mpsc::unbounded::<Result<ObjectRef<ConfigMap>, Infallible>>();
        let stream = applier(
            reconciler,
            |_obj, _err: &Infallible, _ctx| Action::await_change(),
            Arc::new(()),
            reader,
            rx,
            ControllerConfig::default(),
        );
        let driver = tokio::spawn(stream.for_each(|_| async {}));
        // (time in ms, key) of every trigger
        let script: [(u64, &str); 6] = [
            (0, "a"),
            (0, "b"),
            (1000, "a"),
            (2000, "a"),
            (5000, "b"),
            (10500, "a"),
        ];
        let mut sent = Vec::new();
        for (at, key) in script {
            tokio::time::sleep_until(t0 + Duration::from_millis(at)).await;
            quiesce().await;
            tx.unbounded_send(Ok(ObjectRef::new(key))).unwrap();
            sent.push((at as u128, key.to_string()));
            quiesce().await;
        }
        tokio::time::sleep_until(t0 + Duration::from_secs(60)).await;
        quiesce().await;
        drop(tx);
        driver.abort();
        let runs = runs.lock().unwrap().clone();
        let mut ok = true;
        for (key, start, end) in &runs {
            println!(
                "{}",
                json!({"reconcile": key, "start_ms": start, "end_ms": end})
            );
        }
        for key in ["a", "b"] {
            let mine: Vec<_> = runs.iter().filter(|r| r.0 == key).collect();
            for w in mine.windows(2) {
                if w[0].2.is_none_or(|end| w[1].1 < end) {
                    println!(
                        "{}",
                        json!({"violation": "WQ-5", "key": key, "detail": "two reconciles at once"})
                    );
                    ok = false;
                }
            }
            for (at, k) in sent.iter().filter(|s| s.1 == key) {
                // a trigger at `at` must be followed by a run that starts at or after it
                if !mine.iter().any(|r| r.1 >= *at) {
                    println!(
                        "{}",
                        json!({"violation": "WQ-4", "key": k, "trigger_ms": at})
                    );
                    ok = false;
                }
            }
        }
        // a: runs at 0, 10 s (the triggers at 1 s and 2 s merged), 20 s (the trigger at 10.5 s); b: 0, 10 s
        let starts = |k: &str| {
            runs.iter()
                .filter(|r| r.0 == k)
                .map(|r| r.1)
                .collect::<Vec<_>>()
        };
        let expected = (vec![0, 10000, 20000], vec![0, 10000]);
        if (starts("a"), starts("b")) != expected {
            println!(
                "{}",
                json!({"violation": "merge", "a": starts("a"), "b": starts("b"),
                                   "expected": {"a": expected.0, "b": expected.1}})
            );
            ok = false;
        }
        println!(
            "{}",
            json!({"applier_check": if ok { "pass" } else { "fail" }})
        );
        i32::from(!ok)
    })
}

/// `--controller-relist-check`: a whole `kube::runtime::Controller` on the seam, listing in
/// pages of one object (`watcher::Config::page_size(1)`). After the first list (a, b) the
/// watch ends with a 410 ERROR event; the relist's first page brings a new object c, its
/// second page a (b is gone); with `one_page` the relist is one page [c, a]. Checks that c, in the store once the relist is done, is
/// reconciled at least once with what the store holds (CTRL-1). Exit 0 if it is.
fn controller_relist_check(rt: &tokio::runtime::Runtime, one_page: bool) -> i32 {
    use kube::runtime::controller::{Action, Controller};
    use std::convert::Infallible;
    rt.block_on(async {
        let t0 = Instant::now();
        let ms = move || (Instant::now() - t0).as_millis();
        let seam: Arc<Mutex<Seam>> = Arc::default();
        let api: Api<ConfigMap> = Api::all(make_client(seam.clone()));
        let log: Arc<Mutex<Vec<Value>>> = Arc::default();
        let rlog = log.clone();
        let stream = Controller::new(api, watcher::Config::default().page_size(1)).run(
            move |obj: Arc<ConfigMap>, _ctx: Arc<()>| {
                let rlog = rlog.clone();
                async move {
                    rlog.lock().unwrap().push(
                        json!({"reconcile": key_of(&obj), "rv": rv_of(&obj), "at_ms": ms()}),
                    );
                    Ok::<Action, Infallible>(Action::await_change())
                }
            },
            |_obj, _err: &Infallible, _ctx| Action::await_change(),
            Arc::new(()),
        );
        let elog = log.clone();
        let task = tokio::spawn(stream.for_each(move |r| {
            if let Err(e) = r {
                elog.lock().unwrap().push(json!({"controller_error": e.to_string(), "at_ms": ms()}));
            }
            async {}
        }));
        let obj = |n: &str, rv: &str| to_configmap_json(&json!({"namespace": "", "name": n, "rv": rv, "labels": {}})).unwrap();
        let page = |items: Vec<Value>, cont: &str, rv: &str| {
            full(StatusCode::OK, json!({"apiVersion": "v1", "kind": "ConfigMapList",
                "metadata": {"resourceVersion": rv, "continue": cont}, "items": items}))
        };
        let step = |what: &str, log: &Arc<Mutex<Vec<Value>>>| {
            log.lock().unwrap().push(json!({"step": what, "at_ms": ms()}));
        };
        let answer_list = |resp: Response<RespBody>| -> bool {
            match seam.lock().unwrap().list.take() {
                Some(p) => p.reply.send(resp).is_ok(),
                None => false,
            }
        };
        let mut ok = true;
        quiesce().await;
        step("list page 1/2: [a@2], continue", &log);
        ok &= answer_list(page(vec![obj("a", "2")], "p2", "3"));
        quiesce().await;
        step("list page 2/2: [b@3] at rv 3", &log);
        ok &= answer_list(page(vec![obj("b", "3")], "", "3"));
        quiesce().await;
        step("watch from rv 3: a 410 ERROR event, then the end", &log);
        let expired = {
            let mut line = serde_json::to_vec(&json!({"type": "ERROR", "object": status_body(410, "Expired")})).unwrap();
            line.push(b'\n');
            Response::new(Full::new(Bytes::from(line)).map_err(|never| match never {}).boxed_unsync())
        };
        ok &= match seam.lock().unwrap().watch.take() {
            Some(p) => p.reply.send(expired).is_ok(),
            None => false,
        };
        quiesce().await;
        tokio::time::sleep_until(t0 + Duration::from_secs(5)).await;
        quiesce().await;
        if one_page {
            step("relist, one page: [c@5, a@2] at rv 6 (b is gone)", &log);
            ok &= answer_list(page(vec![obj("c", "5"), obj("a", "2")], "", "6"));
        } else {
            step("relist page 1/2: [c@5], continue", &log);
            ok &= answer_list(page(vec![obj("c", "5")], "q2", "6"));
            quiesce().await;
            tokio::time::sleep_until(t0 + Duration::from_secs(6)).await;
            quiesce().await;
            step("relist page 2/2: [a@2] at rv 6 (b is gone)", &log);
            ok &= answer_list(page(vec![obj("a", "2")], "", "6"));
        }
        quiesce().await;
        tokio::time::sleep_until(t0 + Duration::from_secs(60)).await;
        quiesce().await;
        task.abort();
        if !ok {
            println!("{}", json!({"controller_relist_check": "the scenario did not run as scripted"}));
            return 2;
        }
        let log = log.lock().unwrap().clone();
        for l in &log {
            println!("{l}");
        }
        let c_done = log.iter().any(|l| l["reconcile"] == "c" && l["rv"] == "5");
        if !c_done {
            println!("{}", json!({"violation": "CTRL-1", "detail": "c is in the store after the relist but was never reconciled"}));
        }
        println!("{}", json!({"controller_relist_check": if c_done { "pass" } else { "fail" }}));
        i32::from(!c_done)
    })
}

fn usage(why: &str) -> ! {
    eprintln!("kube-rs-adapter: {why}");
    eprintln!("usage: kube-rs-adapter [--init=stream|buffer|buffer-deletes] [--backoff=seeded|default] [--watch-410=status|event] [--watch-list=on|off] | --applier-check | --controller-relist-check[=one-page] | --wire [--init=…] [--quiescence SECONDS]");
    std::process::exit(3);
}

fn main() {
    let mut opts = Opts {
        init: InitMode::Stream,
        seeded_backoff: true,
        watch_410_as_event: false,
        declare_watch_list: true,
    };
    let mut check_applier = false;
    let mut check_controller = None;
    let mut wire = false;
    let mut quiescence = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--wire" => wire = true,
            "--quiescence" => {
                quiescence = args
                    .next()
                    .and_then(|q| q.parse::<f64>().ok())
                    .filter(|q| *q > 0.0 && *q <= 60.0);
                if quiescence.is_none() {
                    usage("--quiescence takes seconds in (0, 60]");
                }
            }
            "--applier-check" => check_applier = true,
            "--controller-relist-check" => check_controller = Some(false),
            "--controller-relist-check=one-page" => check_controller = Some(true),
            "--init=stream" => opts.init = InitMode::Stream,
            "--init=buffer" => opts.init = InitMode::Buffer,
            "--init=buffer-deletes" => opts.init = InitMode::BufferDeletes,
            "--backoff=seeded" => opts.seeded_backoff = true,
            "--backoff=default" => opts.seeded_backoff = false,
            "--watch-410=status" => opts.watch_410_as_event = false,
            "--watch-410=event" => opts.watch_410_as_event = true,
            "--watch-list=on" => opts.declare_watch_list = true,
            "--watch-list=off" => opts.declare_watch_list = false,
            _ => usage(&format!("unknown flag {a:?}")),
        }
    }
    if wire {
        // The wire informer takes only the consumer's --init (and the bound it declares).
        let seam_only = std::env::args().skip(1).any(|a| {
            a.starts_with("--") && !a.starts_with("--init=") && a != "--wire" && a != "--quiescence"
        });
        if seam_only {
            usage("--wire takes only --init=… and --quiescence");
        }
        wire::run(wire::WireOpts {
            init: opts.init,
            quiescence: quiescence.unwrap_or(wire::QUIESCENCE),
        });
        return;
    }
    if quiescence.is_some() {
        usage("--quiescence goes with --wire");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .on_thread_park(on_park)
        .build()
        .expect("tokio runtime");
    if check_applier {
        std::process::exit(applier_check(&rt));
    }
    if let Some(one_page) = check_controller {
        std::process::exit(controller_relist_check(&rt, one_page));
    }
    let t0 = rt.block_on(async { Instant::now() });
    let mut adapter = Adapter {
        opts,
        instances: HashMap::new(),
        t0,
        elapsed_ns: 0,
    };
    serve(|req| rt.block_on(adapter.handle(req)));
    drop(adapter);
}

/// Answers each JSON line on stdin with one line on stdout (docs/protocol.md) until
/// stdin ends.
fn serve(mut handle: impl FnMut(&Value) -> Answer) {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim_end_matches('\r');
        let (id, answer) = match serde_json::from_str::<Value>(line) {
            Ok(req) => {
                let id = req.get("id").cloned().unwrap_or(Value::Null);
                (id, handle(&req))
            }
            Err(e) => (Value::Null, Err(bad(format!("not JSON: {e}")))),
        };
        let resp = match answer {
            Ok(result) => json!({"id": id, "result": result}),
            Err((kind, message)) => json!({"id": id, "error": {"kind": kind, "message": message}}),
        };
        let mut out = serde_json::to_vec(&resp).unwrap();
        out.push(b'\n');
        if stdout.write_all(&out).and_then(|_| stdout.flush()).is_err() {
            break;
        }
    }
}
