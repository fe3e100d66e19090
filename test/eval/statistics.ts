/** What two evals of the same runs must share: a summary without timings and ids. */
import type { EvalSummary } from '../../src/types.js';

export function statistics(summary: EvalSummary): unknown {
  return {
    status: summary.status,
    trials: summary.trials,
    tasks: summary.tasks.map(({ p50Ms: _p50, p95Ms: _p95, ...t }) => t),
    totals: summary.totals,
  };
}
