/**
 * `compareEvals`: did a change help? Two evals of the same tasks, task by task: the runs and passes
 * of each, the difference of pass rates, Fisher's exact two-sided p-value on the 2×2 table, and a
 * verdict after Holm's correction across tasks (so 600 tasks do not hand out a "regression" by
 * chance); overall, the difference of mean per-task pass rates with a seeded bootstrap interval
 * over tasks. Only the two summaries are read: graded runs (passed + failed) are the n. Finding
 * stored evals is compare-evals.ts's.
 */
import { SiloError } from '../errors.js';
import type { BaselineRecord, EvalSummary, TaskStats } from '../types.js';
import { bootstrapMeanCi95, fisherExact, holm, mean } from './significance.js';
import { passHatK, reportedKs } from './stats.js';
import { EvalStore } from './store.js';
import { DEFAULT_RESAMPLES } from '../options.js';
import { DEFAULT_COMPARE_SEED } from '../options.js';

/** A task is called regressed or improved when its Holm-corrected p-value is under this. */
export const COMPARE_ALPHA = 0.05;
export { DEFAULT_RESAMPLES };
export { DEFAULT_COMPARE_SEED };

/** What a task gets. */
export type Verdict = 'regressed' | 'improved' | 'same';

/** One side of one task. */
export interface CompareSide {
  /** Graded runs (passed + failed; runs with no grade are not counted). */
  n: number;
  passed: number;
  /** passed / n; null when no run was graded. */
  passRate: number | null;
  /** pass^k for the ks both evals report, from these counts. */
  passHatK: Record<string, number | null>;
}

/** One task in both evals. */
export interface TaskComparison {
  taskId: string;
  a: CompareSide;
  b: CompareSide;
  /** b's pass rate minus a's; null when either has no graded run. */
  delta: number | null;
  /** Fisher's exact test, two-sided; null when either side has no graded run. */
  pValue: number | null;
  /** The p-value after Holm's correction across the tasks that have one. */
  pHolm: number | null;
  verdict: Verdict;
}

/** One eval, as the comparison sees it. */
export interface CompareEvalInfo {
  evalId: string;
  agent: string;
  trials: number;
  status: EvalSummary['status'];
  /** Tasks in this eval. */
  tasks: number;
  /** The mean per-task pass rate over the tasks both evals graded. */
  meanPassRate: number | null;
  /** The mean per-task pass^k over the tasks both evals graded, for the shared ks. */
  passHatK: Record<string, number | null>;
}

/** What `compareEvals` returns (and `silo compare --json` prints). */
export interface Comparison {
  version: 1;
  /** The eval compared against (the baseline). */
  a: CompareEvalInfo;
  /** The eval being judged. */
  b: CompareEvalInfo;
  /** Tasks in both evals, most significant first. */
  tasks: TaskComparison[];
  /** Task ids only `a` has. */
  onlyA: string[];
  /** Task ids only `b` has. */
  onlyB: string[];
  overall: {
    /** Tasks in both evals with graded runs on each side: what the means and the interval are over. */
    tasks: number;
    /** Mean per-task pass rate of b minus that of a; null when no task was graded in both. */
    delta: number | null;
    /** 95% percentile bootstrap interval of `delta`, resampling tasks. */
    ci95: [number, number] | null;
    /** Ids of the tasks judged regressed, and improved. */
    regressed: string[];
    improved: string[];
    alpha: number;
    resamples: number;
    seed: number;
  };
}

/** Options of the statistics. */
export interface CompareStatsOptions {
  /** Seed of the bootstrap. Default 1. */
  seed?: number;
  /** Bootstrap resamples. Default 10,000. */
  resamples?: number;
}

