// Driver-protocol adapter (protocol 2, docs/protocol.md) for the informer of the
// JavaScript Kubernetes client, @kubernetes/client-node.
//
//     adapters/client-node/run [--workaround=none|restart-after-error] [--synced=list|start]
//                              [--raises=throw|record]
//     adapters/client-node/run --wire [--quiescence=SECONDS] [the flags above]
//
// With --wire the informer is client-node's own, over HTTP: see wire.mjs. Without it:
//
// The informer under test is client-node's own ListWatch (what makeInformer builds),
// given a scripted Watch and a list function whose requests wait for the harness's
// answers (list_reply, watch_open, ...). Glue, not semantics:
//
// * fake time: one FakeClock (fake-clock.mjs) replaces the global timers and is passed
//   as ListWatch's `delayFn` (its reconnect backoff); it moves only on `advance`;
// * quiescence: after each request the adapter yields to the event loop with
//   setImmediate until two turns in a row see no activity (see settle());
// * handlers record each call; client-node's update callback gets only the new object,
//   so `old_rv` is the rv this handler was last given for the key;
// * `error` events are only logged, as `connect` events are: the library as users run
//   it. --workaround=restart-after-error restarts the informer after 5 s (fake), as
//   client-node's own example does: a user's workaround, which hides INF-9;
// * has_synced: client-node has none. --synced=list (default): true once ListWatch has
//   applied a list reply (its items cached, its resourceVersion recorded);
//   --synced=start: true once the first start() promise resolved (what client-node's
//   users `await`);
// * --raises=record makes `raises` handlers record without throwing: only to look past
//   the findings a throwing handler causes.
//
// README.md beside this file says what client-node does for each answer.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ApiException, ListWatch } from '@kubernetes/client-node';
import { addRecordingHandler, cacheOf, handlerArgs, log, Refused, serve } from './common.mjs';
import { FakeClock } from './fake-clock.mjs';
import { WireInformer, wireCapabilities } from './wire.mjs';

const PROTOCOLS = [1, 2];
const ADAPTER_VERSION = '0.1.0';
const PATH = '/api/v1/configmaps';
const RESTART_AFTER_MS = 5000; // client-node's example: "Restart informer after 5sec"

const INFORMER_METHODS = [
  'add_handler',
  'start',
  'list_reply',
  'list_error',
  'watch_open',
  'watch_error',
  'watch_event',
  'watch_end',
  'state',
];

const STATUS = {
  expired: { code: 410, reason: 'Expired', message: 'too old resource version' },
  internal: { code: 500, reason: 'InternalError', message: 'injected: internal error' },
  too_many_requests: { code: 429, reason: 'TooManyRequests', message: 'injected: too many requests' },
};

// Flags (README.md): the defaults are the configuration under test (the library with
// nothing added); the others show one behaviour each, add a user's workaround, or look
// past a known finding (--raises=record). The wire mode's defaults are the same: the
// restart after an error that client-node's documentation shows its users is
// --workaround=restart-after-error there too (wire.mjs).
const FLAGS = {
  workaround: ['none', 'restart-after-error'],
  synced: ['list', 'start'],
  raises: ['throw', 'record'],
};
const WIRE = process.argv[2] === '--wire';
const flags = Object.fromEntries(Object.entries(FLAGS).map(([name, values]) => [name, values[0]]));
for (const arg of process.argv.slice(WIRE ? 3 : 2)) {
  const m = /^--([a-z-]+)=(.*)$/.exec(arg);
  if (WIRE && m?.[1] === 'quiescence' && Number(m[2]) > 0 && Number(m[2]) <= 60) {
    flags.quiescence = Number(m[2]);
  } else if (!m || !FLAGS[m[1]]?.includes(m[2])) {
    const usage = Object.entries(FLAGS).map(([n, v]) => `[--${n}=${v.join('|')}]`);
    process.stderr.write(`usage: adapter.mjs [--wire [--quiescence=SECONDS]] ${usage.join(' ')}\n`);
    process.exit(3);
  } else {
    flags[m[1]] = m[2];
  }
}

const clientVersion = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve('@kubernetes/client-node/package.json'), 'utf8'),
).version;

// ------------------------------------------------------------------ time and quiescence

const clock = new FakeClock();
if (!WIRE) clock.install(); // the wire mode runs on real time

