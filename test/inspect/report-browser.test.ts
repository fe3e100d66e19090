/**
 * The HTML report in a real browser: Debian's Chromium driven by playwright-core, the page opened
 * from file://. It loads with no console error and no request, its filters change the list, a run
 * opens on its timeline, hostile output stays text, and 10,000 runs are paged. A screenshot is
 * saved and its path printed.
 *
 * Chromium is never downloaded: set SILO_CHROMIUM to use another binary. Without one the tests
 * are skipped with a message, except in CI (env CI set), where that is a failure.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEval } from '../../src/index.js';
import { writeReport } from '../../src/inspect/report.js';
import type { TraceEvent } from '../../src/types.js';
import { tempDir } from '../helpers.js';
import { writeFakeEval, type FakeRun } from './fake-eval.js';

const CHROMIUM = process.env.SILO_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const missing = !existsSync(CHROMIUM);
const inCi = Boolean(process.env.CI);
/** Overwritten on every run, and kept afterwards so it can be looked at. */
const SCREENSHOT = join(tmpdir(), 'silo-report-browser', 'report.png');

if (missing && !inCi) {
  console.warn(`report-browser.test.ts: skipped, no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set SILO_CHROMIUM)`);
}

/** What a page did that a self-contained report must not do. */
interface Trouble {
  errors: string[];
  requests: string[];
  dialogs: string[];
}

