/**
 * The eval's reports: the table people read (a row per task, then the totals), and the JUnit XML
 * CI reads (well-formed whatever the task ids and check messages hold, a testcase per counted
 * run, failed checks in the failure message, runs with no grade as errors).
 */
import { describe, expect, it } from 'vitest';
import { junitReport, tableReport } from '../../src/eval/reporters.js';
import { Tally } from '../../src/eval/tally.js';
import type { Style } from '../../src/inspect/style.js';
import type { EvalRunLine, EvalSummary } from '../../src/types.js';

const plain: Style = {
  enabled: false,
  red: (s) => s,
  green: (s) => s,
  yellow: (s) => s,
  cyan: (s) => s,
  dim: (s) => s,
  bold: (s) => s,
};

const NASTY = 'esc&pe/<b>"quoted" it\u0001\u001b[31m';

let seq = 0;
function line(taskId: string, trial: number, status: EvalRunLine['status'], extra: Partial<EvalRunLine> = {}): EvalRunLine {
  return {
    runId: `01RUN${String(seq++).padStart(21, '0')}`,
    taskId,
    trial,
    status,
    score: status === 'error' ? null : status === 'passed' ? 1 : 0,
    termination: status === 'error' ? 'crashed' : 'returned',
    durationMs: 1234,
    ...extra,
  };
}

/** A summary built the way runEval builds it: from the same lines through a Tally. */
function summaryOf(taskIds: string[], lines: EvalRunLine[], trials: number, status: EvalSummary['status'] = 'completed'): EvalSummary {
  const tally = new Tally(taskIds);
  for (const l of lines) tally.add(l);
  return {
    version: 1,
    evalId: '01EVAL0000000000000000000',
    status,
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:00:05.000Z',
    durationMs: 5000,
    agent: '/agents/a.mjs',
    trials,
    options: { taskFiles: ['/t/tasks.ts'], agent: '/agents/a.mjs', trials, task: [], tag: [], limits: {}, retries: 2, reuseWorkers: false },
    ...tally.stats(trials),
  };
}

const LINES: EvalRunLine[] = [
  line('helpdesk/close', 0, 'passed'),
  line('helpdesk/close', 1, 'passed'),
  line('helpdesk/assign', 0, 'failed', {
    failed: [{ name: 't7 assigned to u4', message: 'expected "u4" & got <null>' }, { name: 'other tickets unchanged' }],
  }),
  line('helpdesk/assign', 1, 'passed'),
  line(NASTY, 0, 'failed', { failed: [{ name: NASTY, message: `bad ${NASTY}` }] }),
  line(NASTY, 1, 'error', { retried: true, error: { code: 'crashed', message: 'worker died' } }),
  line(NASTY, 1, 'error', { error: { code: 'crashed', message: 'the worker <died> & "left"\u0007' } }),
  line('helpdesk/cancelled', 0, 'error', { termination: 'cancelled', error: { code: 'cancelled', message: 'the rollout was cancelled' } }),
];
const TASKS = ['helpdesk/close', 'helpdesk/assign', NASTY, 'helpdesk/cancelled'];

