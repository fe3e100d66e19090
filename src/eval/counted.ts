/**
 * Which of an eval's runs count, as its summary counts them: a run lost to infrastructure or to
 * the agent's model provider is an error trial until a resume runs its pair again; then it is a
 * retry. Shared by the eval, `--resume`, merge, regrade, the report and what `silo eval` prints
 * after it (none of which should load the eval's runner to know it).
 */
import type { EvalRunLine, RunResult } from '../types.js';

/**
 * A run `--resume` runs again (its line then counts as a retry): one lost to infrastructure after
 * its retries, or one whose agent's model provider failed it (model_error: a key fixed since, say).
 */
export function rerunOnResume(line: Pick<RunResult, 'termination' | 'error'>): boolean {
  return isInfrastructureFailure(line) || line.error?.code === 'model_error';
}

/**
 * A worker that crashed on its own, or a fault of Silo's: not the agent's doing, so worth another
 * try. A worker the agent ended itself (`agent_exit`: process.exit, an uncaught exception) is the
 * agent's result.
 */
export function isInfrastructureFailure(result: Pick<RunResult, 'termination' | 'error'>): boolean {
  return (result.termination === 'crashed' && result.error?.code !== 'agent_exit') || result.error?.code === 'internal_error';
}

/**
 * An eval's lines as its summary counted them. A run lost to infrastructure (after its retries),
 * or to the agent's model provider, is an error trial, unless a resume ran its pair again later:
 * then it was a retry (the rule `--resume` applies, see rerunOnResume).
 */
export function asCounted(lines: readonly EvalRunLine[]): EvalRunLine[] {
  const last = new Map<string, number>();
  lines.forEach((line, i) => last.set(`${line.trial}\u0000${line.taskId}`, i));
  return lines.map((line, i) => {
    const rerun = last.get(`${line.trial}\u0000${line.taskId}`)! > i;
    return !line.retried && rerun && rerunOnResume(line) ? { ...line, retried: true } : line;
  });
}
