/** Step 7: the change records (deep-diff format) that turn the initial world into the final one. */
import deepDiff from 'deep-diff';

/** A deep-diff change record. */
export type Change = deepDiff.Diff<unknown, unknown>;

/** The changes from `initial` to `final`; empty when nothing changed. */
export function diffWorld(initial: unknown, final: unknown): Change[] {
  return deepDiff.diff(initial, final) ?? [];
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