/** Compares two summaries: `a` is the baseline, `b` the eval judged against it. */
export function compareSummaries(a: EvalSummary, b: EvalSummary, options: CompareStatsOptions = {}): Comparison {
  const seed = options.seed ?? DEFAULT_COMPARE_SEED;
  const resamples = options.resamples ?? DEFAULT_RESAMPLES;
  if (!Number.isInteger(seed)) throw new SiloError('SILO_USAGE', `the bootstrap seed must be an integer (got ${seed})`);
  if (!Number.isInteger(resamples) || resamples < 1) throw new SiloError('SILO_USAGE', `resamples must be an integer >= 1 (got ${resamples})`);
  const ks = reportedKs(Math.min(a.trials, b.trials));
  const inB = new Map(b.tasks.map((t) => [t.taskId, t]));
  const inA = new Set(a.tasks.map((t) => t.taskId));

  const tasks: TaskComparison[] = [];
  for (const ta of a.tasks) {
    const tb = inB.get(ta.taskId);
    if (!tb) continue;
    const sa = side(ta, ks);
    const sb = side(tb, ks);
    const graded = sa.n > 0 && sb.n > 0;
    tasks.push({
      taskId: ta.taskId,
      a: sa,
      b: sb,
      delta: graded ? sb.passRate! - sa.passRate! : null,
      pValue: graded ? fisherExact(sa.passed, sa.n - sa.passed, sb.passed, sb.n - sb.passed) : null,
      pHolm: null,
      verdict: 'same',
    });
  }
  const tested = tasks.filter((t) => t.pValue !== null);
  holm(tested.map((t) => t.pValue!)).forEach((p, i) => {
    const t = tested[i]!;
    t.pHolm = p;
    if (p < COMPARE_ALPHA && t.delta !== 0) t.verdict = t.delta! < 0 ? 'regressed' : 'improved';
  });
  // The overall difference is over the tasks with a rate on both sides, paired by task.
  const deltas = tested.map((t) => t.delta!);
  const info = (s: EvalSummary, pick: (t: TaskComparison) => CompareSide): CompareEvalInfo => ({
    evalId: s.evalId,
    agent: s.agent,
    trials: s.trials,
    status: s.status,
    tasks: s.tasks.length,
    meanPassRate: mean(tested.map((t) => pick(t).passRate!)),
    passHatK: Object.fromEntries(ks.map((k) => [k, mean(tested.map((t) => pick(t).passHatK[k]).filter((v): v is number => v !== null && v !== undefined))])),
  });
  return {
    version: 1,
    a: info(a, (t) => t.a),
    b: info(b, (t) => t.b),
    tasks: tasks.sort(bySignificance),
    onlyA: a.tasks.filter((t) => !inB.has(t.taskId)).map((t) => t.taskId),
    onlyB: b.tasks.filter((t) => !inA.has(t.taskId)).map((t) => t.taskId),
    overall: {
      tasks: tested.length,
      delta: mean(deltas),
      ci95: bootstrapMeanCi95(deltas, seed, resamples),
      regressed: tasks.filter((t) => t.verdict === 'regressed').map((t) => t.taskId),
      improved: tasks.filter((t) => t.verdict === 'improved').map((t) => t.taskId),
      alpha: COMPARE_ALPHA,
      resamples,
      seed,
    },
  };
}

/** What summary.json keeps of a comparison with its baseline. */
export function baselineRecord(comparison: Comparison): BaselineRecord {
  const o = comparison.overall;
  return { evalId: comparison.a.evalId, regressed: o.regressed, improved: o.improved, delta: o.delta, ci95: o.ci95 };
}

/** The summary with its comparison against `baseline`. */
export function withBaseline(summary: EvalSummary, baseline: EvalSummary): EvalSummary {
  return { ...summary, baseline: baselineRecord(compareSummaries(baseline, summary)) };
}

function side(t: TaskStats, ks: readonly number[]): CompareSide {
  const n = t.passed + t.failed;
  return {
    n,
    passed: t.passed,
    passRate: n === 0 ? null : t.passed / n,
    passHatK: Object.fromEntries(ks.map((k) => [k, passHatK(n, t.passed, k)])),
  };
}

/** Smallest corrected p-value first, then the largest change, then by id; tasks without a test last. */
function bySignificance(x: TaskComparison, y: TaskComparison): number {
  const px = x.pHolm ?? Number.POSITIVE_INFINITY;
  const py = y.pHolm ?? Number.POSITIVE_INFINITY;
  if (px !== py) return px - py;
  const rx = x.pValue ?? Number.POSITIVE_INFINITY;
  const ry = y.pValue ?? Number.POSITIVE_INFINITY;
  if (rx !== ry) return rx - ry;
  const dx = Math.abs(x.delta ?? 0);
  const dy = Math.abs(y.delta ?? 0);
  if (dx !== dy) return dy - dx;
  return x.taskId < y.taskId ? -1 : x.taskId > y.taskId ? 1 : 0;
}

/** An eval's change against its baseline, task by task, as the HTML report shows it. */
export interface ReportBaseline extends BaselineRecord {
  /** False when the baseline eval is no longer there: only the stored verdicts are known. */
  found: boolean;
  /** Aligned with the summary's tasks: the baseline's rate, the change and its verdict; null for a task the baseline lacks. */
  tasks: ({ was: number | null; delta: number | null; pHolm: number | null; verdict: Verdict } | null)[];
}

/**
 * The comparison of an eval with its baseline (summary.json `baseline`) for the report: computed
 * again from the baseline's summary when it is still in `outDir`, else the stored verdicts.
 */
export function reportBaseline(summary: EvalSummary, outDir: string): ReportBaseline | undefined {
  const stored = summary.baseline;
  if (!stored) return undefined;
  const store = new EvalStore(outDir, stored.evalId);
  let baseline: EvalSummary | undefined;
  try {
    baseline = store.readSummary();
  } catch {
    baseline = undefined;
  }
  if (!baseline) {
    const verdict = (id: string): Verdict => (stored.regressed.includes(id) ? 'regressed' : stored.improved.includes(id) ? 'improved' : 'same');
    return { ...stored, found: false, tasks: summary.tasks.map((t) => ({ was: null, delta: null, pHolm: null, verdict: verdict(t.taskId) })) };
  }
  const c = compareSummaries(baseline, summary);
  const byId = new Map(c.tasks.map((t) => [t.taskId, t]));
  return {
    ...baselineRecord(c),
    found: true,
    tasks: summary.tasks.map((t) => {
      const x = byId.get(t.taskId);
      return x ? { was: x.a.passRate, delta: x.delta, pHolm: x.pHolm, verdict: x.verdict } : null;
    }),
  };
}
