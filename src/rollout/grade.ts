/**
 * Step 8: grade. The verifier gets the final world, the initial snapshot, the output and the
 * trace; `mayChange` adds a check of its own. A verifier that throws, hangs or returns something
 * that is not a list of checks makes the run an `error` (`verifier_error`), not a failure.
 */
import { CHECK_VALUE_MAX_CHARS, VERIFIER_TIMEOUT_MS } from '../options.js';
import type { Check, Task, VerifyArgs } from '../types.js';
import type { Change } from './diff.js';
import { mayChangeCheck } from './may-change.js';
import { toJsonLine } from './trace.js';
import { describeError } from '../errors.js';
import { TIMED_OUT, within } from '../time.js';

export type Grade =
  | { status: 'passed' | 'failed'; score: number; checks: Check[] }
  | { status: 'error'; score: null; checks: Check[]; error: { code: 'verifier_error'; message: string } };

export async function grade(task: Task, args: VerifyArgs, changes: readonly Change[], timeoutMs = VERIFIER_TIMEOUT_MS): Promise<Grade> {
  let returned: unknown;
  try {
    returned = await within(Promise.resolve().then(() => task.verify(args)), timeoutMs);
  } catch (err) {
    return verifierError(`the verifier of ${task.id} threw: ${describeError(err)}`);
  }
  if (returned === TIMED_OUT) return verifierError(`the verifier of ${task.id} did not finish within ${timeoutMs} ms`);
  const problem = checkShape(returned);
  if (problem) return verifierError(`the verifier of ${task.id} ${problem}`);
  const checks = (returned as Check[]).map(compactCheck);
  if (task.mayChange) checks.push(compactCheck(mayChangeCheck(changes, task.mayChange)));
  const passed = checks.filter((c) => c.pass).length;
  return { status: passed === checks.length ? 'passed' : 'failed', score: passed / checks.length, checks };
}

function verifierError(message: string): Grade {
  return { status: 'error', score: null, checks: [], error: { code: 'verifier_error', message } };
}

function checkShape(value: unknown): string | null {
  if (!Array.isArray(value)) return `must return an array of checks (got ${value === null ? 'null' : typeof value})`;
  if (value.length === 0) return 'returned no checks; return at least one, e.g. check.ok(name, condition)';
  for (const [i, c] of value.entries()) {
    const ok = typeof c === 'object' && c !== null && typeof (c as Check).name === 'string' && typeof (c as Check).pass === 'boolean';
    if (!ok) return `returned a malformed check at index ${i}: a check is { name: string, pass: boolean, expected?, actual?, message? }`;
  }
  return null;
}

/** Keeps result.json small: large expected/actual values become a truncated JSON preview. */
export function compactCheck(c: Check): Check {
  const out: Check = { name: c.name, pass: c.pass };
  if ('expected' in c) out.expected = compactValue(c.expected);
  if ('actual' in c) out.actual = compactValue(c.actual);
  if (c.message !== undefined) out.message = String(c.message);
  return out;
}

function compactValue(value: unknown): unknown {
  if (value === undefined) return null;
  const text = toJsonLine(value) ?? 'null';
  if (text.length <= CHECK_VALUE_MAX_CHARS) return JSON.parse(text) as unknown;
  return `${text.slice(0, CHECK_VALUE_MAX_CHARS)}… (truncated, ${text.length} chars)`;
}
