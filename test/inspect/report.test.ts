/**
 * The HTML report as a file: what it embeds, how it escapes, how its size stays bounded, and how
 * it finds an eval. Eval folders are written by hand (fake-eval.ts), except one real eval.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runEval, SiloError } from '../../src/index.js';
import { CLIENT_JS } from '../../src/inspect/report-client.js';
import type { ReportData } from '../../src/inspect/report-data.js';
import { scriptSafeJson } from '../../src/inspect/report-page.js';
import { reportLimits, resolveEval, writeReport } from '../../src/inspect/report.js';
import type { TraceEvent } from '../../src/types.js';
import { tempDir } from '../helpers.js';
import { writeFakeEval, type FakeRun } from './fake-eval.js';

const tmp = tempDir('silo-report-');
afterAll(() => tmp.remove());

let outs = 0;
function outDir(): string {
  return join(tmp.dir, `out-${outs++}`);
}

const HOSTILE = '</script><script>document.title="pwned"</script><!--<script>';

/** The data block of a report page, parsed. */
function embedded(html: string): ReportData {
  const m = /<script type="application\/json" id="silo-data">([^<]*)<\/script>/.exec(html);
  if (!m) throw new Error('no data block');
  return JSON.parse(m[1]!) as ReportData;
}

async function report(out: string, evalId: string, limits = {}): Promise<{ html: string; data: ReportData; file: string; bytes: number }> {
  const written = await writeReport({ outDir: out, evalId, limits });
  const html = readFileSync(written.file, 'utf8');
  return { html, data: embedded(html), file: written.file, bytes: written.bytes };
}