describe('tableReport', () => {
  const summary = summaryOf(TASKS, LINES, 2);
  const table = tableReport(summary, plain);
  const rows = table.split('\n');

  it('has a header, then one row per task in summary order', () => {
    expect(rows[0]).toMatch(/^task\s+runs\s+errors\s+pass rate\s+pass@2\s+pass\^2\s+score\s+p50\s+p95/);
    for (const [i, taskId] of TASKS.entries()) expect(rows[i + 1]!.startsWith(taskId)).toBe(true);
  });

  it('shows each task’s graded runs, pass rate, pass@k and pass^k at the largest k, and the flaky flag', () => {
    const close = rows.find((r) => r.startsWith('helpdesk/close'))!;
    expect(close).toMatch(/2\/2\s+100%\s+1\.00\s+1\.00\s+1\.00\s+1\.2s\s+1\.2s$/);
    const assign = rows.find((r) => r.startsWith('helpdesk/assign'))!;
    expect(assign).toMatch(/1\/2\s+50\.0%\s+1\.00\s+0\.00\s+0\.50\s+1\.2s\s+1\.2s\s+flaky$/);
    const nasty = rows.find((r) => r.startsWith(NASTY))!;
    expect(nasty).toMatch(/0\/1\s+1\s+0%/);
    const cancelled = rows.find((r) => r.startsWith('helpdesk/cancelled'))!;
    expect(cancelled).toMatch(/0\/0\s+–\s+–\s+–\s+–\s+–\s+–$/);
  });

  it('ends with a totals line: runs, passed, failed, errors, retries, pass rate with its 95% interval', () => {
    const totals = rows.find((r) => /^\d+ runs · /.test(r))!;
    expect(totals).toBeDefined();
    expect(totals).toMatch(/^6 runs · 3 passed · 2 failed · 1 error · 1 retried · pass rate 60\.0% \(95% CI \d+\.\d%–\d+\.\d%\) · 5\.0s$/);
    expect(table).toContain(summary.evalId);
  });

  it('says when the eval did not complete', () => {
    const cancelled = tableReport(summaryOf(TASKS, LINES, 2, 'cancelled'), plain);
    expect(cancelled).toMatch(/ · cancelled$/m);
    expect(table).not.toMatch(/cancelled$/m);
  });

  it('keeps every column aligned when a task has errors: they get a column of their own', () => {
    // Right-aligned columns end at the same place in the header and in every row.
    const column = (r: string, word: string) => r.indexOf(word) + word.length;
    expect(column(rows[0]!, 'pass rate')).toBe(column(rows.find((r) => r.startsWith('helpdesk/close'))!, '100%'));
    expect(column(rows[0]!, 'pass rate')).toBe(column(rows.find((r) => r.startsWith(NASTY))!, '0%'));
    expect(column(rows[0]!, 'runs')).toBe(column(rows.find((r) => r.startsWith(NASTY))!, '0/1'));
    // Without errors there is no errors column.
    expect(tableReport(summaryOf(['a'], [line('a', 0, 'passed')], 1), plain).split('\n')[0]).not.toContain('errors');
  });

  it('shows passes with an ungrounded answer as suspicious, per task and in the totals', () => {
    const lines = [line('a', 0, 'passed', { suspicious: 'the agent answered without a single successful tool call' }), line('a', 1, 'passed'), line('b', 0, 'passed')];
    const out = tableReport(summaryOf(['a', 'b'], lines, 2), plain).split('\n');
    expect(out.find((r) => r.startsWith('a '))).toMatch(/1 suspicious$/);
    expect(out.find((r) => r.startsWith('b '))).not.toMatch(/suspicious/);
    expect(out.find((r) => /^\d+ runs · /.test(r))).toMatch(/^3 runs · 3 passed \(1 suspicious\) · 0 failed/);
    // (one wording for both kinds of ungrounded answer: no successful call, or a claim after only reading)
    expect(out.at(-1)).toBe('suspicious: passed, but the answer had nothing behind it (ungrounded_answer: no successful tool call, or an action claimed while the world did not change; silo show says which); --strict fails such runs');
  });

  it('prints dashes, not NaN, for an eval with no graded run', () => {
    const empty = tableReport(summaryOf(['t'], [], 1), plain);
    expect(empty).not.toMatch(/NaN|undefined|null/);
    expect(empty).toMatch(/0 runs · 0 passed · 0 failed · 0 errors · pass rate –/);
  });
});

/** Checks that `xml` is well-formed enough for a CI parser: balanced tags, valid escapes, no raw control characters. */
function checkWellFormed(xml: string): void {
  // eslint-disable-next-line no-control-regex
  expect(xml).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/);
  // Every & starts an entity.
  expect(xml.replace(/&(amp|lt|gt|quot|apos|#\d+);/g, '')).not.toContain('&');
  const body = xml.replace(/^<\?xml [^?]*\?>\n/, '');
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(body); m; m = tag.exec(body)) {
    // Text between tags holds no raw < or >.
    expect(body.slice(last, m.index)).not.toMatch(/[<>]/);
    last = tag.lastIndex;
    const [, closing, name, , selfClosing] = m;
    if (closing) expect(stack.pop(), `closing </${name}>`).toBe(name);
    else if (!selfClosing) stack.push(name!);
  }
  expect(body.slice(last).trim()).toBe('');
  expect(stack).toEqual([]);
}

/** Attribute values of every `<name ...>` tag, unescaped. */
function attrs(xml: string, name: string): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  for (const m of xml.matchAll(new RegExp(`<${name}((?:\\s+[\\w:-]+="[^"]*")*)\\s*/?>`, 'g'))) {
    const record: Record<string, string> = {};
    for (const a of m[1]!.matchAll(/([\w:-]+)="([^"]*)"/g)) {
      record[a[1]!] = a[2]!
        .replace(/&#10;/g, '\n')
        .replace(/&quot;/g, '"')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&');
    }
    out.push(record);
  }
  return out;
}

