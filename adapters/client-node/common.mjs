// What the scripted adapter (adapter.mjs) and the wire mode (wire.mjs) share: refusals,
// the protocol's object and call shapes, handler recording on a ListWatch, and the
// request loop over stdin/stdout.

import { createInterface } from 'node:readline';

export const log = (text) => process.stderr.write(`${text}\n`);

export class Refused extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

export function fromK8s(obj) {
  const m = obj.metadata ?? {};
  const labels = Object.fromEntries(Object.entries(m.labels ?? {}).sort(([a], [b]) => byBytes(a, b)));
  return { namespace: m.namespace || '', name: m.name || '', rv: m.resourceVersion || '', labels };
}

export function keyOf(obj) {
  const m = obj.metadata ?? {};
  return m.namespace ? `${m.namespace}/${m.name || ''}` : m.name || '';
}

// UTF-8 byte order is code point order, as Python sorts strings.
export const byBytes = (a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

// The protocol's `cache`: every object ListWatch holds, sorted by key.
export function cacheOf(listWatch) {
  const key = (o) => (o.namespace ? `${o.namespace}/${o.name}` : o.name);
  return listWatch
    .list()
    .map(fromK8s)
    .sort((a, b) => byBytes(key(a), key(b)));
}

// add_handler's arguments, checked; `names` are the handlers added so far.
export function handlerArgs({ name, raises = false, resync = null }, names) {
  if (typeof name !== 'string' || names.has(name)) {
    throw new Refused('bad_request', `bad or repeated handler name ${JSON.stringify(name)}`);
  }
  if (typeof raises !== 'boolean') throw new Refused('bad_request', "'raises' must be a boolean");
  if (resync !== null && resync !== 0) {
    throw new Refused('unsupported', 'client-node has no resync');
  }
  names.add(name);
  return { name, raises };
}

// Registers handler `name` on a ListWatch: one callback each for add, update and delete,
// each passing `push` the call with the rv ListWatch.get() returns for the key at that
// moment, then throwing if `raises`. The update callback gets only the new object, so
// `old_rv` is the rv this handler was last given for the key.
export function addRecordingHandler(listWatch, name, raises, push) {
  const seen = new Map(); // key -> rv this handler was last given
  const record = (kind, obj) => {
    const key = keyOf(obj);
    const rv = obj?.metadata?.resourceVersion ?? '';
    const call = { handler: name, kind, key, rv };
    if (kind === 'update') call.old_rv = seen.get(key) ?? '';
    if (kind === 'delete') call.tombstone = false;
    const m = obj.metadata ?? {};
    const found = listWatch.get(m.name || '', m.namespace || '');
    call.cache = found ? found.metadata?.resourceVersion ?? '' : null;
    if (kind === 'delete') seen.delete(key);
    else seen.set(key, rv);
    push(call);
    if (raises) throw new Error(`handler ${name} raises, as asked`);
  };
  listWatch.on('add', (obj) => record('add', obj));
  listWatch.on('update', (obj) => record('update', obj));
  listWatch.on('delete', (obj) => record('delete', obj));
}

// Answers each request line on stdin with one response line on stdout, in order;
// `handle(request)` returns the result or throws (a Refused names its kind).
export async function serve(handle) {
  process.stdout.on('error', () => process.exit(0)); // the harness went away
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    let request;
    let response;
    try {
      request = JSON.parse(line);
    } catch {
      request = null;
    }
    if (request === null || typeof request !== 'object' || !Number.isInteger(request.id)) {
      response = { id: request?.id ?? null, error: { kind: 'bad_request', message: 'not a request' } };
    } else {
      try {
        response = { id: request.id, result: await handle(request) };
      } catch (err) {
        const kind = err instanceof Refused ? err.kind : 'internal';
        if (kind === 'internal') log(`internal error: ${err?.stack ?? err}`);
        response = { id: request.id, error: { kind, message: String(err?.message ?? err) } };
      }
    }
    process.stdout.write(`${JSON.stringify(response)}\n`);
  }
  process.exit(0);
}
