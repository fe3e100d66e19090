/**
 * The report as one HTML file: inline CSS, the summary and charts drawn here, the data as an
 * embedded JSON block, and the script (report-client.ts) that draws the task table and the run
 * list from it. A Content-Security-Policy lets nothing load from anywhere and lets only that one
 * script run, so even markup that slipped through escaping could not execute.
 */
import { createHash } from 'node:crypto';
import { CLIENT_JS } from './report-client.js';
import { durationHistogram, escapeHtml, passRateChart, STATUS_COLOURS } from './report-charts.js';
import type { ReportData } from './report-data.js';
import { ms } from './show.js';
import { plural } from '../eval/reporters.js';

/**
 * JSON that is safe inside a `<script>` element: `<`, `>` and `&` (which only occur inside JSON
 * strings) and the two line separators become `\u` escapes, so no `</script>` or `<!--` can end
 * or change the block. JSON.parse gives back exactly the same value.
 */
export function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The whole page. */
export function renderReportPage(data: ReportData): string {
  const s = data.summary;
  const t = s.totals;
  const scriptHash = createHash('sha256').update(CLIENT_JS).digest('base64');
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${scriptHash}'; img-src data:; base-uri 'none'; form-action 'none'`;
  const rate = t.passRate === null ? 'n/a' : `${(t.passRate * 100).toFixed(1)}%`;
  const ci = t.passRateCi95 ? `95% CI ${(t.passRateCi95[0] * 100).toFixed(1)}–${(t.passRateCi95[1] * 100).toFixed(1)}%` : 'no graded runs';
  const counted = data.runs.filter((r) => !r.retried && r.termination !== 'cancelled');
  const cards: [string, string, string?][] = [
    ['runs', String(t.runs)],
    ['passed', String(t.passed), 'passed'],
    ['failed', String(t.failed), 'failed'],
    ['errors', String(t.errors), 'error'],
    ['retries', String(t.retries)],
    ['pass rate', rate],
    ...(t.usage ? ([['model tokens', `${t.usage.inputTokens} in · ${t.usage.outputTokens} out`], ['model requests', String(t.usage.requests)]] as [string, string][]) : []),
  ];
  // Passes with an ungrounded answer: a warning, shown only when there are some.
  if (t.suspicious) cards.splice(2, 0, ['suspicious passes', String(t.suspicious), 'error']);
  const bounds = data.bounds;
  const boundsNote =
    bounds.omittedDetails === 0
      ? `Every run's detail is in this file.`
      : `${data.details.length} of ${plural(data.runs.length, 'run')} ${data.details.length === 1 ? 'is' : 'are'} in this file in full (failed and errored runs first; at most ` +
        `${plural(bounds.limits.maxDetailRuns, 'run')} and ${(bounds.limits.maxDetailBytes / 2 ** 20).toFixed(1)} MiB of detail). ` +
        `For any other run, \`silo show <runId>\` prints everything.`;

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Silo eval ${escapeHtml(s.evalId)}</title>
<style>${CSS}${data.baseline ? VERDICT_CSS : ''}</style>
</head>
<body>
<header>
<h1>Eval <code>${escapeHtml(s.evalId)}</code> <span class="badge status-${escapeHtml(s.status)}">${escapeHtml(s.status)}</span></h1>
<p class="muted">agent <code>${escapeHtml(s.agent)}</code> · ${plural(s.trials, 'trial')} per task · ${plural(s.tasks.length, 'task')} · started ${escapeHtml(s.startedAt)}${s.durationMs === null ? '' : ` · took ${escapeHtml(ms(s.durationMs))}`}</p>
</header>
<main>
<section id="summary">
<div class="cards">${cards.map(([label, value, status]) => `<div class="card${status ? ` status-${status}` : ''}"><div class="value">${escapeHtml(value)}</div><div class="label">${escapeHtml(label)}</div></div>`).join('')}</div>
${baselineNote(data)}<p id="pass-rate">Pass rate <strong>${escapeHtml(rate)}</strong> (${escapeHtml(ci)}) over ${plural(t.passed + t.failed, 'graded run')}.${t.errors > 0 ? ` ${plural(t.errors, 'run')} could not be graded and ${t.errors === 1 ? 'is' : 'are'} not counted.` : ''}${t.retries > 0 ? ` ${t.retries === 1 ? '1 infrastructure retry is' : `${t.retries} infrastructure retries are`} not counted either.` : ''}</p>
</section>
<section id="charts">
<figure><figcaption>Pass rate per task (bar), with its 95% interval (line)</figcaption>${passRateChart(s.tasks)}</figure>
<figure><figcaption>Run durations <span class="key passed">passed</span> <span class="key failed">failed</span> <span class="key error">error</span></figcaption>${durationHistogram(counted)}</figure>
</section>
<section id="tasks">
<h2>Tasks</h2>
<p class="muted">pass@k: the chance that at least one of k attempts passes; pass^k: that all k pass. Click a task to list its runs.</p>
<div class="scroll"><table id="task-table"><thead></thead><tbody></tbody></table></div>
<div class="pager" id="tasks-pager"></div>
</section>
<section id="runs-section">
<h2>Runs</h2>
<noscript><p>The list of runs needs JavaScript.</p></noscript>
<div class="filters">
<label><input type="checkbox" id="filter-failed"> failed only</label>
<label>diagnosis <select id="filter-code"><option value="">any</option></select></label>
<label>task <select id="filter-task"><option value="">any</option></select></label>
<label>run <input type="search" id="filter-text" placeholder="runId" size="14"></label>
<span id="run-count" class="muted"></span>
</div>
<div class="layout">
<div><div class="scroll"><table id="runs"><thead><tr><th>run</th><th>task</th><th>trial</th><th>status</th><th>score</th><th>duration</th><th>termination</th><th>diagnosis</th></tr></thead><tbody></tbody></table></div>
<div class="pager" id="runs-pager"></div></div>
<article id="run-detail"><p class="muted">Pick a run to see its timeline, changes and checks.</p></article>
</div>
</section>
</main>
<footer class="muted"><p id="bounds">${escapeHtml(boundsNote)}</p><p>Silo ${escapeHtml(data.silo)} · generated ${escapeHtml(data.generatedAt)}</p></footer>
<script type="application/json" id="silo-data">${scriptSafeJson(data)}</script>
<script>${CLIENT_JS}</script>
</body>
</html>
`;
}

/** A line on the comparison with the eval's baseline, when it has one. */
function baselineNote(data: ReportData): string {
  const b = data.baseline;
  if (!b) return '';
  const pts = (x: number): string => `${x > 0 ? '+' : x < 0 ? '−' : '±'}${Math.abs(100 * x).toFixed(1)} pts`;
  const delta = b.delta === null ? '' : `: mean pass rate per task ${pts(b.delta)}${b.ci95 ? ` (95% CI ${pts(b.ci95[0])} to ${pts(b.ci95[1])})` : ''}`;
  const gone = b.found ? '' : ' (that eval is no longer here: only its verdicts are shown)';
  return `<p id="baseline">Against baseline <code>${escapeHtml(b.evalId)}</code>${escapeHtml(delta)} · <span class="bad">${b.regressed.length} regressed</span> · <span class="ok">${b.improved.length} improved</span>${escapeHtml(gone)}</p>
`;
}

/** The verdicts' badges (a report with a baseline, the comparison page). */
export const VERDICT_CSS = `
.badge.regressed { background: var(--failed); } .badge.improved { background: var(--passed); } .badge.same { background: #888; }
td.change .badge { margin-left: 4px; }
`;

/** The report's style sheet (the comparison page uses it too). */
export const CSS = `
:root { --passed: ${STATUS_COLOURS.passed}; --failed: ${STATUS_COLOURS.failed}; --error: ${STATUS_COLOURS.error}; --line: #ddd; --muted: #666; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; padding: 16px 24px; max-width: 1600px; color: #1a1a1a; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 24px 0 8px; } h3 { font-size: 15px; margin: 16px 0 6px; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; background: #f6f6f6; padding: 4px 6px; border-radius: 3px; max-height: 16em; overflow: auto; }
.muted { color: var(--muted); }
.cards { display: flex; gap: 10px; flex-wrap: wrap; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 90px; }
.card .value { font-size: 22px; font-weight: 600; } .card .label { color: var(--muted); font-size: 12px; }
.card.status-passed .value { color: var(--passed); } .card.status-failed .value { color: var(--failed); } .card.status-error .value { color: var(--error); }
#charts { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
figure { margin: 8px 0; } figcaption { font-weight: 600; margin-bottom: 6px; }
.chart text { font-size: 11px; fill: #333; font-family: system-ui, sans-serif; }
.key::before { content: ""; display: inline-block; width: 10px; height: 10px; margin: 0 3px 0 8px; vertical-align: -1px; }
.key.passed::before { background: var(--passed); } .key.failed::before { background: var(--failed); } .key.error::before { background: var(--error); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; background: #fafafa; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
#runs tbody tr, #task-table tbody tr { cursor: pointer; }
#runs tbody tr:hover, #task-table tbody tr:hover { background: #f3f7ff; }
#runs tbody tr.selected { background: #e3edff; }
.badge { display: inline-block; padding: 0 6px; border-radius: 3px; font-size: 12px; font-weight: 600; color: #fff; background: #777; }
.status-passed.badge, .badge.passed { background: var(--passed); } .badge.failed { background: var(--failed); } .badge.error { background: var(--error); }
.status-completed.badge { background: var(--passed); } .status-cancelled.badge, .status-running.badge { background: var(--error); } .status-error.badge { background: var(--failed); }
.chip { display: inline-block; padding: 0 5px; margin: 1px 2px 1px 0; border-radius: 3px; font-size: 11.5px; background: #fff3e0; border: 1px solid #f0c48a; }
.chip.good { background: #e8f5e9; border-color: #a5d6a7; }
.filters { display: flex; gap: 14px; flex-wrap: wrap; align-items: center; margin-bottom: 8px; }
.pager { display: flex; gap: 8px; align-items: center; margin: 8px 0; }
button { font: inherit; padding: 2px 10px; cursor: pointer; }
.layout { display: grid; grid-template-columns: minmax(0, 1fr); gap: 20px; }
@media (min-width: 1200px) { .layout { grid-template-columns: minmax(0, 1.2fr) minmax(0, 1fr); } #run-detail { position: sticky; top: 8px; max-height: calc(100vh - 16px); overflow: auto; } }
#run-detail { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; min-height: 120px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 6px 0; } dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.timeline td.t { white-space: nowrap; color: var(--muted); font-variant-numeric: tabular-nums; }
.timeline tr.flash { background: #fff8c4; }
.ok { color: var(--passed); font-weight: 600; } .bad { color: var(--failed); font-weight: 600; } .warn { color: var(--error); font-weight: 600; }
ul.changes { list-style: none; padding: 0; margin: 2px 0; } ul.changes li { font-family: ui-monospace, monospace; font-size: 12px; }
.op-add { color: var(--passed); } .op-del { color: var(--failed); } .op-edit { color: var(--error); }
a.seq { cursor: pointer; color: #1a56c4; text-decoration: underline; }
`;
