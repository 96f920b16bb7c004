// A fake clock for the adapter process: timers that move only when advance() is called.
//
// install() replaces globalThis.setTimeout / clearTimeout / setInterval / clearInterval
// with this clock's, in this process only. setImmediate, process.nextTick and promises
// stay real: they carry no time, and the adapter's quiescence is built on setImmediate.
// Times are integer nanoseconds (BigInt), so deadlines compare exactly.

const TIMEOUT_MAX = 2 ** 31 - 1; // Node's limit: longer (or < 1, or NaN) delays become 1 ms

function delayNs(ms) {
  let after = Number(ms);
  if (!(after >= 1 && after <= TIMEOUT_MAX)) after = 1;
  return BigInt(Math.round(after * 1e6));
}

class Timer {
  constructor(clock, id, ns, fn, args, repeat) {
    Object.assign(this, { clock, id, ns, fn, args, repeat });
    this.at = clock.now + ns;
  }

  // What Node's Timeout objects offer and callers use (client-node's Watch calls unref).
  ref() { return this; }
  unref() { return this; }
  hasRef() { return true; }
  refresh() {
    this.at = this.clock.now + this.ns;
    return this;
  }
  [Symbol.toPrimitive]() { return this.id; }
}

export class FakeClock {
  constructor() {
    this.reset();
  }

  /** Back to time 0 with no timers (the protocol's `reset`). */
  reset() {
    this.now = 0n;
    this.timers = new Map(); // id -> Timer, in creation order
    this.nextId = 1;
  }

  setTimeout(fn, ms, ...args) {
    return this.#add(fn, ms, args, false);
  }

  setInterval(fn, ms, ...args) {
    return this.#add(fn, ms, args, true);
  }

  clearTimeout(handle) {
    if (handle === undefined || handle === null) return;
    this.timers.delete(typeof handle === 'object' ? handle.id : Number(handle));
  }

  sleep(ms) {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }

  #add(fn, ms, args, repeat) {
    if (typeof fn !== 'function') throw new TypeError('the callback must be a function');
    const timer = new Timer(this, this.nextId++, delayNs(ms), fn, args, repeat);
    this.timers.set(timer.id, timer);
    return timer;
  }

  /** The earliest timer due at or before `limit` (ties: the one created first). */
  nextDue(limit) {
    let best = null;
    for (const t of this.timers.values()) {
      if (t.at <= limit && (best === null || t.at < best.at)) best = t;
    }
    return best;
  }

  /** Runs one due timer (at most `limit`), moving the clock to its deadline. */
  fireNext(limit) {
    const t = this.nextDue(limit);
    if (t === null) return false;
    if (t.at > this.now) this.now = t.at;
    if (t.repeat) t.at = this.now + t.ns;
    else this.timers.delete(t.id);
    try {
      t.fn(...t.args);
    } catch (err) {
      // Node would report an uncaught exception; the adapter logs it and goes on.
      process.stderr.write(`fake timer callback threw: ${err?.stack ?? err}\n`);
    }
    return true;
  }

  install() {
    globalThis.setTimeout = (fn, ms, ...args) => this.setTimeout(fn, ms, ...args);
    globalThis.clearTimeout = (h) => this.clearTimeout(h);
    globalThis.setInterval = (fn, ms, ...args) => this.setInterval(fn, ms, ...args);
    globalThis.clearInterval = (h) => this.clearTimeout(h);
  }
}
