/**
 * Steps 1 and 2: build a fresh world and get ready to see what changes in it: a write tracker for
 * worlds of plain data (no copy is taken), a snapshot for the others. Also the deterministic
 * context (seeded PRNG, simulated clock) that createState and every tool receive.
 */
import { createHash } from 'node:crypto';
import { describeError } from '../errors.js';
import { CREATE_STATE_TIMEOUT_MS, DEFAULT_CLOCK_START } from '../options.js';
import { TIMED_OUT, within } from '../time.js';
import type { Environment, RunRecord, WorldContext } from '../types.js';
import { diffWorld, type Change } from './diff.js';
import { analyzeWorld } from './plain.js';
import { WriteTracker } from './track.js';
import { noteWritten, remember, reusable, setDeterministic, watchSeed, worldKey, type CachedWorld } from './world-cache.js';

/** Raised when the world cannot be built; the run ends `not_started` with an `environment_error`. */
export class EnvironmentError extends Error {
  readonly code = 'environment_error';
}

export interface World<State = unknown> {
  /** The live world. */
  state: State;
  /** What tools receive: the live world, behind the write tracker's proxy when there is one. */
  view: State;
  /** A deep copy of the world before the agent started (made when first read, if tracked). */
  readonly initial: State;
  ctx: WorldContext;
  /** sha256 of the initial world's JSON. */
  worldHash: string;
  /** Records each call's changes; null for a snapshotted world. */
  tracker: WriteTracker<State & object> | null;
  /** How changes are found, for run.json. */
  tracking: NonNullable<RunRecord['tracking']>;
  /** The changes from the initial world to the live one. */
  diff(): Change[];
}

/** Every world createState has returned in this process, to catch a cached object handed out twice. */
const seenWorlds = new WeakSet<object>();
/** Environments whose createState has passed the two-call freshness probe. */
const probed = new WeakSet<object>();

/** mulberry32: small, fast, and good enough for simulated worlds. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The context of one rollout. */
export function createContext(seed: number, clockStart: string | number | undefined): WorldContext {
  const start = clockStart === undefined ? DEFAULT_CLOCK_START : new Date(clockStart).getTime();
  if (Number.isNaN(start)) throw new EnvironmentError(`clockStart ${JSON.stringify(clockStart)} is not a date`);
  let now = start;
  return {
    seed,
    random: seededRandom(seed),
    now: () => now,
    advance(ms: number) {
      if (!(ms >= 0)) throw new RangeError('ctx.advance(ms) needs a non-negative number');
      now += ms;
    },
  };
}

/** Steps 1–2: createState with the freshness guard, then the snapshot. */
export async function buildWorld<State>(
  environment: Environment<State>,
  seed: number,
  timeoutMs = CREATE_STATE_TIMEOUT_MS,
): Promise<World<State>> {
  const ctx = createContext(seed, environment.clockStart);
  const watch = watchSeed(ctx);
  const state = await callCreateState(environment, watch.ctx, timeoutMs);
  const key = worldKey(environment, seed, watch.readsSeed());
  let other: State | undefined;
  if (!probed.has(environment)) {
    // The first rollout of an environment in this process asks for a second world: a
    // createState that hands out one cached object (an imported JSON module, say) shows here.
    other = await callCreateState(environment, createContext(seed, environment.clockStart), timeoutMs);
    if (other === state) throw staleWorld(environment.name);
    probed.add(environment);
  }
  if (seenWorlds.has(state as object)) throw staleWorld(environment.name);
  seenWorlds.add(state as object);

  // A world known from an earlier rollout of this key (world-cache.ts) is not walked again.
  let known: CachedWorld | undefined = environment.trackChanges === false ? undefined : reusable(environment, key, state as object);
  const untrackable = environment.trackChanges === false ? 'trackChanges is false' : known ? null : analyzeWorld(state);
  if (untrackable === null) {
    let worldHash: string;
    if (known) {
      worldHash = known.hash;
    } else {
      worldHash = hashWorld(state);
      // The probe's second world tells whether this environment builds the same world each time.
      if (other !== undefined) setDeterministic(environment, hashWorld(other) === worldHash);
      known = remember(environment, key, state as object, worldHash);
    }
    const tracker = new WriteTracker(state as State & object);
    let initial: State | undefined;
    return {
      state,
      view: tracker.view,
      get initial() {
        return (initial ??= tracker.initial());
      },
      ctx,
      worldHash,
      tracker,
      get tracking() {
        return { mode: 'writes' as const, ...(tracker.lost ? { lost: tracker.lost } : {}) };
      },
      diff: () => {
        const changes = tracker.diff();
        // What this rollout wrote must not turn up in a later world of the same key.
        if (known) noteWritten(known, tracker.written());
        return changes;
      },
    };
  }

  let initial: State;
  try {
    initial = structuredClone(state);
  } catch (err) {
    // structuredClone recurses once per level: a world about 2,000 levels deep is too deep for it.
    const advice =
      err instanceof RangeError && /call stack/i.test(err.message)
        ? 'it is nested too deeply to copy; keep it shallower (hold deep chains as arrays or maps of ids)'
        : 'keep the world to plain data (no functions or class instances with private state)';
    throw new EnvironmentError(`the world built by ${environment.name}.createState() cannot be copied (${(err as Error).message}); ${advice}`);
  }
  return {
    state,
    view: state,
    initial,
    ctx,
    worldHash: hashWorld(initial),
    tracker: null,
    tracking: { mode: 'snapshot', reason: untrackable },
    diff: () => diffWorld(initial, state),
  };
}

/** createState with a time limit; whatever goes wrong is an EnvironmentError that says what. */
export async function callCreateState<State>(environment: Environment<State>, ctx: WorldContext, timeoutMs: number): Promise<State> {
  let state: State | typeof TIMED_OUT;
  try {
    state = await within(Promise.resolve().then(() => environment.createState(ctx)), timeoutMs);
  } catch (err) {
    throw new EnvironmentError(`${environment.name}.createState() threw: ${describeError(err)}`);
  }
  if (state === TIMED_OUT) {
    throw new EnvironmentError(`${environment.name}.createState() did not finish within ${timeoutMs} ms`);
  }
  if (typeof state !== 'object' || state === null) {
    throw new EnvironmentError(`${environment.name}.createState() must return an object (got ${state === null ? 'null' : typeof state})`);
  }
  return state;
}

function staleWorld(name: string): EnvironmentError {
  return new EnvironmentError(
    `${name}.createState() returned an object it has returned before, so one rollout would see another's changes; return a new object on every call, e.g. \`createState: () => structuredClone(seed)\``,
  );
}

/** sha256 of a world's JSON text, recorded in run.json to tell which world a run saw. */
export function hashWorld(world: unknown): string {
  let text: string;
  try {
    // Plain JSON.stringify first: a replacer function makes it several times slower on big worlds.
    text = JSON.stringify(world) ?? 'undefined';
  } catch {
    try {
      text = JSON.stringify(world, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) ?? 'undefined';
    } catch {
      text = 'unhashable';
    }
  }
  return createHash('sha256').update(text).digest('hex');
}
