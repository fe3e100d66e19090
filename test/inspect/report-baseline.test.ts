/**
 * The HTML report of an eval that has a baseline (`silo eval --baseline`): each task's change
 * against the baseline next to its pass rate, computed again from the baseline's summary when it
 * is still there, from the stored verdicts when it is gone; drawn in Chromium (skipped, as the
 * report's browser test is, where there is none).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { withBaseline } from '../../src/eval/compare.js';
import { EvalStore } from '../../src/eval/store.js';
import type { ReportData } from '../../src/inspect/report-data.js';
import { writeReport } from '../../src/inspect/report.js';
import { tempDir } from '../helpers.js';
import { writeFakeEval, type FakeRun } from './fake-eval.js';

const tmp = tempDir('silo-report-baseline-');
afterAll(() => tmp.remove());

const CHROMIUM = process.env.SILO_CHROMIUM ?? '/usr/bin/chromium';
const noBrowser = !existsSync(CHROMIUM) && !process.env.CI;

const trials = (taskId: string, passed: number, failed: number): FakeRun[] =>
  [...Array<'passed'>(passed).fill('passed'), ...Array<'failed'>(failed).fill('failed')].map((status, trial) => ({ taskId, status, trial }));

/** A baseline where t/a always passed and t/b half the time; an eval where t/a always fails, t/b as before, and a new task t/c. */
async function evalWithBaseline(out: string): Promise<void> {
  const base = writeFakeEval(out, 'BASE', [...trials('t/a', 8, 0), ...trials('t/b', 4, 4)], { runFolders: false }).summary;
  const now = writeFakeEval(out, 'NOW', [...trials('t/a', 0, 8), ...trials('t/b', 4, 4), ...trials('t/c', 2, 0)]).summary;
  const store = new EvalStore(out, 'NOW');
  await store.writeSummary(withBaseline({ ...now, trials: 8 }, { ...base, trials: 8 }));
}

function embedded(file: string): ReportData {
  const html = readFileSync(file, 'utf8');
  const json = /<script type="application\/json" id="silo-data">([\s\S]*?)<\/script>/.exec(html)![1]!;
  return JSON.parse(json) as ReportData;
}

describe('the report of an eval with a baseline', () => {
  it("carries each task's change and verdict, aligned with the summary's tasks", async () => {
    const out = join(tmp.dir, 'found');
    await evalWithBaseline(out);
    const { file } = await writeReport({ outDir: out, evalId: 'NOW' });
    const data = embedded(file);
    expect(data.summary.baseline).toMatchObject({ evalId: 'BASE', regressed: ['t/a'], improved: [] });
    expect(data.baseline).toMatchObject({ evalId: 'BASE', found: true, regressed: ['t/a'] });
    expect(data.baseline!.tasks).toEqual([
      { was: 1, delta: -1, pHolm: expect.any(Number) as number, verdict: 'regressed' },
      { was: 0.5, delta: 0, pHolm: 1, verdict: 'same' },
      null,
    ]);
    expect(readFileSync(file, 'utf8')).toMatch(/<p id="baseline">Against baseline <code>BASE<\/code>: mean pass rate per task −50\.0 pts/);
  });

  it('keeps the stored verdicts when the baseline eval is gone', async () => {
    const out = join(tmp.dir, 'gone');
    await evalWithBaseline(out);
    rmSync(join(out, 'evals', 'BASE'), { recursive: true });
    const data = embedded((await writeReport({ outDir: out, evalId: 'NOW' })).file);
    expect(data.baseline).toMatchObject({ found: false, regressed: ['t/a'] });
    expect(data.baseline!.tasks.map((t) => t?.verdict)).toEqual(['regressed', 'same', 'same']);
  });

  it.skipIf(noBrowser)('shows the change next to each rate in the task table', async () => {
    const out = join(tmp.dir, 'browser');
    await evalWithBaseline(out);
    const { file } = await writeReport({ outDir: out, evalId: 'NOW' });
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'], headless: true });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
      await page.waitForSelector('#task-table tbody tr');
      const head = await page.locator('#task-table thead th').allInnerTexts();
      expect(head.slice(0, 4)).toEqual(['task', 'runs', 'pass rate', 'vs baseline']);
      const rows = await page.locator('#task-table tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 4).map((td) => td.textContent)));
      expect(rows).toEqual([
        ['t/a', '8', '0%', '−100 pts regressed'],
        ['t/b', '8', '50%', '±0 pts same'],
        ['t/c', '2', '100%', 'not in baseline'],
      ]);
      expect(await page.locator('#task-table tbody tr').first().locator('td.change').getAttribute('title')).toMatch(/^baseline 100%, p \(Holm\) /);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
