/**
 * What a tracked world costs to know once, reused: its hash (run.json `worldHash`) and its
 * verdict (it can be tracked). Both take a walk of the whole world (at 10 MB, a JSON
 * serialisation and a walk of every object: ~100 ms each), and createState builds the same world
 * for the same seed again and again (a world is deterministic for its seed: regrade relies on it).
 * So they are computed on the first rollout of an environment and seed in this process, and
 * reused by later ones whose world passes three checks that cost what a few thousand values do:
 *
 * - the environment is deterministic: its first rollout builds a second world anyway (the
 *   freshness probe in state.ts); both must hash the same, or nothing of it is cached;
 * - the world's sketch matches: its shape near the root breadth first (keys, kinds of values,
 *   sizes, primitive values, up to SKETCH_ENTRIES entries) and, for a world bigger than that,
 *   SKETCH_WALKS paths drawn from the root to a leaf by a fixed PRNG (so also deep into wide
 *   worlds), the same as the first world's;
 * - no object written in an earlier rollout of this key is in the new world where it was then
 *   (a createState that copies shallowly hands out objects an earlier rollout changed).
 *
 * The key is the environment object, its clockStart and the seed, or no seed when createState
 * neither read `ctx.seed` nor drew from `ctx.random()` (most worlds do not depend on the seed, and
 * an eval draws a new seed per rollout). A world that fails a check is hashed and analysed in full
 * and becomes the key's entry. Snapshotted worlds are not cached: they are copied and diffed in
 * full anyway.
 */
import type { Environment, WorldContext } from '../types.js';
import type { Key } from './diff.js';
import { isPlainObject } from './plain.js';
import { seededRandom } from './state.js';

/** Entries of the breadth-first part of a sketch. */
const SKETCH_ENTRIES = 2048;
/** Paths from the root to a leaf in a sketch. */
const SKETCH_WALKS = 32;
/** Levels a sketch's path goes down at most. */
const SKETCH_DEPTH = 64;
/** Written objects remembered per entry (the latest). */
const WRITTEN_KEPT = 256;
/** Keys (seeds) remembered per environment (the latest). */
const KEYS_PER_ENVIRONMENT = 32;

/** What is known of the world one key builds. */
export interface CachedWorld {
  readonly hash: string;
  readonly sketch: string;
  /** Objects written in rollouts of this key, and where. */
  written: { path: Key[]; ref: WeakRef<object> }[];
}

interface EnvironmentWorlds {
  /** Whether the freshness probe's two worlds were equal (null until it ran in this process). */
  deterministic: boolean | null;
  worlds: Map<string, CachedWorld>;
}

const byEnvironment = new WeakMap<object, EnvironmentWorlds>();

/** Worlds of this process whose hash and verdict were reused, and those computed in full (for tests and the bench). */
export const worldCacheStats = { reused: 0, computed: 0 };

function worldsOf(environment: Environment<unknown>): EnvironmentWorlds {
  let worlds = byEnvironment.get(environment);
  if (worlds === undefined) {
    worlds = { deterministic: null, worlds: new Map() };
    byEnvironment.set(environment, worlds);
  }
  return worlds;
}

/** The key of a world: its environment's clockStart and, if createState used it, the seed. */
export function worldKey(environment: Environment<unknown>, seed: number, readsSeed: boolean): string {
  return `${typeof environment.clockStart}:${String(environment.clockStart)}|${readsSeed ? seed : '*'}`;
}

/** Records the freshness probe's verdict: two worlds built for one seed hashed the same, or not. */
export function setDeterministic(environment: Environment<unknown>, deterministic: boolean): void {
  const worlds = worldsOf(environment);
  // Once found non-deterministic, an environment stays so.
  worlds.deterministic = worlds.deterministic !== false && deterministic;
  if (!deterministic) worlds.worlds.clear();
}

/**
 * The entry of a key whose world `state` passes the checks (see the module comment), or
 * undefined: then the world must be hashed and analysed in full.
 */
export function reusable(environment: Environment<unknown>, key: string, state: object): CachedWorld | undefined {
  const worlds = byEnvironment.get(environment);
  if (worlds?.deterministic !== true) return undefined;
  const entry = worlds.worlds.get(key);
  if (entry === undefined) return undefined;
  if (sharesWritten(entry, state) || sketchWorld(state) !== entry.sketch) {
    worlds.worlds.delete(key);
    return undefined;
  }
  worldCacheStats.reused++;
  return entry;
}

/** Stores what a full hash and analysis found for a trackable world; the entry, or undefined when not cached. */
export function remember(environment: Environment<unknown>, key: string, state: object, hash: string): CachedWorld | undefined {
  worldCacheStats.computed++;
  const worlds = worldsOf(environment);
  if (worlds.deterministic === false) return undefined;
  const entry: CachedWorld = { hash, sketch: sketchWorld(state), written: [] };
  worlds.worlds.delete(key);
  worlds.worlds.set(key, entry);
  if (worlds.worlds.size > KEYS_PER_ENVIRONMENT) worlds.worlds.delete(worlds.worlds.keys().next().value as string);
  return entry;
}

