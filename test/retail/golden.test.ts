/**
 * Golden tests of the retail tools against tau-bench's own results. For every train and dev task,
 * replaying its gold actions on a fresh world must change exactly the records listed in
 * expected-<split>.json (to exactly those values, and nothing else), and each action must return
 * what `observations` says (an error as "Error: <message>").
 *
 * Speed: a full structuredClone of the 1.6 MB world per task would take ~10 s for 520 tasks. Instead
 * each task's world is fresh maps over one deep-frozen pristine world, with private deep copies of
 * the records its actions name (each order and its user, each user). A tool that wrote to any other
 * record would throw (writes to frozen objects throw in ES modules), and every record is compared
 * against the pristine world or the expected file afterwards, so nothing is taken on trust.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { retail } from '../../fixtures/retail/environment.js';
import { differences, goldTasks, readRetailJson, runAction, type GoldTask, type Split } from '../../fixtures/retail/gold.js';
import { replayContext, type RetailWorld } from '../../fixtures/retail/world.js';

type Collection = keyof RetailWorld;
const COLLECTIONS: readonly Collection[] = ['users', 'orders', 'products'];

interface Expected {
  index: number;
  changed: Partial<Record<Collection, Record<string, unknown>>>;
  observations: unknown[];
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

const pristine: RetailWorld = deepFreeze((await retail.createState(replayContext())) as RetailWorld);

/** A world for one task: fresh maps, private copies of the records its actions name, the rest frozen and shared. */
function worldFor(task: GoldTask): RetailWorld {
  const world: RetailWorld = { users: { ...pristine.users }, orders: { ...pristine.orders }, products: { ...pristine.products } };
  const own = (collection: Collection, id: unknown) => {
    if (typeof id !== 'string' || !Object.hasOwn(pristine[collection], id)) return;
    const map = world[collection] as Record<string, unknown>;
    if (map[id] === pristine[collection][id]) map[id] = structuredClone(pristine[collection][id]);
  };
  for (const { kwargs } of task.actions) {
    own('orders', kwargs.order_id);
    if (typeof kwargs.order_id === 'string' && Object.hasOwn(pristine.orders, kwargs.order_id)) {
      own('users', pristine.orders[kwargs.order_id]?.user_id);
    }
    own('users', kwargs.user_id);
  }
  return world;
}

/** A returned value as tau-bench recorded it: strings that are JSON are parsed, errors are "Error: <message>". */
function asObservation(outcome: Awaited<ReturnType<typeof runAction>>): unknown {
  if (!outcome.ok) return `Error: ${outcome.message}`;
  if (typeof outcome.value !== 'string') return structuredClone(outcome.value);
  try {
    return JSON.parse(outcome.value) as unknown;
  } catch {
    return outcome.value;
  }
}

/** The first path at which two deep-equal values list their keys in a different order, or null. */
function keyOrderDifference(a: unknown, b: unknown, path: string[] = []): string | null {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return null;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.join('\0') !== kb.join('\0')) return `${path.join('.') || '(top)'}: keys ${ka.join(',')} vs ${kb.join(',')}`;
  for (const key of ka) {
    const inner = keyOrderDifference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], [...path, key]);
    if (inner) return inner;
  }
  return null;
}

function describeDifferences(expected: unknown, actual: unknown): string {
  const { total, first } = differences(expected, actual);
  return `${total} difference(s): ${first
    .map((d) => `${d.path || '(top)'} expected ${JSON.stringify(d.expected)}, got ${JSON.stringify(d.actual)}`)
    .join('; ')}`;
}

/** Which actions of the task named a record (so a world mismatch points at the actions that caused it). */
function actionsTouching(task: GoldTask, collection: Collection, id: string): string {
  const hits = task.actions.flatMap(({ kwargs }, k) => {
    const orderId = typeof kwargs.order_id === 'string' ? kwargs.order_id : undefined;
    const named =
      (collection === 'orders' && orderId === id) ||
      (collection === 'users' && (kwargs.user_id === id || (orderId !== undefined && pristine.orders[orderId]?.user_id === id)));
    return named ? [k] : [];
  });
  return hits.length ? `action ${hits.join(', ')}` : 'no action names it';
}

/** Every way in which replaying `task` disagrees with `expected`; empty when it matches. */
async function goldenProblems(split: Split, task: GoldTask, expected: Expected): Promise<string[]> {
  const id = `retail/${split}/${task.index}`;
  const problems: string[] = [];
  if (expected.index !== task.index) return [`${id}: expected-${split}.json has index ${expected.index} here`];
  if (expected.observations.length !== task.actions.length) {
    problems.push(`${id}: ${task.actions.length} actions but ${expected.observations.length} observations`);
  }
  const world = worldFor(task);
  for (const [k, action] of task.actions.entries()) {
    const got = asObservation(await runAction(world, action));
    const want = expected.observations[k];
    const where = `${id} action ${k} (${action.name})`;
    if (!isDeepStrictEqual(got, want)) {
      problems.push(`${where}: observation: ${describeDifferences(want, got)}`);
    } else {
      const order = keyOrderDifference(want, got);
      if (order) problems.push(`${where}: observation key order at ${order}`);
    }
  }
  for (const collection of COLLECTIONS) {
    const before = pristine[collection] as Record<string, unknown>;
    const after = world[collection] as Record<string, unknown>;
    const changed = expected.changed[collection] ?? {};
    if (Object.keys(after).join('\0') !== Object.keys(before).join('\0')) {
      problems.push(`${id}: the ids of ${collection} changed`);
    }
    for (const [key, record] of Object.entries(after)) {
      const path = `${collection}.${key}`;
      const touched = actionsTouching(task, collection, key);
      if (Object.hasOwn(changed, key)) {
        if (!isDeepStrictEqual(record, changed[key])) {
          problems.push(`${id} (${touched}): ${path}: ${describeDifferences(changed[key], record)}`);
        } else if (isDeepStrictEqual(record, before[key])) {
          problems.push(`${id}: ${path} is listed as changed but equals the initial record`);
        } else {
          const order = keyOrderDifference(changed[key], record, [collection, key]);
          if (order) problems.push(`${id} (${touched}): key order at ${order}`);
        }
      } else if (record !== before[key] && !isDeepStrictEqual(record, before[key])) {
        problems.push(`${id} (${touched}): ${path} changed but should not have: ${describeDifferences(before[key], record)}`);
      }
    }
    for (const key of Object.keys(changed)) {
      if (!Object.hasOwn(after, key)) problems.push(`${id}: ${collection}.${key} is expected but missing`);
    }
  }
  return problems;
}

describe.each(['train', 'dev'] as const)('retail %s: gold actions reproduce tau-bench', (split) => {
  const tasks = goldTasks(split);
  const expected = readRetailJson<Expected[]>(`./expected-${split}.json`);

  it('has one expected entry per task', () => {
    expect(expected.map((e) => e.index)).toEqual(tasks.map((t) => t.index));
  });

  it.each(tasks.map((task, i) => ({ id: `retail/${split}/${task.index}`, task, i })))('$id', async ({ task, i }) => {
    const entry = expected[i];
    if (!entry) throw new Error(`no expected entry for retail/${split}/${task.index}`);
    expect(await goldenProblems(split, task, entry)).toEqual([]);
  });
});
