/**
 * Step 8: grade. The verifier gets the final world, the initial snapshot, the output and the
 * trace; `mayChange` adds a check of its own, and so does an output that could not be recorded. A
 * verifier that throws, hangs or returns something that is not a list of checks makes the run an
 * `error` (`verifier_error`), not a failure.
 */
import { CHECK_VALUE_MAX_CHARS, VERIFIER_TIMEOUT_MS } from '../options.js';
import type { Check, Task, TraceEvent, VerifyArgs } from '../types.js';
import type { Change } from './diff.js';
import { mayChangeCheck } from './may-change.js';
import { UNRECORDED_OUTPUT } from './output.js';
import { toJsonLine } from './trace.js';
import { describeError } from '../errors.js';
import { TIMED_OUT, within } from '../time.js';
import { ungroundedAnswer } from '../inspect/diagnose.js';
import { PACKAGE_ROOT } from '../paths.js';
import { isAbsolute, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Grade =
  | { status: 'passed' | 'failed'; score: number; checks: Check[] }
  | { status: 'error'; score: null; checks: Check[]; error: { code: 'verifier_error'; message: string; stack?: string } };

/**
 * Grades a run. `mayChange` and, when `strict` (default: the task's `strict`), `grounded` are
 * gates: a violation is a failed check; respected, they are listed but not scored. An output the
 * agent returned that could not be recorded is a failed gate too (`output recorded`): the run
 * must not pass on an answer nobody can read back.
 */
export async function grade(
  task: Task,
  args: VerifyArgs,
  changes: readonly Change[],
  timeoutMs = VERIFIER_TIMEOUT_MS,
  strict = task.strict === true,
): Promise<Grade> {
  let returned: unknown;
  try {
    returned = await within(Promise.resolve().then(() => task.verify(args)), timeoutMs);
  } catch (err) {
    const where = thrownAt(err);
    return verifierError(`the verifier of ${task.id} threw: ${describeError(err)}${where?.at ? ` (at ${where.at})` : ''}`, where?.stack);
  }
  if (returned === TIMED_OUT) return verifierError(`the verifier of ${task.id} did not finish within ${timeoutMs} ms`);
  const problem = checkShape(returned);
  if (problem) return verifierError(`the verifier of ${task.id} ${problem}`);
  const checks = (returned as Check[]).map(compactCheck);
  const unrecorded = unrecordedOutput(args.trace);
  // (the check says why; the run's error says it whole)
  if (unrecorded !== undefined) checks.push({ name: 'output recorded', pass: false, gate: true, message: unrecorded.replace(`${UNRECORDED_OUTPUT}: `, '') });
  if (task.mayChange) checks.push(compactCheck({ ...mayChangeCheck(changes, task.mayChange), gate: true }));
  if (strict) checks.push(groundedCheck(args, changes));
  return { status: checks.every((c) => c.pass) ? 'passed' : 'failed', score: score(checks), checks };
}

/**
 * Passed checks ÷ scored checks. A gate is scored only when it fails: a do-nothing agent earns
 * nothing for leaving the world alone.
 */
export function score(checks: readonly Check[]): number {
  const scored = checks.filter((c) => c.gate !== true || !c.pass);
  return scored.length === 0 ? 1 : scored.filter((c) => c.pass).length / scored.length;
}

/** Why the output the agent returned could not be recorded (its `agent_returned` event says), if it could not. */
export function unrecordedOutput(trace: readonly TraceEvent[]): string | undefined {
  for (let i = trace.length - 1; i >= 0; i--) {
    const e = trace[i]!;
    if (e.type === 'agent_returned') return e.outputError;
  }
  return undefined;
}

/** `strict`: the answer must have something behind it: a successful tool call, a change it claims (see ungroundedAnswer). */
function groundedCheck(args: VerifyArgs, changes: readonly Change[]): Check {
  const finding = ungroundedAnswer(args.trace, changes, args.output);
  return finding ? { name: 'grounded', pass: false, gate: true, message: finding.message } : { name: 'grounded', pass: true, gate: true };
}

function verifierError(message: string, stack?: string): Grade {
  return { status: 'error', score: null, checks: [], error: { code: 'verifier_error', message, ...(stack ? { stack } : {}) } };
}

/**
 * Where a verifier threw: the stack, and the first frame in the user's code as `file:line:column`
 * (task files are loaded with source maps on, so a TypeScript file's frame names its own line).
 */
function thrownAt(err: unknown): { stack: string; at?: string } | undefined {
  let stack: string | undefined;
  try {
    stack = err instanceof Error && typeof err.stack === 'string' ? err.stack : undefined;
  } catch {
    return undefined;
  }
  if (stack === undefined) return undefined;
  const lines = stack.split('\n').slice(0, STACK_LINES);
  for (const line of lines) {
    const m = FRAME.exec(line);
    if (!m) continue;
    let file = m[1]!;
    if (file.startsWith('file://')) {
      try {
        file = fileURLToPath(file.replace(/\?[^/]*$/, ''));
      } catch {
        continue;
      }
    }
    if (!isAbsolute(file) || OWN.some((dir) => file.startsWith(dir)) || file.includes(`${sep}node_modules${sep}`)) continue;
    return { stack: lines.join('\n'), at: `${file}:${m[2]}:${m[3]}` };
  }
  return { stack: lines.join('\n') };
}

/** Lines of a verifier's stack kept in result.json. */
const STACK_LINES = 30;
/** `at fn (file:line:col)` or `at file:line:col`, bounded so a hostile message stays linear. */
const FRAME = /^\s{0,16}at (?:.{0,500}? \()?((?:file:\/\/|\/|[A-Za-z]:\\).{1,2000}?):(\d{1,9}):(\d{1,9})\)?$/;
/** Silo's own code: frames there are not where the user's verifier threw. */
const OWN = [join(PACKAGE_ROOT, 'src') + sep, join(PACKAGE_ROOT, 'dist') + sep];
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
  if (c.gate === true) out.gate = true;
  return out;
}

function compactValue(value: unknown): unknown {
  if (value === undefined) return null;
  const text = toJsonLine(value) ?? 'null';
  if (text.length <= CHECK_VALUE_MAX_CHARS) return JSON.parse(text) as unknown;
  return `${text.slice(0, CHECK_VALUE_MAX_CHARS)}… (truncated, ${text.length} chars)`;
}