describe('scriptSafeJson', () => {
  it('leaves no character that could end or change a script block, and parses back to the same value', () => {
    const value = { output: HOSTILE, amp: 'a && b', seps: 'x\u2028y\u2029z', nested: [{ html: '<b>' }] };
    const text = scriptSafeJson(value);
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('the report page', () => {
  const out = outDir();
  const runs: FakeRun[] = [
    { taskId: 'demo/a', status: 'passed' },
    { taskId: 'demo/b', status: 'failed', output: HOSTILE, diagnosis: [{ code: 'ungrounded_answer', seq: 3, message: HOSTILE }] },
    { taskId: 'demo/a', status: 'failed', trial: 1, diagnosis: [{ code: 'wrong_answer', message: 'the answer is wrong' }, { code: 'hallucinated_tool', seq: 1, message: 'x' }, { code: 'wrong_answer', message: 'again' }] },
    { taskId: 'demo/b', status: 'error', trial: 1, termination: 'crashed', retried: true },
    { taskId: 'demo/b', status: 'passed', trial: 1 },
  ];
  const { summary, runIds } = writeFakeEval(out, '01FAKEEVAL000000000000000A', runs);

  it('embeds the summary and a row for every run, in the order they ended', async () => {
    const { data } = await report(out, summary.evalId);
    expect(data.summary).toEqual(summary);
    expect(data.tasks).toEqual(['demo/a', 'demo/b']);
    expect(data.runs.map((r) => [r.runId, data.tasks[r.task], r.trial, r.status, r.retried ?? false])).toEqual([
      [runIds[0], 'demo/a', 0, 'passed', false],
      [runIds[1], 'demo/b', 0, 'failed', false],
      [runIds[2], 'demo/a', 1, 'failed', false],
      [runIds[3], 'demo/b', 1, 'error', true],
      [runIds[4], 'demo/b', 1, 'passed', false],
    ]);
  });

  it('gives the filters their data: the diagnosis codes seen, sorted, and each run\'s distinct codes', async () => {
    const { data } = await report(out, summary.evalId);
    expect(data.codes).toEqual(['hallucinated_tool', 'ungrounded_answer', 'wrong_answer']);
    expect(data.runs.map((r) => r.diagnosis.map((i) => data.codes[i]))).toEqual([[], ['ungrounded_answer'], ['wrong_answer', 'hallucinated_tool'], [], []]);
  });

  it('keeps hostile output as data: it cannot end the data block, and parses back intact', async () => {
    const { html, data } = await report(out, summary.evalId);
    // Exactly the two script elements of the page: the data block and the page's own script.
    expect(html.match(/<script/g)).toHaveLength(2);
    expect(html.match(/<\/script>/g)).toHaveLength(2);
    expect(html).not.toContain('pwned"</script>');
    const failed = data.details[data.runs[1]!.detail!]!;
    expect(failed.output).toBe(HOSTILE);
    expect(failed.diagnosis[0]!.message).toBe(HOSTILE);
  });

  it('lets only its own script run and loads nothing from anywhere', async () => {
    const { html } = await report(out, summary.evalId);
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1]!.replace(/&#39;/g, "'");
    const hash = createHash('sha256').update(CLIENT_JS).digest('base64');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src 'sha256-${hash}'`);
    expect(html).toContain(`<script>${CLIENT_JS}</script>`);
    expect(html).not.toMatch(/\s(src|href)=|<link|@import|url\(/i);
    expect(html.match(/https?:\/\/[^"\s]*/g) ?? []).toEqual(['http://www.w3.org/2000/svg', 'http://www.w3.org/2000/svg']);
  });

  it('puts the totals, the pass rate with its interval, and both charts in the page itself', async () => {
    const { html } = await report(out, summary.evalId);
    expect(html).toContain(`Eval <code>${summary.evalId}</code>`);
    expect(html).toMatch(/Pass rate <strong>50\.0%<\/strong> \(95% CI 15\.0–85\.0%\) over 4 graded runs\./);
    expect(html).toContain('id="chart-tasks"');
    expect(html).toContain('id="chart-durations"');
  });

  it('says "1 run", "1 task", "1 trial" in the singular', async () => {
    const one = outDir();
    const { summary: s } = writeFakeEval(one, '01FAKEEVAL00000000000000NE', [
      { taskId: 't0', status: 'passed' },
      { taskId: 't0', status: 'error', trial: 1 },
    ]);
    const { html } = await report(one, s.evalId, { maxDetailRuns: 1 });
    expect(html).toMatch(/ · 1 task · /);
    expect(html).toContain('over 1 graded run. 1 run could not be graded and is not counted.</p>');
    expect(html).toContain('1 of 2 runs is in this file in full (failed and errored runs first; at most 1 run and ');
    expect(html).not.toMatch(/\b1 (runs|tasks|trials)\b/);
  });

  it('has a script that at least parses', () => {
    expect(() => new Function(CLIENT_JS)).not.toThrow();
  });

  it('keeps a row for a run whose folder is gone, without detail', async () => {
    const gone = outDir();
    const { summary: s, runIds: ids } = writeFakeEval(gone, '01FAKEEVAL000000000000000B', runs.slice(0, 2));
    rmSync(join(gone, 'runs', ids[1]!), { recursive: true });
    const { data } = await report(gone, s.evalId);
    expect(data.runs).toHaveLength(2);
    expect(data.runs[1]!.detail).toBeUndefined();
    expect(data.runs[1]!.diagnosis).toEqual([]);
    expect(data.bounds.omittedDetails).toBe(1);
  });
});

describe('the size bounds', () => {
  it('embeds failed and errored runs in full first, up to maxDetailRuns', async () => {
    const out = outDir();
    const runs: FakeRun[] = [];
    for (let i = 0; i < 30; i++) runs.push({ taskId: `t${i % 3}`, status: i % 6 === 5 ? 'failed' : i % 10 === 3 ? 'error' : 'passed' });
    const { summary } = writeFakeEval(out, '01FAKEEVAL000000000000000C', runs);
    const { data, html } = await report(out, summary.evalId, { maxDetailRuns: 7 });
    const detailed = data.runs.filter((r) => r.detail !== undefined);
    // 5 failed and 2 errored: every run that did not pass, and no passing one.
    expect(detailed.map((r) => r.status).sort()).toEqual(['error', 'error', 'failed', 'failed', 'failed', 'failed', 'failed']);
    expect(data.bounds.omittedDetails).toBe(23);
    expect(html).toContain('7 of 30 runs are in this file in full');
    for (const r of detailed) expect(data.details[r.detail!]!.runId).toBe(r.runId);
  });

  it('stops adding detail at maxDetailBytes and cuts every value, however large the runs', async () => {
    const out = outDir();
    const big = 'y'.repeat(200_000);
    const trace: TraceEvent[] = [{ seq: 0, t: 0, type: 'run_started', taskId: 'big', agent: 'a', seed: 1 }];
    for (let i = 1; i <= 300; i++) trace.push({ seq: i, t: i, type: 'agent_log', message: big.slice(0, 2000) });
    const runs: FakeRun[] = Array.from({ length: 20 }, () => ({ taskId: 'big', status: 'failed', output: big, trace }));
    const { summary } = writeFakeEval(out, '01FAKEEVAL000000000000000D', runs);
    const limits = { maxDetailBytes: 1_000_000, maxValueChars: 500, maxEvents: 200 };
    const { data, bytes, file } = await report(out, summary.evalId, limits);
    expect(bytes).toBe(statSync(file).size);
    expect(data.bounds.detailBytes).toBeLessThanOrEqual(1_000_000);
    expect(data.details.length).toBeGreaterThan(0);
    expect(data.details.length).toBeLessThan(20);
    // The page is the budget plus rows and a fixed overhead, not 20 × 800 KB of logs and output.
    expect(bytes).toBeLessThan(1_000_000 + 150_000);
    for (const d of data.details) {
      expect(d.output!.length).toBeLessThan(530);
      expect(d.timeline.length).toBeLessThanOrEqual(201);
      expect(d.timeline.every((e) => e.kind !== 'log' || e.text.length < 530)).toBe(true);
    }
  });

  it('costs a bounded number of bytes per run for the rows', async () => {
    // What each run adds, apart from the page's fixed part (its style sheet and script).
    const pageOf = async (n: number) => {
      const out = outDir();
      const runs: FakeRun[] = Array.from({ length: n }, (_, i) => ({ taskId: `suite/task-${i % 40}`, status: i % 4 === 0 ? 'failed' : 'passed', trial: Math.floor(i / 40) }));
      const { summary } = writeFakeEval(out, '01FAKEEVAL000000000000000E', runs);
      return report(out, summary.evalId, { maxDetailRuns: 0 });
    };
    const { data, bytes } = await pageOf(1000);
    expect(data.runs).toHaveLength(1000);
    expect(data.details).toHaveLength(0);
    expect(bytes / 1000).toBeLessThan(210);
    const twice = await pageOf(2000);
    expect((twice.bytes - bytes) / 1000).toBeLessThan(160);
  });
});

describe('writeReport', () => {
  it('writes <out>/evals/<evalId>/report.html by default, or where it is told', async () => {
    const out = outDir();
    const { summary } = writeFakeEval(out, '01FAKEEVAL000000000000000F', [{ taskId: 'x', status: 'passed' }]);
    const written = await writeReport({ outDir: out });
    expect(written).toMatchObject({ file: join(out, 'evals', summary.evalId, 'report.html'), evalId: summary.evalId, runs: 1, detailed: 1 });
    const other = join(tmp.dir, 'elsewhere', 'page.html');
    expect((await writeReport({ outDir: out, output: other })).file).toBe(other);
    expect(existsSync(other)).toBe(true);
  });

  it('reads a real eval: the diagnosis of every run, the failing runs first', async () => {
    const out = outDir();
    const summary = await runEval({ paths: ['fixtures/eval/quick.tasks.mjs'], agent: 'fixtures/agents/report-mix.mjs', trials: 2, concurrency: 2, outDir: out });
    const { data } = await report(out, summary.evalId);
    expect(data.runs).toHaveLength(6);
    expect(data.codes).toEqual(expect.arrayContaining(['hallucinated_tool', 'gave_up_after_error', 'ungrounded_answer']));
    const failing = data.runs.filter((r) => r.status === 'failed');
    expect(failing.map((r) => data.tasks[r.task])).toEqual(['quick/b', 'quick/b']);
    expect(failing.map((r) => r.detail).sort()).toEqual([0, 1]);
    const detail = data.details[0]!;
    expect(detail.timeline.find((e) => e.kind === 'call')).toMatchObject({ name: 'incremnt', ok: false, error: { code: 'tool_not_found' } });
  });
});

describe('resolveEval', () => {
  const out = outDir();
  writeFakeEval(out, '01FAKEEVAL000000000000000G', [{ taskId: 'x', status: 'passed' }]);
  writeFakeEval(out, '01FAKEEVAL000000000000000H', [{ taskId: 'x', status: 'passed' }]);

  it('takes the latest eval when none is named', () => {
    expect(resolveEval(undefined, out).evalId).toBe('01FAKEEVAL000000000000000H');
  });

  it('takes an evalId, a unique prefix of one in any case, or an eval folder', () => {
    expect(resolveEval('01fakeeval000000000000000g', out).evalId).toBe('01FAKEEVAL000000000000000G');
    const folder = resolveEval(join(out, 'evals', '01FAKEEVAL000000000000000G'), '/nowhere');
    expect(folder).toEqual({ outDir: out, evalId: '01FAKEEVAL000000000000000G' });
  });

  it('says what is wrong when there is no such eval, or no eval at all', () => {
    expect(() => resolveEval('01NOPE', out)).toThrow(SiloError);
    expect(() => resolveEval('01NOPE', out)).toThrow(/^no eval 01NOPE in .*evals; give an evalId, a unique prefix or suffix of one \(see `silo ls`\), or an eval folder$/);
    expect(() => resolveEval('01FAKE', out)).toThrow(/01FAKE matches 2 evals \(.*\); give more of the evalId/);
    expect(() => resolveEval(undefined, join(tmp.dir, 'empty'))).toThrow(/^no evals in .*; run one with `silo eval <tasks> --agent <file>`$/);
  });
});

describe('reportLimits', () => {
  it('fills in the defaults and refuses caps that are not positive integers (no detail at all is allowed)', () => {
    expect(reportLimits({ maxDetailRuns: 0 }).maxDetailRuns).toBe(0);
    expect(reportLimits().maxValueChars).toBe(1000);
    expect(() => reportLimits({ maxValueChars: 0 })).toThrow(/maxValueChars must be an integer >= 1 \(got 0\)/);
    expect(() => reportLimits({ maxDetailBytes: 1.5 })).toThrow(SiloError);
  });
});