describe('junitReport', () => {
  const summary = summaryOf(TASKS, LINES, 2);
  const xml = junitReport(summary, LINES);

  it('is well-formed XML: a declaration, balanced tags, escaped &<>", control characters removed', () => {
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n')).toBe(true);
    checkWellFormed(xml);
    expect(xml).toContain('esc&amp;pe/&lt;b&gt;&quot;quoted&quot; it[31m');
  });

  it('has a testsuite per task with its counts, and totals on testsuites', () => {
    expect(attrs(xml, 'testsuites')).toEqual([
      // The suites' times added up (runs overlap: the wall time is in summary.json).
      { name: `silo eval ${summary.evalId}`, tests: '6', failures: '2', errors: '1', time: '7.404' },
    ]);
    const suites = attrs(xml, 'testsuite');
    expect(suites.map((s) => s.name)).toEqual(['helpdesk/close', 'helpdesk/assign', 'esc&pe/<b>"quoted" it[31m', 'helpdesk/cancelled']);
    expect(suites.map((s) => [s.tests, s.failures, s.errors])).toEqual([
      ['2', '0', '0'],
      ['2', '1', '0'],
      ['2', '1', '1'],
      ['0', '0', '0'],
    ]);
    expect(suites[0]!.time).toBe('2.468');
  });

  it('has one testcase per counted run: retried and cancelled runs are left out', () => {
    const cases = attrs(xml, 'testcase');
    expect(cases).toHaveLength(6);
    expect(cases.map((c) => c.name)).toEqual([
      'helpdesk/close trial 0',
      'helpdesk/close trial 1',
      'helpdesk/assign trial 0',
      'helpdesk/assign trial 1',
      'esc&pe/<b>"quoted" it[31m trial 0',
      'esc&pe/<b>"quoted" it[31m trial 1',
    ]);
    expect(cases.every((c) => c.time === '1.234')).toBe(true);
    expect(xml).not.toContain('worker died');
    expect(xml).not.toContain('was cancelled');
  });

  it('puts every failed check, with its message, in the failure message', () => {
    const failures = attrs(xml, 'failure');
    expect(failures).toHaveLength(2);
    expect(failures[0]!.message).toBe('t7 assigned to u4: expected "u4" & got <null>; other tickets unchanged');
    expect(failures[0]!.type).toBe('returned');
    expect(failures[1]!.message).toBe('esc&pe/<b>"quoted" it[31m: bad esc&pe/<b>"quoted" it[31m');
    // the body names the run and how to see it
    expect(xml).toMatch(/<failure [^>]*>run 01RUN\d+ · termination returned · score 0\.00\nsilo show 01RUN\d+<\/failure>/);
  });

  it('reports a run with no grade as an <error> with its code and message', () => {
    const errors = attrs(xml, 'error');
    expect(errors).toEqual([{ message: 'crashed: the worker <died> & "left"', type: 'crashed' }]);
  });

  it('gives scores to two decimals', () => {
    const third = line('t', 0, 'failed', { score: 1 / 3, failed: [{ name: 'b' }] });
    expect(junitReport(summaryOf(['t'], [third], 1), [third])).toContain('score 0.33\n');
  });

  it('adds a <system-out> note to a passed run whose answer was ungrounded', () => {
    const lucky = line('t', 0, 'passed', { suspicious: 'the agent answered without a single successful tool call' });
    const out = junitReport(summaryOf(['t'], [lucky], 1), [lucky]);
    checkWellFormed(out);
    expect(out).toContain(`<system-out>suspicious: passed, but ungrounded_answer: the agent answered without a single successful tool call (--strict fails it)\nsilo show ${lucky.runId}</system-out>`);
    expect(out).not.toContain('<failure');
  });

  it('turns passed runs into empty testcases', () => {
    expect(xml).toMatch(/<testcase classname="helpdesk\/close" name="helpdesk\/close trial 0" time="1\.234"\/>/);
  });

  it('orders a suite’s testcases by trial, whatever order the runs ended in', () => {
    const out = junitReport(summaryOf(['t'], [line('t', 1, 'passed'), line('t', 0, 'passed')], 2), [line('t', 1, 'passed'), line('t', 0, 'passed')]);
    expect(attrs(out, 'testcase').map((c) => c.name)).toEqual(['t trial 0', 't trial 1']);
  });

  it('keeps only the latest run of a (task, trial) pair that a resume ran again', () => {
    const lost = line('t', 0, 'failed', { termination: 'crashed' });
    const rerun = line('t', 0, 'passed');
    const out = junitReport(summaryOf(['t'], [rerun], 1), [lost, rerun]);
    expect(attrs(out, 'testcase')).toHaveLength(1);
    expect(attrs(out, 'testsuite')[0]).toMatchObject({ tests: '1', failures: '0' });
    expect(out).not.toContain('<failure');
  });

  it('reads the runs from any iterable (the eval streams them from disk)', () => {
    function* lines(): Generator<EvalRunLine> {
      yield* LINES;
    }
    expect(junitReport(summary, lines())).toBe(xml);
  });
});
