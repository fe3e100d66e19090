/**
 * `silo report` and `silo eval --report` as a user runs them: the built binary in a child process.
 * Which eval, where the page goes, what is printed where, one-line errors, and a cancelled eval.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EvalSummary } from '../../src/types.js';
import { tempDir } from '../helpers.js';
import { writeFakeEval } from '../inspect/fake-eval.js';
import { BIN, PLAIN_ENV, runSilo } from './silo.js';

const tmp = tempDir('silo-cli-report-');
afterAll(() => tmp.remove());

let outs = 0;
function outDir(): string {
  return join(tmp.dir, `out-${outs++}`);
}

const silo = (...args: string[]) => runSilo(args);
const QUICK = 'fixtures/eval/quick.tasks.mjs';
const MIX = 'fixtures/agents/report-mix.mjs';
const FIRST = '01FAKEEVAL00000000000000A1';
const SECOND = '01FAKEEVAL00000000000000B2';

/** An out folder with two hand-written evals; SECOND is the latest. */
function twoEvals(): string {
  const out = outDir();
  writeFakeEval(out, FIRST, [{ taskId: 'first/task', status: 'passed' }]);
  writeFakeEval(out, SECOND, [
    { taskId: 'second/task', status: 'failed' },
    { taskId: 'second/task', status: 'passed', trial: 1 },
  ]);
  return out;
}

function summaryIn(html: string): EvalSummary {
  const json = /<script type="application\/json" id="silo-data">([^<]*)<\/script>/.exec(html)![1]!;
  return (JSON.parse(json) as { summary: EvalSummary }).summary;
}

describe('silo report', () => {
  it('writes the latest eval to <out>/evals/<evalId>/report.html and prints the path', async () => {
    const out = twoEvals();
    const r = await silo('report', '--out', out);
    expect(r.code).toBe(0);
    const file = join(out, 'evals', SECOND, 'report.html');
    expect(r.stdout).toBe(`${file}\n`);
    expect(r.stderr).toBe('');
    expect(summaryIn(readFileSync(file, 'utf8')).evalId).toBe(SECOND);
  });

  it('takes an evalId prefix and --output', async () => {
    const out = twoEvals();
    const file = join(tmp.dir, 'pages', 'first.html');
    const r = await silo('report', FIRST.slice(0, 25).toLowerCase(), '--out', out, '--output', file);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${file}\n`);
    expect(summaryIn(readFileSync(file, 'utf8')).evalId).toBe(FIRST);
    expect(existsSync(join(out, 'evals', FIRST, 'report.html'))).toBe(false);
  });

  it('takes an eval folder', async () => {
    const out = twoEvals();
    const r = await silo('report', join(out, 'evals', FIRST));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${join(out, 'evals', FIRST, 'report.html')}\n`);
  });

  it('exits 2 with one line for an unknown eval, for no evals at all, and for a bad --details', async () => {
    const out = twoEvals();
    const cases: [string[], RegExp][] = [
      [['report', '01NOSUCHEVAL', '--out', out], /^silo: no eval 01NOSUCHEVAL in .*evals; give an evalId, a unique prefix or suffix of one \(see `silo ls`\), or an eval folder$/],
      [['report', '--out', join(tmp.dir, 'nothing-here')], /^silo: no evals in .*; run one with `silo eval <tasks> --agent <file>`$/],
      [['report', '--out', out, '--details', '-1'], /--details.*expected an integer >= 0, got '-1'/],
    ];
    for (const [args, message] of cases) {
      const r = await silo(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });

  it('puts only --details runs in full', async () => {
    const out = twoEvals();
    const r = await silo('report', SECOND, '--out', out, '--details', '1');
    expect(r.code).toBe(0);
    expect(readFileSync(r.stdout.trim(), 'utf8')).toContain('1 of 2 runs is in this file in full');
  });

  it('has --help that says what goes in the page', async () => {
    const r = await silo('report', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Usage: silo report \[options\] \[eval\]/);
    expect(r.stdout).toMatch(/--output <file>/);
    expect(r.stdout).toMatch(/needs no network/);
  });
});

describe('silo eval --report', () => {
  it('writes the report at the end and names it on stderr, leaving stdout to the table', async () => {
    const out = outDir();
    const r = await silo('eval', QUICK, '--agent', MIX, '--trials', '2', '--out', out, '--report');
    expect(r.code).toBe(1);
    const [evalId] = readdirSync(join(out, 'evals'));
    const file = join(out, 'evals', evalId!, 'report.html');
    expect(r.stderr).toContain(`HTML report written to ${file}\n`);
    expect(r.stdout).not.toContain('report.html');
    const summary = summaryIn(readFileSync(file, 'utf8'));
    expect(summary).toMatchObject({ evalId, status: 'completed', totals: { runs: 6, passed: 4, failed: 2 } });
  });

  it('writes the report of a cancelled eval too', async () => {
    const out = outDir();
    const child = spawn(process.execPath, [BIN, 'eval', QUICK, '--agent', 'fixtures/agents/hangs.mjs', '--concurrency', '2', '--timeout', '60000', '--out', out, '--report'], {
      env: PLAIN_ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const runs = join(out, 'runs');
    const deadline = Date.now() + 120_000;
    while (!existsSync(runs) || readdirSync(runs).length < 2) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the eval did not start: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const [evalId] = readdirSync(join(out, 'evals'));
    const file = join(out, 'evals', evalId!, 'report.html');
    expect(stderr).toContain(`HTML report written to ${file}`);
    expect(summaryIn(readFileSync(file, 'utf8')).status).toBe('cancelled');
  });
});
