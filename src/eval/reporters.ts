/**
 * How an eval's result is reported: `default` (a table for people), `json` (the summary), `junit`
 * (XML for CI: a testcase per run, failed checks in the failure message).
 */
import type { Style } from '../inspect/style.js';
import { ms } from '../time.js';
import type { EvalRunLine, EvalSummary } from '../types.js';

export type ReporterName = 'default' | 'json' | 'junit';
export const REPORTERS: readonly ReporterName[] = ['default', 'json', 'junit'];

/** The summary as a table, with totals and the 95% interval. */
export function tableReport(summary: EvalSummary, s: Style): string {
  const ks = Object.keys(summary.tasks[0]?.passAtK ?? {});
  const kMax = ks.at(-1) ?? '1';
  // Errors get a column of their own when there are any, so every column stays aligned.
  const withErrors = summary.tasks.some((t) => t.errors > 0);
  const header = ['task', 'runs', ...(withErrors ? ['errors'] : []), 'pass rate', `pass@${kMax}`, `pass^${kMax}`, 'score', 'p50', 'p95', ''];
  const rows = summary.tasks.map((t) => [
    t.taskId,
    `${t.passed}/${t.passed + t.failed}`,
    ...(withErrors ? [t.errors ? String(t.errors) : ''] : []),
    pct(t.passRate),
    num(t.passAtK[kMax]),
    num(t.passHatK[kMax]),
    num(t.meanScore),
    t.p50Ms === null ? '–' : ms(t.p50Ms),
    t.p95Ms === null ? '–' : ms(t.p95Ms),
    [t.flaky ? 'flaky' : '', t.suspicious ? `${t.suspicious} suspicious` : ''].filter(Boolean).join(', '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const last = header.length - 1;
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 || i === last ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  const paint = (row: string[], text: string): string => {
    const task = summary.tasks.find((t) => t.taskId === row[0]);
    const rate = task?.passRate;
    if (task?.suspicious) return s.yellow(text);
    return rate === 1 ? s.green(text) : rate === 0 ? s.red(text) : rate === null ? s.yellow(text) : text;
  };
  const out = [s.bold(line(header)), ...rows.map((r) => paint(r, line(r)))];
  const t = summary.totals;
  const ci = t.passRateCi95 ? ` (95% CI ${pct(t.passRateCi95[0])}–${pct(t.passRateCi95[1])})` : '';
  const status = summary.status === 'completed' ? '' : ` · ${s.yellow(summary.status)}`;
  const suspicious = t.suspicious ? ` (${s.yellow(`${t.suspicious} suspicious`)})` : '';
  out.push(
    '',
    `${plural(t.runs, 'run')} · ${s.green(`${t.passed} passed`)}${suspicious} · ${t.failed ? s.red(`${t.failed} failed`) : '0 failed'} · ${t.errors ? s.yellow(plural(t.errors, 'error')) : '0 errors'}` +
      `${t.retries ? ` · ${t.retries} retried` : ''} · pass rate ${pct(t.passRate)}${ci} · ${ms(summary.durationMs ?? 0)}${status}`,
    s.dim(`eval ${summary.evalId} · trials ${summary.trials} · pass@k/pass^k for k in ${ks.join(', ') || '–'} in summary.json`),
  );
  if (t.suspicious) {
    out.push(
      s.yellow(
        `suspicious: passed, but the answer had nothing behind it (ungrounded_answer: no successful tool call, or an action claimed while the world did not change; silo show says which); --strict fails such runs`,
      ),
    );
  }
  if (t.usage) {
    const u = t.usage;
    out.push(s.dim(`model: ${u.requests} requests · ${u.inputTokens} input tokens · ${u.outputTokens} output tokens (per task in summary.json)`));
  }
  if (t.userUsage) {
    const u = t.userUsage;
    out.push(s.dim(`user model: ${u.requests} requests · ${u.inputTokens} input tokens · ${u.outputTokens} output tokens (the simulated users, apart from the agent)`));
  }
  return out.join('\n');
}

/** `n` and the word, in the plural unless n is 1. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** JUnit XML: a testsuite per task, a testcase per run. */
export function junitReport(summary: EvalSummary, lines: Iterable<EvalRunLine>): string {
  // By task, then by trial: a later run of a pair (one a resume ran again) replaces the earlier.
  const byTrial = new Map<string, Map<number, EvalRunLine>>(summary.tasks.map((t) => [t.taskId, new Map()]));
  for (const line of lines) {
    if (line.retried || line.termination === 'cancelled') continue;
    byTrial.get(line.taskId)?.set(line.trial, line);
  }
  const byTask = new Map([...byTrial].map(([taskId, trials]) => [taskId, [...trials.values()]]));
  const t = summary.totals;
  // The top level's time is its suites' times added up, as JUnit readers expect (runs overlap,
  // so that is more than the eval's wall time, which is in summary.json).
  const total = [...byTask.values()].reduce((sum, runs) => sum + runs.reduce((s, r) => s + Math.round(r.durationMs), 0), 0);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="silo eval ${attr(summary.evalId)}" tests="${t.runs}" failures="${t.failed}" errors="${t.errors}" time="${secs(total)}">`,
  ];
  for (const [taskId, runs] of byTask) {
    runs.sort((a, b) => a.trial - b.trial);
    const failures = runs.filter((r) => r.status === 'failed').length;
    const errors = runs.filter((r) => r.status === 'error').length;
    const time = runs.reduce((sum, r) => sum + Math.round(r.durationMs), 0);
    out.push(`  <testsuite name="${attr(taskId)}" tests="${runs.length}" failures="${failures}" errors="${errors}" time="${secs(time)}">`);
    for (const r of runs) {
      const open = `    <testcase classname="${attr(taskId)}" name="${attr(`${taskId} trial ${r.trial}`)}" time="${secs(Math.round(r.durationMs))}"`;
      if (r.status === 'passed' && r.suspicious !== undefined) {
        // A pass with a warning: JUnit has no such verdict, so a note that CI pages show.
        const note = `suspicious: passed, but ungrounded_answer: ${r.suspicious} (--strict fails it)\nsilo show ${r.runId}`;
        out.push(`${open}>`, `      <system-out>${text(note)}</system-out>`, '    </testcase>');
        continue;
      }
      if (r.status === 'passed') {
        out.push(`${open}/>`);
        continue;
      }
      const detail =
        r.status === 'failed'
          ? (r.failed ?? []).map((c) => `${c.name}${c.message ? `: ${c.message}` : ''}`).join('; ') || 'a check failed'
          : `${r.error?.code ?? 'error'}: ${r.error?.message ?? 'no grade'}`;
      const tag = r.status === 'failed' ? 'failure' : 'error';
      const body = `run ${r.runId} · termination ${r.termination} · score ${r.score === null ? '–' : r.score.toFixed(2)}\nsilo show ${r.runId}`;
      out.push(`${open}>`, `      <${tag} message="${attr(detail)}" type="${r.termination}">${text(body)}</${tag}>`, '    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

function pct(x: number | null | undefined): string {
  return x === null || x === undefined ? '–' : `${(100 * x).toFixed(x === 1 || x === 0 ? 0 : 1)}%`;
}

function num(x: number | null | undefined): string {
  return x === null || x === undefined ? '–' : x.toFixed(2);
}

function secs(msValue: number): string {
  return (msValue / 1000).toFixed(3);
}

// XML 1.0 forbids most control characters even when escaped.
// eslint-disable-next-line no-control-regex
const INVALID_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

function text(s: string): string {
  return s.replace(INVALID_XML, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function attr(s: string): string {
  return text(s).replace(/"/g, '&quot;').replace(/\n/g, '&#10;');
}
