// The wire mode (`run --wire`, docs/protocol.md "Wire mode"): the informer component is
// client-node's own, built on `start` from the kubeconfig the harness names as its
// documentation shows users (its docs' "Watching & Caching" page, which shows the
// example examples/typescript/informer/informer.ts): KubeConfig.loadFromFile, makeApiClient(
// CoreV1Api), makeInformer(kc, '/api/v1/configmaps', listFn) over its real Watch (undici
// fetch), handlers on 'add'/'update'/'delete', and with --workaround=restart-after-error
// a restart 5 s after an 'error', as the example does (the default, as in the scripted
// mode, is the library alone). It asks the harness for HTTPS ("tls": true): client-node
// refuses a plain http:// server unless the kubeconfig sets insecure-skip-tls-verify
// (config.js, createDispatcherOptions), and over TLS it reads the kubeconfig's CA and
// token as they are. Nothing scripted in between, no fake time. Answers add_handler, start and state, each with the observation taken at
// once, as refimpl's reference wire adapter (refimpl/conformance/wire/adapter.py) does.

import { CoreV1Api, KubeConfig, makeInformer } from '@kubernetes/client-node';
import { addRecordingHandler, cacheOf, handlerArgs, log, Refused } from './common.mjs';

const PATH = '/api/v1/configmaps';
const RESTART_AFTER_MS = 5000; // the example: "Restart informer after 5sec"
// The convergence bound declared: ListWatch's reconnect backoff grows to 30 s
// (MAX_RECONNECT_DELAY_MS), the documented restart adds 5 s.
const QUIESCENCE_SECONDS = 40;

export function wireCapabilities(flags) {
  return {
    methods: ['add_handler', 'start', 'state'],
    behaves_like: null,
    wire: true,
    tls: true,
    quiescence_seconds: flags.quiescence ?? QUIESCENCE_SECONDS,
  };
}

export class WireInformer {
  constructor(name, flags) {
    this.name = name;
    this.flags = flags;
    this.handlers = []; // [name, raises] added before start
    this.handlerNames = new Set();
    this.informer = null;
    this.calls = [];
    this.synced = false;
    this.dead = false;
    this.restarts = new Set(); // pending restart timers
  }

  call(method, args) {
    switch (method) {
      case 'add_handler': {
        const { name, raises } = handlerArgs(args, this.handlerNames);
        if (this.informer) this.addHandler(name, raises);
        else this.handlers.push([name, raises]);
        break;
      }
      case 'start':
        if (typeof args.kubeconfig !== 'string') throw new Refused('bad_request', 'start needs a kubeconfig path');
        if (this.informer) throw new Refused('bad_request', 'the informer was already started');
        this.build(args.kubeconfig);
        this.start(true);
        break;
      case 'state':
        break;
      default:
        throw new Refused('unsupported', `unsupported method ${JSON.stringify(method)} in wire mode`);
    }
  }

  build(path) {
    const kc = new KubeConfig();
    try {
      kc.loadFromFile(path);
    } catch (err) {
      throw new Refused('bad_request', `kubeconfig ${path}: ${err?.message ?? err}`);
    }
    const api = kc.makeApiClient(CoreV1Api);
    const informer = makeInformer(kc, PATH, () => api.listConfigMapForAllNamespaces());
    this.informer = informer;
    for (const [name, raises] of this.handlers) this.addHandler(name, raises);
    informer.on('connect', () => {
      if (!this.dead) log(`[${this.name}] connect`);
    });
    informer.on('error', (err) => {
      if (this.dead) return;
      log(`[${this.name}] error event: ${err?.message ?? err}${err?.cause ? ` (${err.cause})` : ''}`);
      if (this.flags.workaround !== 'restart-after-error') return;
      const timer = setTimeout(() => {
        this.restarts.delete(timer);
        if (!this.dead) this.start(false);
      }, RESTART_AFTER_MS);
      this.restarts.add(timer);
    });
  }

  addHandler(name, raises) {
    addRecordingHandler(this.informer, name, raises && this.flags.raises === 'throw', (call) => {
      if (!this.dead) this.calls.push(call);
    });
  }

  start(first) {
    this.informer.start().then(
      () => {
        if (first && this.flags.synced === 'start') this.synced = true;
      },
      (err) => log(`[${this.name}] start() rejected: ${err?.stack ?? err}`),
    );
  }

  observation() {
    // --synced=list: a list's items are cached and its rv recorded (ListWatch sets its
    // resourceVersion only after applying a whole list, or from a watch event that
    // follows one); sticky, as the rv is forgotten again on a 410.
    if (this.flags.synced === 'list' && this.informer?.latestResourceVersion()) this.synced = true;
    const calls = this.calls;
    this.calls = [];
    const cache = this.informer ? cacheOf(this.informer) : [];
    return { waiting: { op: 'wire' }, has_synced: this.synced, cache, calls };
  }

  kill() {
    this.dead = true;
    for (const timer of this.restarts) clearTimeout(timer);
    this.informer?.stop();
  }
}
