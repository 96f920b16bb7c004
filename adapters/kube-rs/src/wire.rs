//! The wire mode (`kube-rs-adapter --wire`, docs/protocol.md "Wire mode"): the informer is
//! kube-rs' own, built on `start` from the kubeconfig the harness names, as a kube user
//! builds it: `Kubeconfig::read_from`, `Config::from_custom_kubeconfig`,
//! `Client::try_from` (kube-client's hyper connector: plain HTTP, no TLS features),
//! `watcher(Api::<ConfigMap>::all(client), Config::default()).default_backoff()` fed
//! to `reflector(writer, …)`. Nothing scripted in between, and real time: the runtime is
//! a current-thread tokio runtime on a thread of its own, so `state` answers at once from
//! the store and the calls recorded so far (the harness polls).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    thread,
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{
        reflector::{self, Store},
        watcher, WatchStreamExt,
    },
    Api, Client, Config,
};
use serde_json::{json, Value};
use tokio::runtime::Handle;

use crate::{
    add_handler, bad, consume, observe, str_arg, Answer, InitMode, OwnedTask, Shared, VERSION,
};

const IMPLEMENTATION: &str = "kube-runtime 5.0.0 (kube 5.0.0, k8s-openapi 0.29.0): watcher + \
                              reflector store over kube-client's HTTP connector";

/// Seconds the harness is told to wait for convergence: one sleep of kube's
/// `DefaultBackoff` reaches 30 s plus up to 100 % jitter (backon's `ExponentialBackoff`),
/// and it grows on every error in a row with no event between (`StreamBackoff` resets
/// it on an `Ok` item), so a fourth error in a row alone may sleep past the harness's
/// default 10 s.
pub const QUIESCENCE: f64 = 60.0;

/// The wire mode's settings (`--wire [--init=…] [--quiescence SECONDS]`).
pub struct WireOpts {
    pub init: InitMode,
    /// The convergence bound declared in `hello` (default [`QUIESCENCE`]).
    pub quiescence: f64,
}

#[derive(Default)]
struct WireInformer {
    shared: Arc<Mutex<Shared>>,
    store: Option<Store<ConfigMap>>,
    task: Option<OwnedTask>,
}

struct WireAdapter {
    opts: WireOpts,
    runtime: Handle,
    instances: HashMap<String, WireInformer>,
}

/// Serves the protocol on stdin/stdout; the informers run on the runtime's own thread.
pub fn run(opts: WireOpts) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let runtime = rt.handle().clone();
    // Detached: it drives the informers until the process exits.
    thread::spawn(move || rt.block_on(std::future::pending::<()>()));
    let mut adapter = WireAdapter {
        opts,
        runtime,
        instances: HashMap::new(),
    };
    crate::serve(|req| adapter.handle(req));
}

impl WireAdapter {
    fn handle(&mut self, req: &Value) -> Answer {
        let op = req
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing 'op'"))?;
        match op {
            "hello" => self.hello(req),
            "reset" => {
                self.instances.clear();
                Ok(Value::Null)
            }
            "create" => {
                let inst = str_arg(req, "instance")?;
                if str_arg(req, "component")? != "informer" {
                    return Err(("unsupported", "only the informer runs over the wire".into()));
                }
                let resync = req
                    .pointer("/options/resync")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                if resync != 0.0 {
                    return Err(("unsupported", "kube's watcher has no resync".into()));
                }
                self.instances
                    .insert(inst.to_string(), WireInformer::default());
                Ok(Value::Null)
            }
            "call" => {
                let inst = str_arg(req, "instance")?;
                let method = str_arg(req, "method")?;
                let args = req.get("args").cloned().unwrap_or_else(|| json!({}));
                let Some(inf) = self.instances.get_mut(inst) else {
                    return Err(("no_instance", format!("no instance {inst:?}")));
                };
                match method {
                    "add_handler" => add_handler(&inf.shared, &args)?,
                    "start" => {
                        if inf.task.is_some() {
                            return Err(bad("already started"));
                        }
                        let path = str_arg(&args, "kubeconfig")?.to_string();
                        start(inf, &self.runtime, path, self.opts.init)?;
                    }
                    "state" => {}
                    _ => {
                        return Err(("unsupported", format!("method {method:?} in wire mode")));
                    }
                }
                Ok(observe(
                    json!({"op": "wire"}),
                    inf.store.as_ref(),
                    &inf.shared,
                ))
            }
            _ => Err(bad(format!("unknown op {op:?}"))),
        }
    }

    fn hello(&self, req: &Value) -> Answer {
        let protocol = req.get("protocol").and_then(Value::as_i64).unwrap_or(1);
        if protocol != 2 {
            return Err((
                "unsupported",
                format!("protocol {protocol}: wire mode is protocol 2"),
            ));
        }
        let informer = json!({"methods": ["add_handler", "start", "state"],
                              "behaves_like": null, "wire": true,
                              "quiescence_seconds": self.opts.quiescence});
        Ok(json!({"protocol": 2, "name": "kube-rs", "version": VERSION,
                  "implementation": IMPLEMENTATION, "components": {"informer": informer}}))
    }
}

/// Builds the client and the informer on the runtime (kube's `Client` spawns its
/// request buffer's worker there) and starts it; answers once the client is built.
fn start(
    inf: &mut WireInformer,
    runtime: &Handle,
    path: String,
    init: InitMode,
) -> Result<(), (&'static str, String)> {
    let (reader, writer) = reflector::store::<ConfigMap>();
    let shared = inf.shared.clone();
    let store = reader.clone();
    let shown = path.clone();
    let (built_tx, built_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let task = runtime.spawn(async move {
        let client = match client_from(&path).await {
            Ok(client) => client,
            Err(e) => {
                let _ = built_tx.send(Err(e));
                return;
            }
        };
        let _ = built_tx.send(Ok(()));
        let api: Api<ConfigMap> = Api::all(client);
        let stream = reflector::reflector(
            writer,
            watcher::watcher(api, watcher::Config::default()).default_backoff(),
        );
        consume(stream, shared, reader, init).await;
    });
    match built_rx.recv() {
        Ok(Ok(())) => {
            inf.store = Some(store);
            inf.task = Some(OwnedTask(task));
            Ok(())
        }
        Ok(Err(e)) => Err(bad(format!("kubeconfig {shown}: {e}"))),
        Err(_) => Err((
            "internal",
            "the informer task ended before its client was built".into(),
        )),
    }
}

async fn client_from(path: &str) -> Result<Client, String> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    Client::try_from(config).map_err(|e| e.to_string())
}
