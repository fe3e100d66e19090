/**
 * The report's two charts as inline SVG strings, drawn on the host so the page needs no chart
 * library: the pass rate of each task (with its 95% interval), and a histogram of run durations
 * stacked by status. Every text in them is escaped.
 */
import { percentile, wilson95 } from '../eval/stats.js';
import type { TaskStats } from '../types.js';
import { ms } from './show.js';

/** Colours by run status, shared with the page's CSS. */
export const STATUS_COLOURS = { passed: '#2e7d32', failed: '#c62828', error: '#b7791f' } as const;

/** Bars drawn at most in the pass-rate chart: the tasks that pass least. */
export const MAX_TASK_BARS = 40;

const LABEL_W = 240;
const BAR_W = 300;
const ROW_H = 20;

/** Escapes text for HTML and SVG, in text and in quoted attributes. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** One bar per task, worst pass rate first; at most `maxBars`, with a note saying how many are left out. */
export function passRateChart(tasks: readonly TaskStats[], maxBars = MAX_TASK_BARS): string {
  if (tasks.length === 0) return '<p class="muted">No tasks.</p>';
  const sorted = tasks
    .map((t, i) => ({ t, i }))
    .sort((a, b) => (a.t.passRate ?? -1) - (b.t.passRate ?? -1) || a.i - b.i)
    .slice(0, maxBars)
    .map(({ t }) => t);
  const width = LABEL_W + BAR_W + 120;
  const height = sorted.length * ROW_H + 8;
  const rows = sorted.map((t, i) => {
    const y = 4 + i * ROW_H;
    const n = t.passed + t.failed;
    const label = t.taskId.length > 34 ? `${t.taskId.slice(0, 33)}…` : t.taskId;
    const value = t.passRate === null ? 'no grade' : `${Math.round(t.passRate * 100)}% (${t.passed}/${n})`;
    const ci = wilson95(t.passed, n);
    const tip = `${t.taskId}: ${value}${ci ? `, 95% CI ${pct(ci[0])}–${pct(ci[1])}` : ''}${t.errors > 0 ? `, ${t.errors} errors` : ''}`;
    const bar = t.passRate === null ? 0 : Math.max(t.passRate > 0 ? 1 : 0, Math.round(t.passRate * BAR_W));
    const colour = t.passRate === null ? STATUS_COLOURS.error : t.passRate === 1 ? STATUS_COLOURS.passed : t.passRate === 0 ? STATUS_COLOURS.failed : '#558b2f';
    const interval = ci
      ? `<line x1="${LABEL_W + ci[0] * BAR_W}" x2="${LABEL_W + ci[1] * BAR_W}" y1="${y + 8}" y2="${y + 8}" stroke="#222" stroke-width="1.5"/>`
      : '';
    return (
      `<g><title>${escapeHtml(tip)}</title>` +
      `<text x="${LABEL_W - 8}" y="${y + 12}" text-anchor="end">${escapeHtml(label)}</text>` +
      `<rect x="${LABEL_W}" y="${y + 2}" width="${BAR_W}" height="${ROW_H - 6}" fill="#eee"/>` +
      `<rect x="${LABEL_W}" y="${y + 2}" width="${bar}" height="${ROW_H - 6}" fill="${colour}"/>` +
      interval +
      `<text x="${LABEL_W + BAR_W + 8}" y="${y + 12}">${escapeHtml(value)}</text></g>`
    );
  });
  const svg =
    `<svg class="chart" id="chart-tasks" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="pass rate per task">` +
    rows.join('') +
    '</svg>';
  const note = tasks.length > sorted.length ? `<p class="muted">The ${sorted.length} tasks with the lowest pass rate of ${tasks.length}; the table below has them all.</p>` : '';
  return svg + note;
}

/** A run as the histogram counts it. */
export interface TimedRun {
  status: keyof typeof STATUS_COLOURS;
  durationMs: number;
}

/**
 * Durations in `bins` equal bins from the fastest run to the slowest; when a few slow runs would
 * squash the rest, the last bin collects everything from the 99th percentile up.
 */
export function durationHistogram(runs: readonly TimedRun[], bins = 24): string {
  if (runs.length === 0) return '<p class="muted">No finished runs.</p>';
  const durations = runs.map((r) => r.durationMs);
  const min = durations.reduce((a, b) => Math.min(a, b), Infinity);
  const max = durations.reduce((a, b) => Math.max(a, b), 0);
  const p99 = percentile(durations, 99) ?? max;
  const overflow = max - min > 2 * (p99 - min) && p99 > min;
  const low = Math.floor(min);
  const top = Math.max(overflow ? p99 : max, low + 1);
  const binW = (top - low) / (overflow ? bins - 1 : bins);
  const counts = Array.from({ length: bins }, () => ({ passed: 0, failed: 0, error: 0 }));
  for (const r of runs) counts[Math.min(bins - 1, Math.floor((r.durationMs - low) / binW))]![r.status]++;
  const highest = Math.max(...counts.map((c) => c.passed + c.failed + c.error));

  const left = 48;
  const plotW = 560;
  const plotH = 160;
  const width = left + plotW + 16;
  const height = plotH + 40;
  const w = plotW / bins;
  const bars = counts.map((c, i) => {
    const from = low + i * binW;
    const range = overflow && i === bins - 1 ? `≥ ${ms(from)}` : `${ms(from)}–${ms(from + binW)}`;
    let y = plotH + 4;
    const parts = (['passed', 'failed', 'error'] as const).map((status) => {
      const h = (c[status] / highest) * plotH;
      y -= h;
      return c[status] === 0 ? '' : `<rect x="${(left + i * w + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${(w - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${STATUS_COLOURS[status]}"/>`;
    });
    const tip = `${range}: ${c.passed} passed, ${c.failed} failed, ${c.error} errors`;
    return `<g><title>${escapeHtml(tip)}</title><rect x="${(left + i * w).toFixed(1)}" y="4" width="${w.toFixed(1)}" height="${plotH}" fill="transparent"/>${parts.join('')}</g>`;
  });
  const axis =
    `<line x1="${left}" x2="${left + plotW}" y1="${plotH + 4}" y2="${plotH + 4}" stroke="#888"/>` +
    `<text x="${left}" y="${plotH + 20}">${escapeHtml(ms(low))}</text>` +
    `<text x="${left + plotW / 2}" y="${plotH + 20}" text-anchor="middle">${escapeHtml(ms((low + top) / 2))}</text>` +
    `<text x="${left + plotW}" y="${plotH + 20}" text-anchor="end">${escapeHtml(overflow ? `${ms(top)}+` : ms(top))}</text>` +
    `<text x="${left - 6}" y="14" text-anchor="end">${highest}</text>` +
    `<text x="${left - 6}" y="${plotH + 4}" text-anchor="end">0</text>` +
    `<text x="${left + plotW / 2}" y="${plotH + 36}" text-anchor="middle" class="muted">duration of a run (wall clock)</text>`;
  return (
    `<svg class="chart" id="chart-durations" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="histogram of run durations">` +
    bars.join('') +
    axis +
    '</svg>'
  );
}

function pct(value: number): string {
  return `${Math.round(value * 100)}%`;
}