// Bumped by everything the informer does through the adapter's hooks: list and watch
// requests, handler calls, error and connect events, start() settling, timers fired,
// unhandled rejections.
let activity = 0;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

// Every microtask queued before a setImmediate callback has run by the time it runs
// (Node drains process.nextTick and promise jobs between macrotasks), and nothing here
// does I/O or uses a real timer, so one turn already drains every promise chain the
// request started. The loop asks for two turns in a row with no activity, and runs any
// fake timer already due (none is, since advance() fires them: belt and braces).
async function settle() {
  for (let i = 0; i < 10_000; i++) {
    const before = activity;
    await nextTurn();
    await nextTurn();
    if (clock.fireNext(clock.now)) activity++;
    if (activity === before) return;
  }
  throw new Refused('internal', 'the informer never became quiescent');
}

process.on('unhandledRejection', (reason) => {
  // Node's default would end the process here (an async ListWatch method rejected
  // because a handler threw). The adapter logs it and keeps going.
  activity++;
  log(`unhandled rejection: ${reason?.stack ?? reason}`);
});

// ------------------------------------------------------------------ objects

function toK8s(obj, bookmark = false) {
  if (obj === null || typeof obj !== 'object' || typeof obj.rv !== 'string') {
    throw new Refused('bad_request', `bad object ${JSON.stringify(obj)}`);
  }
  const metadata = { resourceVersion: obj.rv };
  if (!bookmark || obj.name) {
    if (typeof obj.name !== 'string') throw new Refused('bad_request', `bad object ${JSON.stringify(obj)}`);
    metadata.name = obj.name;
    if (obj.namespace) metadata.namespace = obj.namespace;
    metadata.labels = { ...(obj.labels ?? {}) };
  }
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata };
}

