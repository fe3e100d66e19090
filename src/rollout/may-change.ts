/**
 * `mayChange`: the paths a task lets the agent change. Dot-separated segments, `*` matches
 * exactly one segment (array indices are segments), and a pattern also allows everything below it.
 */
import type { Check } from '../types.js';
import { changePath, type Change } from './diff.js';

/** True when `path` is covered by one of `patterns`. */
export function isAllowed(path: readonly (string | number)[], patterns: readonly string[]): boolean {
  return patterns.some((pattern) => {
    const segs = pattern.split('.');
    if (segs.length > path.length) return false;
    return segs.every((seg, i) => seg === '*' || seg === String(path[i]));
  });
}

/** A check that fails naming each changed path no pattern allows. */
export function mayChangeCheck(changes: readonly Change[], patterns: readonly string[]): Check {
  const unexpected = [...new Set(changes.map(changePath).filter((p) => !isAllowed(p, patterns)).map((p) => p.join('.')))];
  if (unexpected.length === 0) return { name: 'mayChange', pass: true, expected: [...patterns] };
  return {
    name: 'mayChange',
    pass: false,
    expected: [...patterns],
    actual: unexpected,
    message: `changes outside mayChange: ${unexpected.slice(0, 20).join(', ')}${unexpected.length > 20 ? ` and ${unexpected.length - 20} more` : ''}`,
  };
}
