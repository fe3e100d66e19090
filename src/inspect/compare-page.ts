/**
 * A comparison of two evals as one offline HTML page, in the report's style (its style sheet, its
 * escaping): the overall difference with its interval, then a row per task with both pass rates,
 * the difference drawn as a bar and written out, the p-values and the verdict, most significant
 * first. Drawn entirely on the host: the Content-Security-Policy lets no script run at all and
 * nothing load from anywhere.
 */
import { rename, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Comparison, CompareSide, TaskComparison } from '../eval/compare.js';
import { points, pValue } from '../eval/compare-table.js';
import { makeFolder, outDirAccess } from '../out-dir.js';
import { SILO_VERSION } from '../paths.js';
import { escapeHtml } from './report-charts.js';
import { CSS, VERDICT_CSS } from './report-page.js';

const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/** The whole page. */
export function renderComparePage(c: Comparison, generatedAt = new Date().toISOString()): string {
  const o = c.overall;
  const e = escapeHtml;
  const ci = o.ci95 ? `95% CI ${points(o.ci95[0])} to ${points(o.ci95[1])}` : 'no interval: no task was graded in both';
  const cards: [string, string, (string | undefined)?][] = [
    ['tasks compared', String(o.tasks)],
    ['regressed', String(o.regressed.length), o.regressed.length > 0 ? 'failed' : undefined],
    ['improved', String(o.improved.length), o.improved.length > 0 ? 'passed' : undefined],
    ['mean Δ', points(o.delta)],
  ];
  const ks = Object.keys(c.a.passHatK);
  const only = (label: string, ids: readonly string[]) =>
    ids.length === 0 ? '' : `<p class="warn">Only in ${label} (${ids.length}, not compared): ${ids.map((id) => `<code>${e(id)}</code>`).join(', ')}</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${e(CSP)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Silo compare ${e(c.a.evalId)} → ${e(c.b.evalId)}</title>
<style>${CSS}${VERDICT_CSS}${COMPARE_CSS}</style>
</head>
<body>
<header>
<h1>Compare <code>${e(c.a.evalId)}</code> → <code>${e(c.b.evalId)}</code></h1>
<p class="muted">A: agent <code>${e(c.a.agent)}</code>, ${c.a.trials} trial${c.a.trials === 1 ? '' : 's'} per task, ${c.a.tasks} tasks · B: agent <code>${e(c.b.agent)}</code>, ${c.b.trials} trial${c.b.trials === 1 ? '' : 's'} per task, ${c.b.tasks} tasks</p>
</header>
<main>
<section id="overall">
<div class="cards">${cards.map(([label, value, status]) => `<div class="card${status ? ` status-${status}` : ''}"><div class="value">${e(value)}</div><div class="label">${e(label)}</div></div>`).join('')}</div>
<p>Mean pass rate per task <strong>${e(rate(c.a.meanPassRate))}</strong> → <strong>${e(rate(c.b.meanPassRate))}</strong>: ${e(points(o.delta))} (${e(ci)}, ${o.resamples} bootstrap resamples over tasks, seed ${o.seed}).</p>
${ks.length > 0 ? `<p>${ks.map((k) => `pass^${e(k)} ${e(num(c.a.passHatK[k]))} → ${e(num(c.b.passHatK[k]))}`).join(' · ')}</p>` : ''}
<p class="muted">A task is <span class="badge regressed">regressed</span> or <span class="badge improved">improved</span> when Fisher's exact test on its passes and fails in A and B, corrected for the ${o.tasks} tasks tested with Holm's method, gives p &lt; ${o.alpha}; otherwise it is <span class="badge same">same</span>.</p>
${only('A', c.onlyA)}${only('B', c.onlyB)}
</section>
<section id="tasks">
<h2>Tasks, most significant first</h2>
<div class="scroll"><table id="compare-table"><thead><tr><th>task</th><th class="num">A</th><th class="num">B</th><th>Δ</th><th class="num">p</th><th class="num">p (Holm)</th><th>verdict</th></tr></thead>
<tbody>
${c.tasks.map(row).join('\n')}
</tbody></table></div>
</section>
</main>
<footer class="muted"><p>Silo ${e(SILO_VERSION)} · generated ${e(generatedAt)}</p></footer>
</body>
</html>
`;
}

/** Writes the page to `file` (whole, then renamed); returns its absolute path. */
export async function writeComparePage(c: Comparison, file: string): Promise<string> {
  const abs = resolve(file);
  await outDirAccess(
    abs,
    async () => {
      makeFolder(dirname(abs));
      const temp = `${abs}.${process.pid}.tmp`;
      await writeFile(temp, renderComparePage(c));
      await rename(temp, abs);
    },
    '--output',
  );
  return abs;
}

function row(t: TaskComparison): string {
  const e = escapeHtml;
  return `<tr class="verdict-${t.verdict}"><td><code>${e(t.taskId)}</code></td><td class="num">${e(side(t.a))}</td><td class="num">${e(side(t.b))}</td><td class="delta">${bar(t.delta)} ${e(points(t.delta))}</td><td class="num">${e(pValue(t.pValue))}</td><td class="num">${e(pValue(t.pHolm))}</td><td><span class="badge ${t.verdict}">${t.verdict}</span></td></tr>`;
}

/** A bar from the middle: left for a fall, right for a rise, its length the difference. */
function bar(delta: number | null): string {
  if (delta === null || delta === 0) return '<span class="bar"></span>';
  const width = Math.round(Math.min(1, Math.abs(delta)) * 50);
  const side = delta < 0 ? `right: 50%; background: var(--failed)` : `left: 50%; background: var(--passed)`;
  // Only numbers go into the style attribute.
  return `<span class="bar"><span style="${side}; width: ${width}%"></span></span>`;
}

function side(x: CompareSide): string {
  return `${x.passed}/${x.n} · ${rate(x.passRate)}`;
}

function rate(x: number | null): string {
  return x === null ? '–' : `${(100 * x).toFixed(1)}%`;
}

function num(x: number | null | undefined): string {
  return x === null || x === undefined ? '–' : x.toFixed(2);
}

const COMPARE_CSS = `
tr.verdict-regressed { background: #fdecea; } tr.verdict-improved { background: #edf7ed; }
td.delta { white-space: nowrap; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; position: relative; width: 120px; height: 10px; background: #f0f0f0; vertical-align: -1px; }
.bar::after { content: ""; position: absolute; left: 50%; top: -2px; bottom: -2px; width: 1px; background: #999; }
.bar > span { position: absolute; top: 0; bottom: 0; }
`;
