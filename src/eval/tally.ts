/**
 * Running totals of an eval, one small record per task: counts, scores and durations only, so
 * memory stays flat however many runs stream past. Traces never come here.
 */
import type { EvalRunLine, EvalSummary, TaskStats, UsageTotals } from '../types.js';
import { estimators, percentile, wilson95 } from './stats.js';

interface TaskTally {
  passed: number;
  failed: number;
  errors: number;
  suspicious: number;
  scoreSum: number;
  durations: number[];
  /** Model usage of the task's runs, retried ones included (they were paid for). */
  usage?: UsageTotals;
  /** The LLM user's, likewise. */
  userUsage?: UsageTotals;
}

function addUsage(total: UsageTotals | undefined, usage: UsageTotals): UsageTotals {
  const t = total ?? { inputTokens: 0, outputTokens: 0, requests: 0 };
  t.inputTokens += usage.inputTokens;
  t.outputTokens += usage.outputTokens;
  t.requests += usage.requests;
  return t;
}

export class Tally {
  readonly #tasks = new Map<string, TaskTally>();
  #retries = 0;
  #durationSum = 0;

  /** `taskIds` fixes the order of the summary's tasks. */
  constructor(taskIds: readonly string[]) {
    for (const id of taskIds) this.#tasks.set(id, { passed: 0, failed: 0, errors: 0, suspicious: 0, scoreSum: 0, durations: [] });
  }

  /** Counts a run that ended. Retried and cancelled runs are not trials; retries are counted apart. */
  add(line: EvalRunLine): void {
    const task = this.#tasks.get(line.taskId);
    // Tokens are spent whatever became of the run.
    if (task && line.usage) task.usage = addUsage(task.usage, line.usage);
    if (task && line.userUsage) task.userUsage = addUsage(task.userUsage, line.userUsage);
    if (line.retried) {
      this.#retries++;
      return;
    }
    if (line.termination === 'cancelled') return;
    const t = this.#tasks.get(line.taskId);
    if (!t) return;
    if (line.status === 'passed') t.passed++;
    else if (line.status === 'failed') t.failed++;
    else t.errors++;
    if (line.status === 'passed' && line.suspicious !== undefined) t.suspicious++;
    if (line.status !== 'error') t.scoreSum += line.score ?? 0;
    t.durations.push(line.durationMs);
    this.#durationSum += line.durationMs;
  }

  /** The mean duration of the runs counted so far, ms; null before the first. */
  meanDurationMs(): number | null {
    const { done } = this.counts();
    return done === 0 ? null : this.#durationSum / done;
  }

  get retries(): number {
    return this.#retries;
  }

  /** Finished runs so far, by status. */
  counts(): { done: number; passed: number; failed: number; errors: number } {
    let passed = 0;
    let failed = 0;
    let errors = 0;
    for (const t of this.#tasks.values()) {
      passed += t.passed;
      failed += t.failed;
      errors += t.errors;
    }
    return { done: passed + failed + errors, passed, failed, errors };
  }

  /** The statistics part of summary.json. */
  stats(trials: number): Pick<EvalSummary, 'tasks' | 'totals'> {
    const tasks: TaskStats[] = [];
    let usage: UsageTotals | undefined;
    let userUsage: UsageTotals | undefined;
    let passed = 0;
    let failed = 0;
    let errors = 0;
    let suspicious = 0;
    for (const [taskId, t] of this.#tasks) {
      const n = t.passed + t.failed;
      passed += t.passed;
      failed += t.failed;
      errors += t.errors;
      suspicious += t.suspicious;
      tasks.push({
        taskId,
        trials: n + t.errors,
        passed: t.passed,
        failed: t.failed,
        errors: t.errors,
        passRate: n === 0 ? null : t.passed / n,
        ...estimators(trials, n, t.passed),
        meanScore: n === 0 ? null : t.scoreSum / n,
        p50Ms: percentile(t.durations, 50),
        p95Ms: percentile(t.durations, 95),
        flaky: t.passed > 0 && t.failed > 0,
        suspicious: t.suspicious,
        ...(t.usage ? { usage: { ...t.usage } } : {}),
        ...(t.userUsage ? { userUsage: { ...t.userUsage } } : {}),
      });
      if (t.usage) usage = addUsage(usage, t.usage);
      if (t.userUsage) userUsage = addUsage(userUsage, t.userUsage);
    }
    const n = passed + failed;
    return {
      tasks,
      totals: {
        runs: passed + failed + errors,
        passed,
        failed,
        errors,
        retries: this.#retries,
        suspicious,
        passRate: n === 0 ? null : passed / n,
        passRateCi95: wilson95(passed, n),
        ...(usage ? { usage } : {}),
        ...(userUsage ? { userUsage } : {}),
      },
    };
  }
}
