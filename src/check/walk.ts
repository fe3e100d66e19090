/**
 * Walks over worlds: objects two worlds share, objects one world holds at two paths, and the
 * first places where two worlds differ. Paths are dot-separated segments, array indices included
 * (`orders.#W1.items.0`), as in `mayChange`.
 */
import { isDeepStrictEqual } from 'node:util';

/** Segments from the top of a world. */
export type WorldPath = (string | number)[];

/** A path as text; the empty path is the world itself. */
export function formatPath(path: readonly (string | number)[]): string {
  return path.length === 0 ? '(the world itself)' : path.join('.');
}

/** An object reachable from both worlds, where it is in each. */
export interface SharedObject {
  /** Where the second world holds it. */
  path: WorldPath;
  /** Where the first world holds it (usually the same path). */
  pathInFirst: WorldPath;
}

/** An object found at a second path of the same world. */
export interface AliasedObject {
  path: WorldPath;
  /** Where the walk met it first. */
  firstPath: WorldPath;
}

/** Two values that differ, and where. */
export interface Difference {
  path: WorldPath;
  first: unknown;
  second: unknown;
}

/** At most `limit` of the things found; `total` counts them all. */
export interface Found<T> {
  total: number;
  first: T[];
}

/** Where the walk met an object: its parent's entry and its key there (the root has none). */
interface Node {
  parent: Node | null;
  key: string | number;
}

function pathOf(node: Node): WorldPath {
  const path: WorldPath = [];
  for (let n: Node | null = node; n?.parent; n = n.parent) path.push(n.key);
  return path.reverse();
}

function isObject(value: unknown): value is object {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

/** The values an object holds, with their keys; leaves (dates, buffers, regexps) hold none worth walking. */
function children(value: object): Iterable<[string | number, unknown]> {
  if (Array.isArray(value)) return value.entries();
  if (value instanceof Map) return [...value].map(([k, v]): [string, unknown] => [String(k), v]);
  if (value instanceof Set) return [...value].entries();
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date || value instanceof RegExp) return [];
  if (typeof value === 'function') return [];
  return Object.entries(value);
}

/**
 * Every object reachable from `root`, keyed to where the walk met it first. Objects met again
 * (at another path, or through a cycle) go to `onAgain` and are not walked twice.
 */
function index(root: unknown, onAgain?: (path: WorldPath, firstPath: WorldPath) => void): Map<object, Node> {
  const seen = new Map<object, Node>();
  if (!isObject(root)) return seen;
  const stack: [object, Node][] = [[root, { parent: null, key: '' }]];
  seen.set(root, stack[0]![1]);
  while (stack.length > 0) {
    const [value, node] = stack.pop()!;
    const next: [object, Node][] = [];
    for (const [key, child] of children(value)) {
      if (!isObject(child)) continue;
      const here: Node = { parent: node, key };
      const before = seen.get(child);
      if (before) {
        onAgain?.(pathOf(here), pathOf(before));
        continue;
      }
      seen.set(child, here);
      next.push([child, here]);
    }
    pushReversed(stack, next);
  }
  return seen;
}

/**
 * Objects reachable from both `a` and `b` (by identity), at any paths. Below a shared object
 * everything is shared too, so only the topmost ones are reported.
 */
export function findSharedObjects(a: unknown, b: unknown, limit = 5): Found<SharedObject> {
  const inA = index(a);
  const found: Found<SharedObject> = { total: 0, first: [] };
  if (!isObject(b)) return found;
  const seen = new Set<object>([b]);
  const stack: [unknown, Node][] = [[b, { parent: null, key: '' }]];
  while (stack.length > 0) {
    const [value, node] = stack.pop()!;
    const other = inA.get(value as object);
    if (other) {
      found.total += 1;
      if (found.first.length < limit) found.first.push({ path: pathOf(node), pathInFirst: pathOf(other) });
      continue;
    }
    const next: [unknown, Node][] = [];
    for (const [key, child] of children(value as object)) {
      if (!isObject(child) || seen.has(child)) continue;
      seen.add(child);
      next.push([child, { parent: node, key }]);
    }
    pushReversed(stack, next);
  }
  return found;
}

/** Objects one world holds at more than one path, cycles included. */
export function findAliasedObjects(world: unknown, limit = 5): Found<AliasedObject> {
  const found: Found<AliasedObject> = { total: 0, first: [] };
  index(world, (path, firstPath) => {
    found.total += 1;
    if (found.first.length < limit) found.first.push({ path, firstPath });
  });
  return found;
}

/** Where `a` and `b` differ as data (same keys, same values; key order aside), first paths first. */
export function findDifferences(a: unknown, b: unknown, limit = 3): Found<Difference> {
  const found: Found<Difference> = { total: 0, first: [] };
  // Pairs already compared (or being compared): cycles end here.
  const compared = new WeakMap<object, WeakSet<object>>();
  const add = (path: WorldPath, first: unknown, second: unknown): void => {
    found.total += 1;
    if (found.first.length < limit) found.first.push({ path: [...path], first, second });
  };
  const walk = (x: unknown, y: unknown, path: WorldPath): void => {
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) return;
    if (!isObject(x) || !isObject(y) || Array.isArray(x) !== Array.isArray(y) || Object.getPrototypeOf(x) !== Object.getPrototypeOf(y)) {
      add(path, x, y);
      return;
    }
    const pairs = compared.get(x) ?? new WeakSet<object>();
    if (pairs.has(y)) return;
    pairs.add(y);
    compared.set(x, pairs);
    if (!isPlain(x)) {
      if (!isDeepStrictEqual(x, y)) add(path, x, y);
      return;
    }
    const xs = x as Record<string, unknown>;
    const ys = y as Record<string, unknown>;
    const keys = new Set([...Object.keys(xs), ...Object.keys(ys)]);
    for (const key of keys) {
      const segment = Array.isArray(x) ? Number(key) : key;
      path.push(segment);
      if (!Object.hasOwn(xs, key) || !Object.hasOwn(ys, key)) add(path, xs[key], ys[key]);
      else walk(xs[key], ys[key], path);
      path.pop();
    }
  };
  walk(a, b, []);
  return found;
}

function isPlain(value: object): boolean {
  if (Array.isArray(value)) return true;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Children go on the stack last first, so the walk meets keys in the order a reader scans the world. */
function pushReversed<T>(stack: T[], items: readonly T[]): void {
  for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
}
