/**
 * Step 7: the change records (deep-diff format) that turn the initial world into the final one.
 *
 * The records are exactly those deep-diff's `diff` produces, in the same order (a test compares
 * the two on random worlds), so deep-diff's `applyChange` replays them. The walk is our own:
 * deep-diff looks up each key of an object with `indexOf` over the other object's keys, which is
 * quadratic in the width of an object (a world with 25,000 records keyed by id took seconds), and
 * copies the path at every node; here keys are looked up in a Set and a path is copied only when a
 * change is recorded.
 */
import deepDiff from 'deep-diff';
import { isPlainObject } from './plain.js';
import { setData, unwrapProxy } from './proxies.js';

/**
 * A deep-diff change record, typed here rather than with deep-diff's own types (a dev dependency:
 * the declarations users compile against must not need it).
 */
export type Change =
  | { kind: 'N'; path?: Key[]; rhs: unknown }
  | { kind: 'D'; path?: Key[]; lhs: unknown }
  | { kind: 'E'; path?: Key[]; lhs: unknown; rhs: unknown }
  | { kind: 'A'; path?: Key[]; index: number; item: Change };

export type Key = string | number;

/**
 * What a walk needs besides the two sides. A plain diff compares two separate worlds. A tracked
 * diff compares one world with itself: `before` holds the content an object had before it was
 * written, `node` the paths of the written objects, and values put in records are copied out.
 */
interface Walk {
  changes: Change[];
  /**
   * The objects being compared, from the root down (a cycle leads back to one of them). None is
   * in it twice: a walk stops at an object already in it.
   */
  comparing: Set<unknown>;
  before: ReadonlyMap<object, object> | null;
  /** An old value as a record holds it. */
  old(value: unknown): unknown;
  /** A new value as a record holds it. */
  now(value: unknown): unknown;
}

/** A node of the tree of paths that lead to written objects. */
interface PathNode {
  written: boolean;
  children: Map<string, PathNode> | null;
}

/** The changes from `initial` to `final`; empty when nothing changed. */
export function diffWorld(initial: unknown, final: unknown): Change[] {
  const w: Walk = { changes: [], comparing: new Set(), before: null, old: same, now: same };
  walk(initial, final, false, false, [], w, undefined);
  return w.changes;
}

/**
 * The changes of a world since `before` was recorded, visiting only the written objects and the
 * paths to them (`pathOf` gives an object's current path, null once it left the world). Old values
 * are rebuilt from `before`; `copy` is applied to the values a record takes from the live world.
 */
export function diffTracked(
  root: object,
  before: ReadonlyMap<object, object>,
  pathOf: (object: object) => Key[] | null,
  copy: (value: unknown) => unknown,
): Change[] {
  const tree: PathNode = { written: false, children: null };
  for (const object of before.keys()) {
    const path = pathOf(object);
    if (path === null) continue; // no longer in the world: its old parent's change shows it
    let node = tree;
    for (const key of path) {
      node.children ??= new Map();
      const name = String(key);
      let next = node.children.get(name);
      if (next === undefined) {
        next = { written: false, children: null };
        node.children.set(name, next);
      }
      node = next;
    }
    node.written = true;
  }
  const memo = new Map<object, unknown>();
  const w: Walk = { changes: [], comparing: new Set(), before, old: (v) => materialize(v, before, memo), now: copy };
  walk(root, root, true, true, [], w, tree);
  return w.changes;
}

const same = (value: unknown): unknown => value;