function statusOf(reason) {
  const s = STATUS[reason];
  return { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Failure', ...s };
}

// ------------------------------------------------------------------ the seam

// One watch request made through the scripted Watch: `requested` until the harness
// answers it, then `open` (events follow) or `ended`.
class ScriptedRequest {
  constructor(rv, callback, done) {
    this.rv = rv;
    this.callback = callback;
    this.done = done;
    this.state = 'requested';
    this.doneCalled = false;
    this.answered = new Promise((resolve) => {
      this.answer = resolve;
    });
  }

  // As Watch.watch's doneCallOnce: `done` runs once, whatever ends the request.
  finish(err) {
    this.state = 'ended';
    if (!this.doneCalled) {
      this.doneCalled = true;
      this.done(err);
    }
  }

  // As Watch.watch's line handler: every callback error is swallowed ("ignore parse
  // errors"). ListWatch's watchHandler is async, so a throwing handler shows up as a
  // rejected promise, not here.
  deliver(type, object) {
    try {
      this.callback(type, object, { type, object });
    } catch {
      // ignored, as client-node's Watch does
    }
  }

  // The AbortController that Watch.watch returns; ListWatch calls abort() on stop and
  // before each reconnect. Aborting a live request ends it with an AbortError, as
  // undici's fetch does.
  get controller() {
    return {
      abort: () => {
        if (this.state === 'requested') this.answer({ error: abortError() });
        else if (this.state === 'open') this.finish(abortError());
        this.state = 'ended';
      },
    };
  }
}

function abortError() {
  return new DOMException('This operation was aborted', 'AbortError');
}

// What undici's fetch reports when the connection breaks while the body is read.
function resetError() {
  const cause = Object.assign(new Error('other side closed'), { name: 'SocketError', code: 'UND_ERR_SOCKET' });
  return new TypeError('terminated', { cause });
}

// ------------------------------------------------------------------ the informer

class InformerUnderTest {
  constructor(name) {
    this.name = name;
    this.pendingList = null; // {resolve, reject} of the list call waiting for the harness
    this.request = null; // the latest ScriptedRequest
    this.started = false;
    this.listApplied = false; // a list reply was handed to ListWatch
    this.synced = false;
    this.dead = false; // after reset: ignore everything it still does
    this.calls = [];
    this.handlerNames = new Set();

    const watch = { watch: (path, params, callback, done) => this.watch(params, callback, done) };
    const listFn = () => this.list();
    // makeInformer(kc, path, listFn) is `new ListWatch(path, new Watch(kc), listFn, false)`;
    // the Watch is scripted here, and delayFn puts the reconnect backoff on the fake clock.
    this.informer = new ListWatch(PATH, watch, listFn, false, undefined, undefined, {
      delayFn: (ms) => clock.sleep(ms),
    });
    this.informer.on('connect', () => {
      activity++;
      if (!this.dead) log(`[${this.name}] connect`);
    });
    this.informer.on('error', (err) => {
      activity++;
      if (this.dead) return;
      log(`[${this.name}] error event: ${err?.message ?? err}`);
      if (flags.workaround === 'restart-after-error') {
        setTimeout(() => {
          if (!this.dead) this.start();
        }, RESTART_AFTER_MS);
      }
    });
  }

  // --- the seam: what ListWatch calls

  list() {
    activity++;
    if (this.pendingList) log(`[${this.name}] a second list while one is pending`);
    return new Promise((resolve, reject) => {
      this.pendingList = { resolve, reject };
    });
  }

  async watch(params, callback, done) {
    activity++;
    const rv = params?.resourceVersion ?? '';
    const request = new ScriptedRequest(String(rv), callback, done);
    if (this.request && this.request.state !== 'ended') log(`[${this.name}] a second watch while one is live`);
    this.request = request;
    // Watch.watch awaits the response to its request; on a status other than 200 it
    // calls done(error with statusCode) before it returns.
    const { error } = await request.answered;
    if (error) request.finish(error);
    return request.controller;
  }

  start() {
    activity++;
    const first = !this.started;
    this.started = true;
    this.informer.start().then(
      () => {
        activity++;
        if (first && flags.synced === 'start') this.synced = true;
      },
      (err) => {
        activity++;
        log(`[${this.name}] start() rejected: ${err?.stack ?? err}`);
      },
    );
  }

  // --- protocol methods

  waiting() {
    if (!this.started) return { op: 'idle' };
    if (this.pendingList) return { op: 'list', rv: '' }; // the list function takes no rv
    const r = this.request;
    if (r && r.state === 'requested') return { op: 'watch', rv: r.rv };
    if (r && r.state === 'open') return { op: 'watching', rv: r.rv };
    return { op: 'sleeping' };
  }

  expect(op) {
    const got = this.waiting().op;
    if (got !== op) throw new Refused('bad_request', `the informer is not waiting for ${op} (${got})`);
  }

  addHandler(args) {
    const { name, raises } = handlerArgs(args, this.handlerNames);
    addRecordingHandler(this.informer, name, raises && flags.raises === 'throw', (call) => {
      activity++;
      if (!this.dead) this.calls.push(call);
    });
  }

  call(method, args) {
    switch (method) {
      case 'add_handler':
        this.addHandler(args);
        break;
      case 'start':
        if (this.started) throw new Refused('bad_request', 'the informer was already started');
        this.start();
        break;
      case 'list_reply': {
        this.expect('list');
        if (!Array.isArray(args.objects) || typeof args.rv !== 'string') {
          throw new Refused('bad_request', "'objects' must be a list and 'rv' a string");
        }
        const items = args.objects.map((o) => toK8s(o));
        const { resolve } = this.pendingList;
        this.pendingList = null;
        this.listApplied = true;
        resolve({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: args.rv }, items });
        break;
      }
      case 'list_error': {
        this.expect('list');
        const status = statusOf(reasonArg(args.reason));
        const { reject } = this.pendingList;
        this.pendingList = null;
        // What the generated API client throws for a response that is not 2xx.
        reject(new ApiException(status.code, `Unknown API Status Code!`, status, {}));
        break;
      }
      case 'watch_open':
        this.expect('watch');
        this.request.state = 'open';
        this.request.answer({});
        break;
      case 'watch_error': {
        this.expect('watch');
        const status = statusOf(reasonArg(args.reason));
        // Watch.watch: `new Error(statusText)` with `statusCode` for a status other than 200.
        const err = Object.assign(new Error(status.reason), { statusCode: status.code });
        this.request.answer({ error: err });
        break;
      }
      case 'watch_event': {
        this.expect('watching');
        const type = args.type;
        if (!['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK'].includes(type)) {
          throw new Refused('bad_request', `bad event type ${JSON.stringify(type)}`);
        }
        this.request.deliver(type, toK8s(args.object, type === 'BOOKMARK'));
        break;
      }
      case 'watch_end': {
        this.expect('watching');
        const how = args.how;
        if (how === 'clean') {
          this.request.finish(null);
        } else if (how === 'expired' || how === 'internal') {
          // An ERROR event carrying a Status, then the server closes the stream.
          this.request.deliver('ERROR', statusOf(how));
          this.request.finish(null);
        } else if (how === 'reset') {
          this.request.finish(resetError());
        } else {
          throw new Refused('bad_request', `bad 'how' ${JSON.stringify(how)}`);
        }
        break;
      }
      case 'state':
        break;
      default:
        throw new Refused('unsupported', `the informer has no method ${JSON.stringify(method)}`);
    }
  }

  observation() {
    if (flags.synced === 'list' && this.listApplied && this.informer.latestResourceVersion() !== '') {
      this.synced = true; // the list's items are in the cache and its rv recorded
    }
    const calls = this.calls;
    this.calls = [];
    return { waiting: this.waiting(), has_synced: this.synced, cache: cacheOf(this.informer), calls };
  }

  kill() {
    this.dead = true;
    this.informer.stop();
  }
}

