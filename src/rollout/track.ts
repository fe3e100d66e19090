/**
 * Write tracking. Tools act on the world through proxies that keep a shallow copy of each object
 * just before its first write, for the run and for each call in flight. From those copies and the
 * position each object was last seen at, the changes of the run (state-diff.json) and of each call
 * (`changes` on its tool_result) are found by visiting only what was written: the cost grows with
 * what changed, not with the size of the world, and no snapshot of the world is taken.
 *
 * It applies to worlds of plain data: objects and arrays, each in one place (a tree); plain.ts
 * tells. Other worlds keep the snapshot and the full diff. Should an object come to be in two
 * places during the run, the tracker stops trusting positions ("lost"): the run's diff is then made
 * in full from the recorded copies (still exact) and later calls carry no `changes`.
 */
import { diffTracked, diffWorld, materialize, type Change, type Key } from './diff.js';
import { copyOut, installCloneFallback } from './clone.js';
import { isTrackable } from './plain.js';
import { proxyTargets } from './proxies.js';

/** Where an object was seen: `parent[key]`. */
interface Position {
  parent: object;
  key: string;
}

/** The copies taken before the first write of each object while one call was in flight. */
export interface CallScope {
  /** Made at the call's first write (most calls write nothing). */
  before: Map<object, object> | null;
}

function shallowCopy(value: object): object {
  if (Array.isArray(value)) return value.slice();
  return Object.getPrototypeOf(value) === null ? Object.assign(Object.create(null) as object, value) : { ...value };
}

const hasOwn = (o: object, key: PropertyKey): boolean => Object.prototype.hasOwnProperty.call(o, key);


/** The write tracker of one rollout's world. */
export class WriteTracker<State extends object = object> {
  /** What the tools receive: the world behind a tracking proxy. */
  readonly view: State;
  readonly #root: State;
  readonly #proxies = new WeakMap<object, object>();
  readonly #positions = new WeakMap<object, Position[]>();
  /** Each written object's content before its first write in the run. */
  readonly #original = new Map<object, object>();
  readonly #scopes = new Set<CallScope>();
  /** Objects seen at a second position that may still hold them. */
  readonly #suspects = new Set<object>();
  /** Objects that may hold properties a proxy must report as they are (see the get trap). */
  readonly #rigid = new WeakSet<object>();
  /** Subtrees handed out without a proxy, whose content was recorded when they were. */
  readonly #exposed = new WeakSet<object>();
  #lost: string | null = null;

  constructor(root: State) {
    installCloneFallback();
    this.#root = root;
    this.view = this.#proxy(root) as State;
  }

  /** Why positions are no longer trusted, or null. */
  get lost(): string | null {
    return this.#lost;
  }

  /** Opens the scope of one tool call: writes from now on are also recorded for it. */
  beginCall(): CallScope {
    const scope: CallScope = { before: null };
    this.#scopes.add(scope);
    return scope;
  }

