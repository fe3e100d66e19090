/** What two evals of the same runs must share: a summary without timings and ids. */
import type { EvalSummary } from '../../src/types.js';

/** `retries: false` leaves out the count of infrastructure retries (say, when a worker was killed on purpose). */
export function statistics(summary: EvalSummary, options: { retries?: boolean } = {}): unknown {
  const { retries, ...totals } = summary.totals;
  return {
    status: summary.status,
    trials: summary.trials,
    tasks: summary.tasks.map(({ p50Ms: _p50, p95Ms: _p95, ...t }) => t),
    totals: options.retries === false ? totals : { ...totals, retries },
  };
}
