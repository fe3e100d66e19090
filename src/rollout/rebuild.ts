/**
 * A stored run's two worlds, rebuilt without its agent: the initial world from createState with
 * the run's seed and the rollout's clock (state.ts), checked against run.json's `worldHash`, and
 * the final world with `state-diff.json` applied to another copy. A world is deterministic for its
 * seed, so these are the worlds the verifier saw (the same keys, values and array order; the order
 * of keys in an object a tool rebuilt, and in a snapshotted world the types JSON does not keep, are
 * not in the diff). When the hash differs, the environment or its data changed since, and the run
 * cannot be graded again.
 */
import deepDiff from 'deep-diff';
import { CREATE_STATE_TIMEOUT_MS } from '../options.js';
import type { Environment, RunRecord } from '../types.js';
import type { Change } from './diff.js';
import { analyzeWorld } from './plain.js';
import { callCreateState, createContext, EnvironmentError, hashWorld } from './state.js';

/** The worlds of a run, or why they cannot be had. */
export type Rebuilt<State> =
  | { ok: true; initial: State; final: State }
  | { ok: false; reason: 'world_changed' | 'environment_error'; message: string };

/** Rebuilds a run's initial and final worlds (see the module comment). */
export async function rebuildWorlds<State>(
  environment: Environment<State>,
  run: Pick<RunRecord, 'seed' | 'worldHash' | 'tracking'>,
  changes: readonly Change[],
  timeoutMs = CREATE_STATE_TIMEOUT_MS,
): Promise<Rebuilt<State>> {
  let initial: State;
  let final: State;
  try {
    const built = await callCreateState(environment, createContext(run.seed, environment.clockStart), timeoutMs);
    const mode = run.tracking?.mode ?? (environment.trackChanges !== false && analyzeWorld(built) === null ? 'writes' : 'snapshot');
    if (mode === 'snapshot') {
      // As the rollout did: the verifier's `initial` is a copy (without prototypes, so its JSON and
      // hash can differ from the live world's), and the live world is what the tools wrote to.
      initial = copy(built, environment.name);
      final = built;
    } else {
      // A tracked rollout hashed the live world. A second build, not a copy, becomes the final
      // world: createState is cheaper than structuredClone for most worlds.
      initial = built;
      final = await callCreateState(environment, createContext(run.seed, environment.clockStart), timeoutMs);
      if ((final as unknown) === (built as unknown)) {
        throw new EnvironmentError(`${environment.name}.createState() returned the same object twice; return a new object on every call`);
      }
    }
  } catch (err) {
    if (err instanceof EnvironmentError) return { ok: false, reason: 'environment_error', message: err.message };
    throw err;
  }
  const hash = hashWorld(initial);
  if (hash !== run.worldHash) {
    return {
      ok: false,
      reason: 'world_changed',
      message:
        `${environment.name}.createState() with seed ${run.seed} builds another world than this run saw ` +
        `(sha256 ${hash.slice(0, 12)}… now, ${String(run.worldHash).slice(0, 12)}… then): the environment or its data changed since, ` +
        'so the stored changes no longer give the final world; run the task again',
    };
  }
  for (const change of changes) deepDiff.applyChange(final, true, change);
  return { ok: true, initial, final };
}

function copy<State>(world: State, name: string): State {
  try {
    return structuredClone(world);
  } catch (err) {
    throw new EnvironmentError(`the world built by ${name}.createState() cannot be copied (${(err as Error).message})`);
  }
}