describe.skipIf(missing && !inCi)('the HTML report in Chromium', () => {
  const tmp = tempDir('silo-report-browser-');
  let browser: Browser;
  let small: string;
  let large: string;
  let changed: string;
  let conversed: string;

  beforeAll(async () => {
    if (missing) throw new Error(`CI needs Chromium at ${CHROMIUM} for the browser test of the HTML report: install it with \`apt-get install -y chromium\` (.ci/run does)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    // A real eval: quick/a passes, quick/b fails (hallucinated tool, gave up), quick/c passes with hostile output.
    const out = join(tmp.dir, 'real');
    const summary = await runEval({ paths: ['fixtures/eval/quick.tasks.mjs'], agent: 'fixtures/agents/report-mix.mjs', trials: 3, concurrency: 3, outDir: out });
    small = (await writeReport({ outDir: out, evalId: summary.evalId })).file;
    // 10,000 runs of 50 tasks, rows only.
    const runs: FakeRun[] = Array.from({ length: 10_000 }, (_, i) => ({ taskId: `load/task-${i % 50}`, status: i % 7 === 0 ? 'failed' : 'passed', trial: Math.floor(i / 50) }));
    const fake = join(tmp.dir, 'large');
    writeFakeEval(fake, '01FAKEEVAL0000000000010000', runs, { runFolders: false });
    large = (await writeReport({ outDir: fake })).file;
    // One run whose trace records the changes of each call (deep-diff records on tool_result).
    const changes = [{ kind: 'E', path: ['tickets', 't1', 'status'], lhs: 'open', rhs: 'closed' }];
    const trace = [
      { seq: 0, t: 0, type: 'run_started', taskId: 'desk/close', agent: 'a', seed: 1 },
      { seq: 1, t: 3, type: 'tool_call', callId: 1, name: 'update_ticket', input: { ticket_id: 't1', status: 'closed' } },
      { seq: 2, t: 5, type: 'tool_result', callId: 1, durationMs: 2, ok: true, value: { id: 't1' }, changes },
      { seq: 3, t: 9, type: 'agent_returned', output: 'Closed t1.' },
    ] as TraceEvent[];
    const withChanges = join(tmp.dir, 'changes');
    writeFakeEval(withChanges, '01FAKEEVAL00000000000CHANGE', [{ taskId: 'desk/close', status: 'failed', trace, diff: changes }]);
    changed = (await writeReport({ outDir: withChanges })).file;
    // One run with model calls through the gateway, its conversation in models.jsonl (a hostile answer included).
    const modelTrace = [
      { seq: 0, t: 0, type: 'run_started', taskId: 'desk/ask', agent: 'a', seed: 1 },
      { seq: 1, t: 4, type: 'model_call', requestId: 1, provider: 'openai', endpoint: 'chat/completions', model: 'gpt-x', stream: false, status: 200, durationMs: 812, queuedMs: 0, usage: { inputTokens: 120, outputTokens: 9 } },
      { seq: 2, t: 900, type: 'agent_returned', output: 'done' },
    ] as TraceEvent[];
    const withModels = join(tmp.dir, 'models');
    const { runIds } = writeFakeEval(withModels, '01FAKEEVAL000000000000MODEL', [{ taskId: 'desk/ask', status: 'failed', trace: modelTrace }]);
    const line = { requestId: 1, seq: 1, actor: 'agent', endpoint: 'chat/completions', status: 200, request: { messages: [{ role: 'user', content: 'Which tickets are open?' }] }, response: { choices: [{ message: { content: '<img src=x onerror=alert(1)> none' } }] } };
    writeFileSync(join(withModels, 'runs', runIds[0]!, 'models.jsonl'), `${JSON.stringify(line)}\n`);
    conversed = (await writeReport({ outDir: withModels })).file;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    tmp.remove();
  });

  /** Opens a report from disk, recording errors, requests beyond the file itself, and dialogs. */
  async function open(file: string): Promise<{ page: Page; trouble: Trouble }> {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const url = pathToFileURL(file).href;
    const trouble: Trouble = { errors: [], requests: [], dialogs: [] };
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') trouble.errors.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => trouble.errors.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => trouble.errors.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
    page.on('request', (r) => {
      if (r.url() !== url) trouble.requests.push(r.url());
    });
    page.on('dialog', (d) => {
      trouble.dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(url, { waitUntil: 'load' });
    return { page, trouble };
  }

  const rowTexts = (page: Page) => page.locator('#runs tbody tr').allInnerTexts();

  /** Picks the option of a filter whose label starts with `label`. */
  async function pick(page: Page, select: string, label: string): Promise<void> {
    const value = await page.locator(`${select} option`, { hasText: label }).first().getAttribute('value');
    await page.selectOption(select, value!);
  }

  it('loads from file:// with no console error, no request and no dialog', async () => {
    const { page, trouble } = await open(small);
    await page.waitForSelector('#runs tbody tr');
    expect(await page.title()).toMatch(/^Silo eval /);
    expect(await page.locator('#runs tbody tr').count()).toBe(9);
    expect(await page.locator('#task-table tbody tr').count()).toBe(3);
    expect(await page.locator('#chart-tasks').count()).toBe(1);
    expect(trouble).toEqual({ errors: [], requests: [], dialogs: [] });
    await page.close();
  });

  it('narrows the list with "failed only", a diagnosis and a task', async () => {
    const { page, trouble } = await open(small);
    expect(await rowTexts(page)).toHaveLength(9);

    await page.check('#filter-failed');
    const failed = await rowTexts(page);
    expect(failed).toHaveLength(3);
    expect(failed.every((t) => t.includes('quick/b') && t.includes('failed'))).toBe(true);
    expect(await page.textContent('#run-count')).toBe('3 of 9 runs');

    await page.uncheck('#filter-failed');
    await pick(page, '#filter-code', 'ungrounded_answer');
    const ungrounded = await rowTexts(page);
    expect(ungrounded).toHaveLength(3);
    expect(ungrounded.every((t) => t.includes('quick/c'))).toBe(true);

    await page.selectOption('#filter-code', '');
    await pick(page, '#filter-task', 'quick/a');
    const taskA = await rowTexts(page);
    expect(taskA).toHaveLength(3);
    expect(taskA.every((t) => t.includes('quick/a') && t.includes('passed'))).toBe(true);

    // Filters combine: quick/a has no failed run.
    await page.check('#filter-failed');
    expect(await rowTexts(page)).toEqual(['No run matches these filters.']);
    expect(trouble.errors).toEqual([]);
    await page.close();
  });

  it('opens a run on its diagnosis, timeline and checks', async () => {
    const { page, trouble } = await open(small);
    await page.check('#filter-failed');
    await page.locator('#runs tbody tr').first().click();
    const detail = page.locator('#run-detail');
    await expect.poll(() => detail.locator('#timeline').count()).toBe(1);
    const timeline = await detail.locator('#timeline').innerText();
    expect(timeline).toContain('#1 incremnt');
    expect(timeline).toContain('{"by":"<b>1</b>"}');
    expect(timeline).toContain('→ tool_not_found');
    expect(await detail.locator('#diagnosis').innerText()).toMatch(/hallucinated_tool[\s\S]*gave_up_after_error/);
    // A finding points at its call by the number the timeline prints, not by the trace's seq.
    expect(await detail.locator('#diagnosis a.seq').allInnerTexts()).toContain('call #1');
    expect(await detail.locator('#checks').innerText()).toContain('the agent answered');
    expect(page.url()).toMatch(/#run=[0-9A-Z]{26}$/);
    expect(trouble.errors).toEqual([]);
    await page.close();
  });

  it('marks a pass whose answer had nothing behind it as suspicious: in the list, the task table and the run', async () => {
    // quick/c answers without a single tool call, and passes: three suspicious passes.
    const { page, trouble } = await open(small);
    const tagged = (await rowTexts(page)).filter((row) => row.includes('⚠ suspicious'));
    expect(tagged).toHaveLength(3);
    expect(tagged.every((row) => row.includes('quick/c') && row.includes('passed'))).toBe(true);
    const taskRow = await page.locator('#task-table tbody tr', { hasText: 'quick/c' }).innerText();
    expect(taskRow.trim().endsWith('3')).toBe(true);
    expect(await page.locator('.card.status-error', { hasText: 'suspicious passes' }).innerText()).toMatch(/^3\s+suspicious passes$/);
    await page.locator('#runs tbody tr', { hasText: '⚠ suspicious' }).first().click();
    await expect.poll(() => page.locator('#suspicious').count()).toBe(1);
    expect(await page.locator('#suspicious').innerText()).toMatch(/^Passed, but the answer had nothing behind it \(ungrounded_answer: no successful tool call, or an action claimed while the world did not change; the diagnosis says which\)/);
    expect(await page.locator('#diagnosis a.seq').allInnerTexts()).toEqual(['the answer']);
    expect(trouble.errors).toEqual([]);
    await page.close();
  });

  it('shows the changes each call made, and the run\'s changes to the world', async () => {
    const { page, trouble } = await open(changed);
    await page.locator('#runs tbody tr').first().click();
    const call = page.locator('#timeline tr.event-call');
    await expect.poll(() => call.count()).toBe(1);
    // An eval of one run says so in the singular.
    expect(await page.textContent('#run-count')).toBe('1 of 1 run');
    expect(await call.locator('ul.changes').innerText()).toBe('~ tickets.t1.status: "open" → "closed"');
    expect(await page.locator('#run-detail > ul.changes').innerText()).toBe('~ tickets.t1.status: "open" → "closed"');
    expect(trouble).toEqual({ errors: [], requests: [], dialogs: [] });
    await page.close();
  });

  it('shows a run’s model calls in the timeline and its conversation, as text', async () => {
    const { page, trouble } = await open(conversed);
    await page.locator('#runs tbody tr').first().click();
    await page.waitForSelector('#conversation');
    expect(await page.locator('#timeline tr.event-model').innerText()).toContain('model gpt-x · openai chat/completions #1 · HTTP 200 · 120 in / 9 out · 812 ms');
    expect(await page.locator('#conversation').innerText()).toMatch(/user\s+Which tickets are open\?\s+model #1\s+<img src=x onerror=alert\(1\)> none/);
    expect(await page.locator('#run-detail img').count()).toBe(0);
    expect(trouble).toEqual({ errors: [], requests: [], dialogs: [] });
    await page.close();
  });

  it('shows hostile output and logs as text, running none of it', async () => {
    const { page, trouble } = await open(small);
    await pick(page, '#filter-task', 'quick/c');
    await page.locator('#runs tbody tr').first().click();
    await page.waitForSelector('#output');
    expect(await page.textContent('#output')).toBe('</script><script>document.title="pwned";alert(1)</script><!--');
    expect(await page.locator('#timeline').innerText()).toContain('<img src=x onerror=');
    expect(await page.locator('#run-detail img, #run-detail script').count()).toBe(0);
    expect(await page.title()).not.toContain('pwned');
    expect(trouble).toEqual({ errors: [], requests: [], dialogs: [] });

    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(readFileSync(SCREENSHOT).subarray(1, 4).toString()).toBe('PNG');
    console.log(`report-browser.test.ts: screenshot saved to ${SCREENSHOT}`);
    await page.close();
  });

  it('pages through 10,000 runs, 50 at a time, and filters all of them', async () => {
    const started = Date.now();
    const { page, trouble } = await open(large);
    await page.waitForSelector('#runs tbody tr');
    // A generous bound: the point is that 10,000 runs do not become 10,000 table rows.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await page.locator('#runs tbody tr').count()).toBe(50);
    expect(await page.textContent('#runs-page')).toBe('page 1 of 200');
    const first = await rowTexts(page);
    await page.click('#runs-next');
    expect(await page.textContent('#runs-page')).toBe('page 2 of 200');
    expect(await rowTexts(page)).not.toEqual(first);

    await page.check('#filter-failed');
    expect(await page.textContent('#run-count')).toBe('1429 of 10000 runs');
    expect(await page.textContent('#runs-page')).toBe('page 1 of 29');

    // A run without embedded detail says how to see it.
    await page.locator('#runs tbody tr').first().click();
    expect(await page.textContent('#no-detail')).toMatch(/See it with silo show 01FAKERUN/);
    expect(trouble).toEqual({ errors: [], requests: [], dialogs: [] });
    await page.close();
  });
});
