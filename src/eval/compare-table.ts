/** A comparison of two evals as text: the tasks that moved, most significant first, and the overall line. */
import type { Style } from '../inspect/style.js';
import type { BaselineRecord } from '../types.js';
import type { Comparison, TaskComparison } from './compare.js';

/** Options of the table. */
export interface CompareTableOptions {
  /** List every task, also those whose pass rate is the same in both. */
  all?: boolean;
}

/** The comparison as a table for people (`silo compare`). */
export function compareTable(c: Comparison, s: Style, options: CompareTableOptions = {}): string {
  const shown = options.all ? c.tasks : c.tasks.filter((t) => t.verdict !== 'same' || (t.delta ?? 0) !== 0);
  const header = ['task', 'A', 'B', 'Δ', 'p', 'p (Holm)', 'verdict'];
  const rows = shown.map((t) => [t.taskId, side(t.a), side(t.b), points(t.delta), pValue(t.pValue), pValue(t.pHolm), t.verdict]);
  const out: string[] = [];
  if (rows.length > 0) {
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => cells.map((cell, i) => (i === 0 || i === 6 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd();
    out.push(s.bold(line(header)));
    for (const [i, row] of rows.entries()) out.push(paint(shown[i]!, s)(line(row)));
  }
  const same = c.tasks.length - shown.length;
  if (same > 0) out.push(s.dim(`${rows.length > 0 ? '' : 'every task: '}${same} task${same === 1 ? '' : 's'} with the same pass rate in both not shown (--all lists them)`));
  if (c.onlyA.length > 0) out.push(s.yellow(`only in A (${c.onlyA.length}): ${list(c.onlyA)}`));
  if (c.onlyB.length > 0) out.push(s.yellow(`only in B (${c.onlyB.length}): ${list(c.onlyB)}`));
  out.push('', ...overallLines(c, s));
  return out.join('\n');
}

/** The overall lines: the two evals, the difference with its interval, the verdict counts, pass^k. */
export function overallLines(c: Comparison, s: Style): string[] {
  const o = c.overall;
  const ci = o.ci95 ? ` (95% CI ${points(o.ci95[0])} to ${points(o.ci95[1])}, bootstrap over ${o.tasks} tasks)` : '';
  const verdicts = [
    o.regressed.length > 0 ? s.red(`${o.regressed.length} regressed`) : '0 regressed',
    o.improved.length > 0 ? s.green(`${o.improved.length} improved`) : '0 improved',
    `${o.tasks - o.regressed.length - o.improved.length} same`,
  ].join(' · ');
  const ks = Object.keys(c.a.passHatK);
  const hats = ks.map((k) => `pass^${k} ${num(c.a.passHatK[k])} → ${num(c.b.passHatK[k])}`).join(' · ');
  return [
    `A ${c.a.evalId} (${c.a.agent}, ${c.a.trials} trial${c.a.trials === 1 ? '' : 's'})`,
    `B ${c.b.evalId} (${c.b.agent}, ${c.b.trials} trial${c.b.trials === 1 ? '' : 's'})`,
    `mean pass rate per task ${pct(c.a.meanPassRate)} → ${pct(c.b.meanPassRate)}: ${s.bold(points(o.delta))}${ci}`,
    `${verdicts} (Fisher's exact test per task, Holm-corrected p < ${o.alpha})${hats ? ` · ${hats}` : ''}`,
  ];
}

function paint(t: TaskComparison, s: Style): (text: string) => string {
  return t.verdict === 'regressed' ? s.red : t.verdict === 'improved' ? s.green : (text) => text;
}

function side(x: TaskComparison['a']): string {
  return `${x.passed}/${x.n} ${pct(x.passRate)}`;
}

/** A difference of rates in percentage points, signed. */
export function points(x: number | null): string {
  if (x === null) return '–';
  const v = Math.round(1000 * x) / 10;
  return `${v > 0 ? '+' : v < 0 ? '−' : '±'}${Math.abs(v).toFixed(1)} pts`;
}

export function pValue(p: number | null): string {
  if (p === null) return '–';
  if (p < 0.0001) return '<0.0001';
  return p.toFixed(4);
}

function pct(x: number | null): string {
  return x === null ? '–' : `${(100 * x).toFixed(1)}%`;
}

function num(x: number | null | undefined): string {
  return x === null || x === undefined ? '–' : x.toFixed(2);
}

function list(ids: readonly string[]): string {
  return ids.length > 10 ? `${ids.slice(0, 10).join(', ')} and ${ids.length - 10} more` : ids.join(', ');
}

/** The comparison an eval stored against its baseline (`silo eval --baseline`), under its table. */
export function baselineLines(evalId: string, b: BaselineRecord, s: Style): string[] {
  const ci = b.ci95 ? ` (95% CI ${points(b.ci95[0])} to ${points(b.ci95[1])})` : '';
  const out = [`against baseline ${b.evalId}: mean pass rate per task ${s.bold(points(b.delta))}${ci}`];
  out.push(b.regressed.length > 0 ? s.red(`  regressed (${b.regressed.length}): ${list(b.regressed)}`) : '  no task regressed significantly');
  if (b.improved.length > 0) out.push(s.green(`  improved (${b.improved.length}): ${list(b.improved)}`));
  out.push(s.dim(`  silo compare ${b.evalId} ${evalId} lists every task`));
  return out;
}