  /**
   * Closes a call's scope and returns what it changed (copies, safe to keep), or undefined when
   * that cannot be told exactly any more (see `lost`).
   */
  endCall(scope: CallScope): Change[] | undefined {
    this.#scopes.delete(scope);
    if (this.#lost) return undefined;
    if (scope.before === null) return [];
    this.#settle();
    if (this.#lost) return undefined;
    const paths = this.#pathFinder();
    return diffTracked(this.#root, scope.before, paths, copyOut);
  }

  /** The changes of the whole run so far, exact in every case. */
  diff(): Change[] {
    if (this.#original.size === 0) return [];
    this.#settle();
    if (this.#lost) return diffWorld(this.initial(), this.#root);
    return diffTracked(this.#root, this.#original, this.#pathFinder(), (v) => v);
  }

  /** The objects written so far that are still in the world, each with a path that holds it now. */
  written(): { object: object; path: Key[] }[] {
    const paths = this.#pathFinder();
    const written: { object: object; path: Key[] }[] = [];
    for (const object of this.#original.keys()) {
      const path = paths(object);
      if (path !== null && path.length > 0) written.push({ object, path });
    }
    return written;
  }

  /** A deep copy of the world as it was before the first write. */
  initial(): State {
    return materialize(this.#root, this.#original) as State;
  }

  #proxy(target: object): object {
    let proxy = this.#proxies.get(target);
    if (proxy === undefined) {
      proxy = new Proxy(target, this.#handler);
      this.#proxies.set(target, proxy);
      proxyTargets.set(proxy, target);
    }
    return proxy;
  }

  /** A child as a tool sees it: a proxy for plain objects and arrays, with its position noted. */
  #child(value: object, parent: object, key: string): object {
    if (!isTrackable(value)) return value;
    this.#place(value, parent, key);
    return this.#proxy(value);
  }

  #place(value: object, parent: object, key: string): void {
    const list = this.#positions.get(value);
    if (list === undefined) {
      this.#positions.set(value, [{ parent, key }]);
      return;
    }
    const last = list[list.length - 1];
    if (last !== undefined && last.parent === parent && last.key === key) return;
    // Keep only the positions that still hold the object; more than one means it may be in two places.
    const held = list.filter((p) => (p.parent as Record<string, unknown>)[p.key] === value && !(p.parent === parent && p.key === key));
    if (held.length > 0) this.#suspects.add(value);
    held.push({ parent, key });
    this.#positions.set(value, held);
  }

  #beforeWrite(target: object): void {
    let copy: object | undefined;
    if (!this.#original.has(target)) {
      copy = shallowCopy(target);
      this.#original.set(target, copy);
    }
    for (const scope of this.#scopes) {
      scope.before ??= new Map();
      if (!scope.before.has(target)) scope.before.set(target, (copy ??= shallowCopy(target)));
    }
  }

  /** A value about to be stored in the world: proxies become their objects, new objects are adopted. */
  #adopt(value: unknown, parent: object, key: string, seen: Set<object>): unknown {
    if (typeof value !== 'object' || value === null) return value;
    const target = proxyTargets.get(value);
    if (target !== undefined || this.#positions.has(value) || value === this.#root) {
      const object = target ?? value;
      if (object === this.#root) this.#lose('the world was stored inside itself');
      this.#place(object, parent, key);
      return object;
    }
    if (!isTrackable(value) || seen.has(value)) return value;
    seen.add(value);
    this.#place(value, parent, key);
    // A new object from the tool: world objects inside it are stored as themselves, not as proxies.
    const record = value as Record<string, unknown>;
    for (const k of Object.keys(record)) {
      const child = record[k];
      if (typeof child !== 'object' || child === null) continue;
      const adopted = this.#adopt(child, value, k, seen);
      if (adopted === child) continue;
      try {
        record[k] = adopted;
      } catch {
        // A frozen or read-only new value keeps the proxy: the world now holds one.
        this.#lose('a world object was stored inside a frozen or read-only new value');
      }
    }
    return value;
  }

  #lose(reason: string): void {
    this.#lost ??= reason;
  }

  /**
   * An object handed to a tool without a proxy (a frozen object's child must be itself): writes
   * to it cannot be seen, so its whole subtree's content is recorded now and the run's diff is
   * made in full, from those records, from then on.
   */
  #exposeRaw(value: object): object {
    if (this.#exposed.has(value)) return value;
    this.#lose('a frozen world object holds an object, which tools get without write tracking');
    const visit = (object: object): void => {
      if (this.#exposed.has(object)) return;
      this.#exposed.add(object);
      if (!this.#original.has(object)) this.#original.set(object, shallowCopy(object));
      for (const child of Object.values(object)) if (typeof child === 'object' && child !== null) visit(child);
    };
    visit(value);
    return value;
  }

  /**
   * Resolves the suspects: an object held at two attached positions makes positions
   * untrustworthy. Positions that still hold an object are all kept, attached or not (a detached
   * parent may be put back), and an object held in more than one place stays a suspect.
   */
  #settle(): void {
    if (this.#suspects.size === 0 || this.#lost) return;
    const attached = this.#attachment();
    for (const object of this.#suspects) {
      const list = this.#positions.get(object) ?? [];
      const held = list.filter((p) => (p.parent as Record<string, unknown>)[p.key] === object);
      if (held.filter((p) => attached(p.parent)).length > 1) {
        this.#lose(`an object is in two places (${held.map((p) => p.key).join(', ')})`);
        return;
      }
      this.#positions.set(object, held.length > 0 ? held : list.slice(-1));
      if (held.length <= 1) this.#suspects.delete(object);
    }
  }

  /** Whether an object is reachable from the root through positions that still hold it. */
  #attachment(): (object: object) => boolean {
    const memo = new Map<object, boolean>();
    const attached = (object: object, depth: number): boolean => {
      if (object === this.#root) return true;
      const known = memo.get(object);
      if (known !== undefined) return known;
      memo.set(object, false); // a cycle of positions is not attached
      const list = this.#positions.get(object) ?? [];
      const result =
        depth < MAX_DEPTH && list.some((p) => (p.parent as Record<string, unknown>)[p.key] === object && attached(p.parent, depth + 1));
      memo.set(object, result);
      return result;
    };
    return (object) => attached(object, 0);
  }

  /** The current path of an object from the root, or null when it is no longer in the world. */
  #pathFinder(): (object: object) => Key[] | null {
    const memo = new Map<object, Key[] | null>();
    const find = (object: object, depth: number): Key[] | null => {
      if (object === this.#root) return [];
      if (memo.has(object)) return memo.get(object) ?? null;
      memo.set(object, null);
      let path: Key[] | null = null;
      const list = this.#positions.get(object) ?? [];
      for (let i = list.length - 1; i >= 0 && path === null && depth < MAX_DEPTH; i--) {
        const p = list[i] as Position;
        if ((p.parent as Record<string, unknown>)[p.key] !== object) continue;
        const above = find(p.parent, depth + 1);
        if (above !== null) path = [...above, Array.isArray(p.parent) ? Number(p.key) : p.key];
      }
      memo.set(object, path);
      return path;
    };
    return (object) => find(object, 0);
  }

  // One handler for every proxy of this world (arrow functions keep `this` the tracker).
  readonly #handler: ProxyHandler<object> = {
    get: (target, key, receiver) => {
      const value: unknown = (target as Record<PropertyKey, unknown>)[key];
      if (typeof value !== 'object' || value === null || typeof key === 'symbol' || !hasOwn(target, key)) return value;
      if (receiver !== this.#proxies.get(target)) return value; // read through an object made from a proxy
      if (!Object.isExtensible(target) || this.#rigid.has(target)) {
        // A frozen (or read-only, non-configurable) property must read as the very object it holds.
        const descriptor = Reflect.getOwnPropertyDescriptor(target, key);
        if (descriptor && !descriptor.configurable && descriptor.writable === false) return this.#exposeRaw(value);
      }
      return this.#child(value, target, key);
    },
    set: (target, key, value, receiver) => {
      // An object made from a proxy (Object.create) gets the property itself, as it would from a plain object.
      if (receiver !== this.#proxies.get(target)) return Reflect.set(target, key, value, receiver);
      if (typeof key === 'symbol') return Reflect.set(target, key, value);
      this.#beforeWrite(target);
      return Reflect.set(target, key, this.#adopt(value, target, key, new Set()));
    },
    deleteProperty: (target, key) => {
      if (typeof key !== 'symbol' && hasOwn(target, key)) this.#beforeWrite(target);
      return Reflect.deleteProperty(target, key);
    },
    defineProperty: (target, key, descriptor) => {
      if (typeof key === 'symbol') return Reflect.defineProperty(target, key, descriptor);
      this.#beforeWrite(target);
      if ('value' in descriptor) descriptor = { ...descriptor, value: this.#adopt(descriptor.value, target, key, new Set()) };
      if (descriptor.configurable === false) this.#rigid.add(target);
      return Reflect.defineProperty(target, key, descriptor);
    },
    getOwnPropertyDescriptor: (target, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target, key);
      const value: unknown = descriptor?.value;
      if (descriptor?.configurable && typeof key !== 'symbol' && typeof value === 'object' && value !== null) {
        descriptor.value = this.#child(value, target, key);
      }
      return descriptor;
    },
    setPrototypeOf: (target, proto) => {
      this.#beforeWrite(target);
      this.#lose('a world object had its prototype changed');
      return Reflect.setPrototypeOf(target, proto);
    },
    preventExtensions: (target) => {
      this.#beforeWrite(target);
      this.#rigid.add(target);
      return Reflect.preventExtensions(target);
    },
  };
}

/** Positions deeper than this are not followed (a world is not that deep; a cycle would be). */
const MAX_DEPTH = 10_000;
