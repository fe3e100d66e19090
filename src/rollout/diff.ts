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

/** A deep-diff change record. */
export type Change = deepDiff.Diff<unknown, unknown>;

type Key = string | number;

/** The changes from `initial` to `final`; empty when nothing changed. */
export function diffWorld(initial: unknown, final: unknown): Change[] {
  const changes: Change[] = [];
  walk(initial, final, false, false, [], changes, []);
  return changes;
}

/** Applies changes to a deep copy of `initial`, giving the final world. */
export function applyChanges<T>(initial: T, changes: readonly Change[]): T {
  const target = structuredClone(initial);
  for (const change of changes) deepDiff.applyChange(target, true, change);
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

/**
 * One node of the walk. `lhsHas`/`rhsHas` say whether the key exists on each side (a property
 * holding `undefined` exists). `stack` holds the objects being walked, to stop at cycles.
 */
function walk(lhs: unknown, rhs: unknown, lhsHas: boolean, rhsHas: boolean, path: Key[], changes: Change[], stack: unknown[]): void {
  if (lhs === rhs && typeof lhs === 'object' && lhs !== null) {
    // The same object on both sides has no differences (deep-diff would walk it to find none).
    return;
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
    changes.push(record('N', path, undefined, rhs));
  } else if (!rdefined && ldefined) {
    changes.push(record('D', path, lhs, undefined));
  } else if (ltype !== rtype) {
    changes.push(record('E', path, lhs, rhs));
  } else if (ltype === 'date' && (lhs as Date).getTime() - (rhs as Date).getTime() !== 0) {
    changes.push(record('E', path, lhs, rhs));
  } else if (typeof lhs === 'object' && lhs !== null && rhs !== null) {
    if (stack.includes(lhs)) {
      if (lhs !== rhs) changes.push(record('E', path, lhs, rhs));
      return;
    }
    stack.push(lhs);
    if (Array.isArray(lhs)) walkArray(lhs, rhs as unknown[], path, changes, stack);
    else walkObject(lhs as Record<string, unknown>, rhs as Record<string, unknown>, path, changes, stack);
    stack.pop();
  } else if (lhs !== rhs && !(typeof lhs === 'number' && Number.isNaN(lhs) && Number.isNaN(rhs))) {
    changes.push(record('E', path, lhs, rhs));
  }
}

function walkArray(lhs: unknown[], rhs: unknown[], path: Key[], changes: Change[], stack: unknown[]): void {
  // deep-diff's order: additions from the end, then removals from the end, then common indices
  // from the last to the first.
  let i = rhs.length - 1;
  let j = lhs.length - 1;
  while (i > j) {
    changes.push(arrayRecord(path, i, record('N', [], undefined, rhs[i])));
    i--;
  }
  while (j > i) {
    changes.push(arrayRecord(path, j, record('D', [], lhs[j], undefined)));
    j--;
  }
  for (; i >= 0; --i) {
    path.push(i);
    walk(lhs[i], rhs[i], i in lhs, i in rhs, path, changes, stack);
    path.pop();
  }
}

function walkObject(lhs: Record<string, unknown>, rhs: Record<string, unknown>, path: Key[], changes: Change[], stack: unknown[]): void {
  const lkeys = Object.keys(lhs);
  const rkeys = Object.keys(rhs);
  const rset = new Set(rkeys);
  const lset = new Set(lkeys);
  for (const k of lkeys) {
    path.push(k);
    if (rset.has(k)) walk(lhs[k], rhs[k], true, true, path, changes, stack);
    // deep-diff checks the other side's own properties, enumerable or not.
    else walk(lhs[k], undefined, true, Object.prototype.hasOwnProperty.call(rhs, k), path, changes, stack);
    path.pop();
  }
  for (const k of rkeys) {
    if (lset.has(k)) continue;
    path.push(k);
    walk(undefined, rhs[k], Object.prototype.hasOwnProperty.call(lhs, k), true, path, changes, stack);
    path.pop();
  }
}