/** Notes the objects a rollout wrote, so that a later world holding them is not taken for a fresh one. */
export function noteWritten(entry: CachedWorld, written: Iterable<{ object: object; path: Key[] }>): void {
  for (const { object, path } of written) entry.written.push({ path, ref: new WeakRef(object) });
  if (entry.written.length > WRITTEN_KEPT) entry.written.splice(0, entry.written.length - WRITTEN_KEPT);
}

/** Whether `state` holds, where an earlier rollout wrote it, an object that rollout wrote. */
function sharesWritten(entry: CachedWorld, state: object): boolean {
  for (const { path, ref } of entry.written) {
    const object = ref.deref();
    if (object === undefined) continue;
    let at: unknown = state;
    for (const key of path) {
      if (typeof at !== 'object' || at === null) break;
      at = (at as Record<string, unknown>)[key];
    }
    if (at === object) return true;
  }
  return false;
}

/**
 * A cheap description of a world (see the module comment): two worlds with different sketches
 * differ; two with the same sketch are taken to be the same world only for a deterministic
 * environment's same key.
 */
export function sketchWorld(root: object): string {
  const parts: string[] = [];
  const keysOf = new Map<object, string[]>();
  // An array's keys are its indices (Object.keys would make a string of each).
  const size = (object: object): number => (Array.isArray(object) ? object.length : keys(object).length);
  const keyAt = (object: object, i: number): string | number => (Array.isArray(object) ? i : keys(object)[i]!);
  const keys = (object: object): string[] => {
    let list = keysOf.get(object);
    if (list === undefined) {
      list = Object.keys(object);
      keysOf.set(object, list);
    }
    return list;
  };
  const tag = (value: unknown): string => {
    switch (typeof value) {
      case 'string':
        return value.length <= 256 ? `s${value}` : `s${value.length}:${value.slice(0, 64)}…${value.slice(-64)}`;
      case 'number':
      case 'boolean':
      case 'bigint':
      case 'undefined':
        return `${(typeof value)[0]}${String(value)}`;
      case 'object':
        if (value === null) return 'null';
        if (Array.isArray(value)) return `[${value.length}`;
        if (!isPlainObject(value)) return `<${(value as { constructor?: { name?: string } }).constructor?.name ?? '?'}`;
        return `{${keys(value).length}${Object.isExtensible(value) ? '' : '!'}`;
      default:
        return typeof value;
    }
  };
  const walkable = (value: unknown): value is object => typeof value === 'object' && value !== null && (Array.isArray(value) || isPlainObject(value));
  parts.push(tag(root));
  // Breadth first from the root.
  const queue: object[] = [root];
  const queued = new Set<object>([root]);
  let budget = SKETCH_ENTRIES;
  // Whether the breadth-first part reached every entry of the world.
  let whole = true;
  for (let i = 0; i < queue.length; i++) {
    const object = queue[i]!;
    const count = size(object);
    if (budget < count) {
      whole = false;
      if (budget <= 0) break;
    }
    for (let j = 0; j < count; j++) {
      if (budget-- <= 0) break;
      const key = keyAt(object, j);
      const value = (object as Record<string, unknown>)[key];
      parts.push(`${key}=${tag(value)}`);
      if (walkable(value)) {
        // The same object twice near the root: worlds that differ in this still sketch apart.
        if (queued.has(value)) parts.push('~');
        else {
          queued.add(value);
          queue.push(value);
        }
      }
    }
  }
  // A world the breadth-first part saw whole (most are small) is sketched: a path would only
  // pass entries already in it.
  if (whole) return parts.join('\u0000');
  // Paths to leaves, drawn the same way every time: two worlds alike so far take the same ones.
  const random = seededRandom(0x5e1f);
  for (let walk = 0; walk < SKETCH_WALKS; walk++) {
    parts.push('/');
    let object: object = root;
    for (let depth = 0; depth < SKETCH_DEPTH; depth++) {
      const count = size(object);
      if (count === 0) break;
      const key = keyAt(object, Math.floor(random() * count));
      const value = (object as Record<string, unknown>)[key];
      parts.push(`${key}=${tag(value)}`);
      if (!walkable(value)) break;
      object = value;
    }
  }
  return parts.join('\u0000');
}

/** A context for createState that tells whether it used the seed (read it or drew a number). */
export function watchSeed(ctx: WorldContext): { ctx: WorldContext; readsSeed: () => boolean } {
  let read = false;
  const watched: WorldContext = {
    get seed() {
      read = true;
      return ctx.seed;
    },
    random() {
      read = true;
      return ctx.random();
    },
    now: () => ctx.now(),
    advance: (ms: number) => ctx.advance(ms),
  };
  return { ctx: watched, readsSeed: () => read };
}