/** A deep copy of a value as it was before the writes recorded in `before` (aliases kept). */
export function materialize(input: unknown, before: ReadonlyMap<object, object>, memo = new Map<object, unknown>()): unknown {
  if (typeof input !== 'object' || input === null) return input;
  // A proxy can end up in the world (inside a frozen new value); its object holds the records.
  const value: object = unwrapProxy(input);
  const done = memo.get(value);
  if (done !== undefined) return done;
  const source = before.get(value) ?? value;
  let copy: unknown;
  if (Array.isArray(source)) {
    const array: unknown[] = new Array<unknown>(source.length);
    memo.set(value, array);
    for (let i = 0; i < source.length; i++) if (i in source) array[i] = materialize(source[i], before, memo);
    copy = array;
  } else if (typeOf(source) !== 'object' || !isPlainObject(source)) {
    try {
      copy = structuredClone(source);
    } catch {
      copy = String(source); // a Map or Set holding what cannot be copied
    }
    memo.set(value, copy);
  } else {
    const object: Record<string, unknown> = Object.getPrototypeOf(source) === null ? (Object.create(null) as Record<string, unknown>) : {};
    memo.set(value, object);
    for (const key of Object.keys(source)) setData(object, key, materialize((source as Record<string, unknown>)[key], before, memo));
    copy = object;
  }
  return copy;
}

/** Applies changes to a deep copy of `initial`, giving the final world. */
export function applyChanges<T>(initial: T, changes: readonly Change[]): T {
  const target = structuredClone(initial);
  for (const change of changes) deepDiff.applyChange(target, true, change as deepDiff.Diff<unknown, unknown>);
  return target;
}

/** The full path a change touches (an array change includes the element's index). */
export function changePath(change: Change): (string | number)[] {
  const path: (string | number)[] = [...((change.path ?? []) as (string | number)[])];
  if (change.kind === 'A') path.push(change.index);
  return path;
}

/** deep-diff omits `path` when it is empty. */
function record(kind: 'N' | 'D' | 'E', path: Key[], lhs: unknown, rhs: unknown): Change {
  const change: Record<string, unknown> = { kind };
  if (path.length > 0) change.path = path.slice();
  if (kind !== 'N') change.lhs = lhs;
  if (kind !== 'D') change.rhs = rhs;
  return change as unknown as Change;
}

function arrayRecord(path: Key[], index: number, item: Change): Change {
  const change: Record<string, unknown> = { kind: 'A' };
  if (path.length > 0) change.path = path.slice();
  change.index = index;
  change.item = item;
  return change as unknown as Change;
}

/** deep-diff's realTypeOf, without calling toString on every object. */
function typeOf(value: unknown): string {
  const type = typeof value;
  if (type !== 'object') return type;
  if (value === null) return 'null';
  if (value === Math) return 'math';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  if (value instanceof RegExp) return 'regexp';
  return 'object';
}

/** An object pair (or, in a tracked diff, an unwritten object) whose keys the walk must visit. */
type Nested =
  | { kind: 'compare'; lhs: object; rhs: object; node: PathNode | undefined }
  | { kind: 'descend'; object: object; node: PathNode };

/**
 * Levels the walk goes down by recursion. Below, it keeps its place on an array instead of the
 * call stack (a snapshot can hold a world thousands of levels deep), at about twice the cost per
 * object, so shallow worlds keep the fast recursive walk.
 */
const RECURSION_LEVELS = 256;

/** From one position to the end, depth first, in deep-diff's order of records. */
function walk(lhs: unknown, rhs: unknown, lhsHas: boolean, rhsHas: boolean, path: Key[], w: Walk, node: PathNode | undefined): void {
  const inner = visit(lhs, rhs, lhsHas, rhsHas, path, w, node);
  if (inner === null) return;
  if (path.length >= RECURSION_LEVELS) {
    walkDeep(inner, path, w);
  } else if (inner.kind === 'descend') {
    descend(inner.object, path, w, inner.node);
  } else {
    // The old side is being compared (for cycles) while its keys are walked.
    w.comparing.add(inner.lhs);
    if (Array.isArray(inner.lhs)) walkArray(inner.lhs, inner.rhs as unknown[], path, w, inner.node);
    else walkObject(inner.lhs as Record<string, unknown>, inner.rhs as Record<string, unknown>, path, w, inner.node);
    w.comparing.delete(inner.lhs);
  }
}

/** A nested walk in progress: it yields the walks nested in it, each run to its end before it goes on. */
type Walker = Generator<Nested, void, void>;

