/**
 * The solution check: a task's reference solution is replayed in the host on a fresh world,
 * through the same tool-call path an agent's calls take (lookup, validation, run, clone), and
 * graded by the same functions a rollout uses, with the solution's output as the answer.
 */
import { performance } from 'node:perf_hooks';
import { describeError } from '../errors.js';
import { DEFAULT_LIMITS } from '../options.js';
import { diffWorld } from '../rollout/diff.js';
import { grade } from '../rollout/grade.js';
import { captureOutput } from '../rollout/output.js';
import { bindTools } from '../rollout/tools.js';
import { round, Trace } from '../rollout/trace.js';
import { TIMED_OUT, within } from '../time.js';
import type { Check, Task } from '../types.js';
import { createWorld } from './environment.js';
import type { Finding, FindingCode } from './types.js';

/** How long one solution call may run. */
export const SOLUTION_CALL_TIMEOUT_MS = 30_000;

/** Named in the trace the verifier sees, where a rollout names its agent. */
const SOLUTION_AGENT = 'silo:solution';

/**
 * The findings of replaying a task's solution; none when it passes (or the task has none).
 * `reliableState`: createState is known to give equal, unshared worlds for a seed, so the initial
 * snapshot can be a second world instead of a deep copy (cheaper for worlds parsed from data).
 */
export async function checkSolution(task: Task, seed: number, reliableState = false): Promise<Finding[]> {
  const findings: Finding[] = [];
  const add = (code: FindingCode, message: string): void => {
    findings.push({ check: 'solution_passes', code, message, taskId: task.id });
  };
  const solution = task.solution;
  if (solution === undefined) return findings;
  if (typeof solution !== 'object' || solution === null || !Array.isArray(solution.calls)) {
    add('solution_error', 'has a solution without a calls array: a solution is { calls: [{ name, input }], output? }');
    return findings;
  }

  let world: Awaited<ReturnType<typeof createWorld>>;
  let initial: unknown;
  try {
    world = await createWorld(task.environment, seed);
    initial = reliableState ? (await createWorld(task.environment, seed)).state : structuredClone(world.state);
  } catch (err) {
    add('solution_error', `the solution could not be replayed: ${describeError(err)}`);
    return findings;
  }
  const toolbox = bindTools(task.environment, world.state, world.ctx);
  const trace = new Trace(null);
  trace.add({ type: 'run_started', taskId: task.id, agent: SOLUTION_AGENT, seed });

  for (const [i, call] of solution.calls.entries()) {
    const name = typeof call?.name === 'string' ? call.name : String(call?.name);
    const where = `solution.calls[${i}] (${name})`;
    // An agent's input reaches the host as JSON text; the replay's does too, so no tool can keep
    // a reference to the task's own solution object.
    let input: unknown;
    try {
      const text = JSON.stringify(call?.input === undefined ? {} : call.input);
      if (text === undefined) throw new Error(`a ${typeof call.input} has no JSON form`);
      input = JSON.parse(text);
    } catch (err) {
      add('solution_call_failed', `${where} has an input that cannot be sent as JSON: ${describeError(err)}`);
      return findings;
    }
    const callId = i + 1;
    trace.add({ type: 'tool_call', callId, name, input });
    const started = performance.now();
    const result = await within(Promise.resolve(toolbox.call(name, input)), SOLUTION_CALL_TIMEOUT_MS);
    if (result === TIMED_OUT) {
      add('solution_error', `${where} did not finish within ${SOLUTION_CALL_TIMEOUT_MS} ms`);
      return findings;
    }
    trace.add({ type: 'tool_result', callId, durationMs: round(performance.now() - started), ...result });
    if (result.ok) continue;
    if (result.error.code === 'tool_error') {
      // A solution may try a call and fall back, as tau-bench's gold actions sometimes do.
      add('solution_call_threw', `${where} failed: ${result.error.message}; the replay went on`);
      continue;
    }
    add('solution_call_failed', `${where} failed (${result.error.code}): ${result.error.message}`);
    return findings;
  }

  const { output } = captureOutput(solution.output, DEFAULT_LIMITS.maxOutputBytes);
  trace.add({ type: 'agent_returned', output });
  // grade() reads the diff only for mayChange; a whole-world diff is not free on a large world.
  const changes = task.mayChange === undefined ? [] : diffWorld(initial, world.state);
  const graded = await grade(task, { initial, final: world.state, output, trace: trace.events, conversation: [] }, changes);
  if (graded.status === 'error') {
    add('solution_error', `the solution could not be graded: ${graded.error.message}`);
  } else if (graded.status === 'failed') {
    const failed = graded.checks.filter((c) => !c.pass);
    add(
      'solution_fails',
      `the solution fails ${failed.length} of ${graded.checks.length} checks: ${failed.slice(0, 3).map(describeCheck).join('; ')}${failed.length > 3 ? `; and ${failed.length - 3} more` : ''}`,
    );
  }
  return findings;
}

function describeCheck(c: Check): string {
  const detail =
    c.message ?? ('expected' in c || 'actual' in c ? `expected ${JSON.stringify(c.expected)}, actual ${JSON.stringify(c.actual)}` : '');
  const short = detail.length > 200 ? `${detail.slice(0, 197)}...` : detail;
  return short === '' ? c.name : `${c.name} (${short})`;
}