function reasonArg(reason) {
  if (!(reason in STATUS)) throw new Refused('bad_request', `bad reason ${JSON.stringify(reason)}`);
  return reason;
}

// ------------------------------------------------------------------ requests

const informers = new Map();

function hello(request) {
  if (!PROTOCOLS.includes(request.protocol)) {
    throw new Refused('unsupported', `this adapter speaks protocols ${PROTOCOLS.join(', ')}`);
  }
  const components = {};
  if (request.protocol >= 2 && WIRE) {
    components.informer = wireCapabilities(flags);
  } else if (request.protocol >= 2) {
    components.informer = { methods: INFORMER_METHODS, behaves_like: null, initial: false, resync: false };
  }
  return {
    protocol: request.protocol,
    name: 'client-node-adapter',
    version: ADAPTER_VERSION,
    implementation:
      `@kubernetes/client-node ${clientVersion} (npm): ` +
      (WIRE ? 'makeInformer over its own Watch and CoreV1Api' : 'ListWatch with a scripted Watch and list function') +
      `, on Node ${process.version}; flags: ${process.argv.slice(2).join(' ') || 'none'}`,
    components,
  };
}

async function handle(request) {
  switch (request.op) {
    case 'hello':
      return hello(request);
    case 'reset':
      for (const inf of informers.values()) inf.kill();
      informers.clear();
      if (!WIRE) {
        await settle();
        clock.reset();
      }
      return null;
    case 'create': {
      if (typeof request.instance !== 'string') throw new Refused('bad_request', "'instance' must be a string");
      if (request.component !== 'informer') {
        throw new Refused('unsupported', `no component ${JSON.stringify(request.component)}`);
      }
      const resync = request.options?.resync ?? 0;
      if (typeof resync !== 'number' || resync < 0) throw new Refused('bad_request', "'resync' must be seconds >= 0");
      if (resync !== 0) throw new Refused('unsupported', 'client-node has no resync');
      informers.get(request.instance)?.kill();
      const Informer = WIRE ? WireInformer : InformerUnderTest;
      informers.set(request.instance, new Informer(request.instance, flags));
      if (!WIRE) await settle();
      return null;
    }
    case 'call': {
      const inf = informers.get(request.instance);
      if (!inf) throw new Refused('no_instance', `no instance ${JSON.stringify(request.instance)}`);
      if (typeof request.method !== 'string') throw new Refused('bad_request', "'method' must be a string");
      inf.call(request.method, request.args ?? {});
      if (WIRE) return inf.observation(); // at once: the harness polls (docs/protocol.md)
      await settle();
      return inf.observation();
    }
    case 'advance': {
      if (WIRE) throw new Refused('unsupported', 'the wire mode runs on real time');
      const seconds = request.seconds;
      if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
        throw new Refused('bad_request', "'seconds' must be a number >= 0");
      }
      const target = clock.now + BigInt(Math.round(seconds * 1e9));
      await settle();
      while (clock.fireNext(target)) {
        activity++;
        await settle();
      }
      clock.now = target;
      await settle();
      return null;
    }
    default:
      throw new Refused('bad_request', `unknown op ${JSON.stringify(request.op)}`);
  }
}

serve(handle);