/** `first` and everything below it, with the walks in progress on an array. */
function walkDeep(first: Nested, path: Key[], w: Walk): void {
  const walkers: Walker[] = [];
  // The old side each walker compares (null for one that descends), compared until it ends.
  const compared: (object | null)[] = [];
  const enter = (what: Nested): void => {
    if (what.kind === 'descend') {
      walkers.push(descendDeep(what.object, path, w, what.node));
      compared.push(null);
      return;
    }
    w.comparing.add(what.lhs);
    walkers.push(
      Array.isArray(what.lhs)
        ? walkArrayDeep(what.lhs, what.rhs as unknown[], path, w, what.node)
        : walkObjectDeep(what.lhs as Record<string, unknown>, what.rhs as Record<string, unknown>, path, w, what.node),
    );
    compared.push(what.lhs);
  };
  enter(first);
  while (walkers.length > 0) {
    const step = walkers[walkers.length - 1]!.next();
    if (!step.done) {
      enter(step.value);
    } else {
      walkers.pop();
      const object = compared.pop();
      if (object) w.comparing.delete(object);
    }
  }
}

/**
 * One position of the walk: records what differs there, or returns the nested walk its two
 * objects need. `lhsHas`/`rhsHas` say whether the key exists on each side (a property holding
 * `undefined` exists). `node` (tracked diffs) is the path tree at this position.
 */
function visit(lhs: unknown, rhs: unknown, lhsHas: boolean, rhsHas: boolean, path: Key[], w: Walk, node: PathNode | undefined): Nested | null {
  if (lhs === rhs && typeof lhs === 'object' && lhs !== null) {
    // The same object on both sides: in a plain diff it has no differences (deep-diff would walk
    // it to find none); in a tracked one only written objects and the paths to them can have any.
    if (node === undefined) return null;
    const prior = w.before?.get(lhs);
    if (prior !== undefined) return { kind: 'compare', lhs: prior, rhs: rhs as object, node };
    return { kind: 'descend', object: lhs, node };
  }
  let ltype = typeOf(lhs);
  let rtype = typeOf(rhs);
  if (ltype === 'regexp' && rtype === 'regexp') {
    lhs = String(lhs);
    rhs = String(rhs);
    ltype = rtype = 'string';
  }
  const ldefined = lhs !== undefined || lhsHas;
  const rdefined = rhs !== undefined || rhsHas;
  if (!ldefined && rdefined) {
    w.changes.push(record('N', path, undefined, w.now(rhs)));
  } else if (!rdefined && ldefined) {
    w.changes.push(record('D', path, w.old(lhs), undefined));
  } else if (ltype !== rtype) {
    w.changes.push(record('E', path, w.old(lhs), w.now(rhs)));
  } else if (ltype === 'date' && (lhs as Date).getTime() - (rhs as Date).getTime() !== 0) {
    w.changes.push(record('E', path, w.old(lhs), w.now(rhs)));
  } else if (typeof lhs === 'object' && lhs !== null && rhs !== null) {
    if (w.comparing.has(lhs)) {
      if (lhs !== rhs) w.changes.push(record('E', path, w.old(lhs), w.now(rhs)));
      return null;
    }
    return { kind: 'compare', lhs: w.before?.get(lhs) ?? lhs, rhs: rhs as object, node };
  } else if (lhs !== rhs && !(typeof lhs === 'number' && Number.isNaN(lhs) && Number.isNaN(rhs))) {
    w.changes.push(record('E', path, lhs, rhs));
  }
  return null;
}

/** The keys of an unwritten object that lead to written ones, in deep-diff's order. */
function childKeys(object: object, children: Map<string, PathNode>): string[] {
  if (children.size === 1) return [...children.keys()];
  // Array indices from the last, object keys as the object lists them.
  if (Array.isArray(object)) return [...children.keys()].sort((a, b) => Number(b) - Number(a));
  return Object.keys(object).filter((k) => children.has(k));
}

/**
 * Records the elements only one side of an array pair has, in deep-diff's order (additions from
 * the end, then removals from the end), and returns the last index both have: their common
 * indices are walked from there to the first.
 */
function recordArrayEnds(lhs: unknown[], rhs: unknown[], path: Key[], w: Walk): number {
  let i = rhs.length - 1;
  let j = lhs.length - 1;
  while (i > j) {
    w.changes.push(arrayRecord(path, i, record('N', [], undefined, w.now(rhs[i]))));
    i--;
  }
  while (j > i) {
    w.changes.push(arrayRecord(path, j, record('D', [], w.old(lhs[j]), undefined)));
    j--;
  }
  return i;
}

/** An object that was not written itself: only the paths to written objects below it. */
function descend(object: object, path: Key[], w: Walk, node: PathNode): void {
  const children = node.children;
  if (children === null) return;
  const record = object as Record<string, unknown>;
  for (const key of childKeys(object, children)) {
    path.push(Array.isArray(object) ? Number(key) : key);
    const value = record[key];
    walk(value, value, true, true, path, w, children.get(key));
    path.pop();
  }
}

function walkArray(lhs: unknown[], rhs: unknown[], path: Key[], w: Walk, node: PathNode | undefined): void {
  for (let i = recordArrayEnds(lhs, rhs, path, w); i >= 0; --i) {
    path.push(i);
    walk(lhs[i], rhs[i], i in lhs, i in rhs, path, w, node?.children?.get(String(i)));
    path.pop();
  }
}

function walkObject(lhs: Record<string, unknown>, rhs: Record<string, unknown>, path: Key[], w: Walk, node: PathNode | undefined): void {
  const lkeys = Object.keys(lhs);
  const rkeys = Object.keys(rhs);
  const rset = new Set(rkeys);
  const lset = new Set(lkeys);
  const children = node?.children;
  for (const k of lkeys) {
    path.push(k);
    if (rset.has(k)) walk(lhs[k], rhs[k], true, true, path, w, children?.get(k));
    // deep-diff checks the other side's own properties, enumerable or not.
    else walk(lhs[k], undefined, true, Object.prototype.hasOwnProperty.call(rhs, k), path, w, undefined);
    path.pop();
  }
  for (const k of rkeys) {
    if (lset.has(k)) continue;
    path.push(k);
    walk(undefined, rhs[k], Object.prototype.hasOwnProperty.call(lhs, k), true, path, w, children?.get(k));
    path.pop();
  }
}

// The same three walks, as generators for walkDeep: each yields what it nests instead of walking it.

function* descendDeep(object: object, path: Key[], w: Walk, node: PathNode): Walker {
  const children = node.children;
  if (children === null) return;
  const record = object as Record<string, unknown>;
  for (const key of childKeys(object, children)) {
    path.push(Array.isArray(object) ? Number(key) : key);
    const value = record[key];
    const inner = visit(value, value, true, true, path, w, children.get(key));
    if (inner !== null) yield inner;
    path.pop();
  }
}

function* walkArrayDeep(lhs: unknown[], rhs: unknown[], path: Key[], w: Walk, node: PathNode | undefined): Walker {
  for (let i = recordArrayEnds(lhs, rhs, path, w); i >= 0; --i) {
    path.push(i);
    const inner = visit(lhs[i], rhs[i], i in lhs, i in rhs, path, w, node?.children?.get(String(i)));
    if (inner !== null) yield inner;
    path.pop();
  }
}

function* walkObjectDeep(lhs: Record<string, unknown>, rhs: Record<string, unknown>, path: Key[], w: Walk, node: PathNode | undefined): Walker {
  const lkeys = Object.keys(lhs);
  const rkeys = Object.keys(rhs);
  const rset = new Set(rkeys);
  const lset = new Set(lkeys);
  const children = node?.children;
  for (const k of lkeys) {
    path.push(k);
    const inner = rset.has(k)
      ? visit(lhs[k], rhs[k], true, true, path, w, children?.get(k))
      : // deep-diff checks the other side's own properties, enumerable or not.
        visit(lhs[k], undefined, true, Object.prototype.hasOwnProperty.call(rhs, k), path, w, undefined);
    if (inner !== null) yield inner;
    path.pop();
  }
  for (const k of rkeys) {
    if (lset.has(k)) continue;
    path.push(k);
    const inner = visit(undefined, rhs[k], Object.prototype.hasOwnProperty.call(lhs, k), true, path, w, children?.get(k));
    if (inner !== null) yield inner;
    path.pop();
  }
}
