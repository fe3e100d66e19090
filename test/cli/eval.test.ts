/**
 * `silo eval` as a user runs it: the built binary in a child process, with colours off. Exit
 * codes, reporters, where progress goes, one-line set-up errors, and Ctrl-C (exit 130, a summary
 * that says cancelled, no torn file).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EvalRunLine, EvalSummary } from '../../src/types.js';
import { tempDir } from '../helpers.js';
import { BIN, PLAIN_ENV as ENV, runSilo } from './silo.js';

const tmp = tempDir('silo-cli-eval-');
afterAll(() => tmp.remove());

let outs = 0;
function outDir(): string {
  return join(tmp.dir, `out-${outs++}`);
}

const HELPDESK = 'fixtures/helpdesk';
const QUICK = 'fixtures/eval/quick.tasks.mjs';
const SOLVER = 'fixtures/agents/helpdesk-solver.ts';
/** Passes 1 of the 6 helpdesk tasks (close-ticket). */
const HALLUCINATOR = 'fixtures/agents/hallucinator.ts';


const silo = (...args: string[]) => runSilo(args);

/** The one eval folder under `out`, and its summary. */
function theEval(out: string): { dir: string; summary: EvalSummary } {
  const evals = readdirSync(join(out, 'evals'));
  expect(evals).toHaveLength(1);
  const dir = join(out, 'evals', evals[0]!);
  return { dir, summary: JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as EvalSummary };
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Parses every JSON and JSONL file under `dir`; throws on the first torn one. Returns how many were read. */
function parseAll(dir: string): number {
  let n = 0;
  for (const file of filesUnder(dir)) {
    expect(file, 'a temporary file was left behind').not.toMatch(/\.tmp$/);
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.json')) JSON.parse(text);
    else if (file.endsWith('.jsonl')) for (const line of text.split('\n').filter((l) => l !== '')) JSON.parse(line);
    else continue;
    n++;
  }
  return n;
}

const PROGRESS = /^\d+\/\d+ · \d+ passed, \d+ failed, \d+ errors · \d+ running · /m;

describe('silo eval', () => {
  it('exits 0 when every run passes, with the table on stdout and progress on stderr only', async () => {
    const out = outDir();
    const r = await silo('eval', HELPDESK, '--agent', SOLVER, '--out', out);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^task\s+runs\s+pass rate\s+pass@1\s+pass\^1\s+score\s+p50\s+p95$/);
    expect(lines.filter((l) => /^helpdesk\/\S+\s+1\/1\s+100%/.test(l))).toHaveLength(6);
    expect(r.stdout).toMatch(/^6 runs · 6 passed · 0 failed · 0 errors · pass rate 100% \(95% CI/m);
    expect(r.stdout).not.toMatch(PROGRESS);
    expect(r.stdout).not.toContain('\u001b');
    expect(r.stderr).toMatch(PROGRESS);
    // Off a terminal, the progress ends on the finished state, once.
    const progress = r.stderr.split('\n').filter((l) => PROGRESS.test(l));
    expect(progress.at(-1)).toMatch(/^6\/6 · 6 passed, 0 failed, 0 errors · 0 running · \S+\/s · took \S+$/);
    expect(progress.filter((l) => l.startsWith('6/6 '))).toHaveLength(1);
    const { summary } = theEval(out);
    expect(summary).toMatchObject({ status: 'completed', trials: 1, totals: { runs: 6, passed: 6 } });
    expect(r.stdout).toContain(summary.evalId);
  });

  it('exits 1 when some runs fail', async () => {
    const out = outDir();
    const r = await silo('eval', HELPDESK, '--agent', HALLUCINATOR, '--out', out);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^6 runs · 1 passed · 5 failed · 0 errors · pass rate 16\.7%/m);
    expect(theEval(out).summary.totals).toMatchObject({ runs: 6, passed: 1, failed: 5 });
  });

  it('exits 0 with --min-pass-rate when the pass rate reaches it, and 1 when it does not', async () => {
    const [reached, missed] = await Promise.all([
      silo('eval', HELPDESK, '--agent', HALLUCINATOR, '--min-pass-rate', '0.15', '--out', outDir()),
      silo('eval', HELPDESK, '--agent', HALLUCINATOR, '--min-pass-rate', '0.5', '--out', outDir()),
    ]);
    expect(reached.code).toBe(0);
    expect(missed.code).toBe(1);
  });

  it('prints the summary as JSON on stdout with --reporter json, the same as summary.json', async () => {
    const out = outDir();
    const r = await silo('eval', QUICK, '--agent', 'fixtures/agents/plain.js', '--trials', '3', '--reporter', 'json', '--out', out);
    expect(r.code).toBe(0);
    const printed = JSON.parse(r.stdout) as EvalSummary;
    expect(printed).toEqual(theEval(out).summary);
    expect(printed).toMatchObject({ status: 'completed', trials: 3, totals: { runs: 9, passed: 9, retries: 0 } });
    expect(Object.keys(printed.tasks[0]!.passAtK)).toEqual(['1', '2', '3']);
  });

  it('writes JUnit XML to --output with --reporter junit, a testcase per run', async () => {
    const out = outDir();
    const file = join(tmp.dir, 'report.xml');
    const r = await silo('eval', HELPDESK, '--agent', HALLUCINATOR, '--reporter', 'junit', '--output', file, '--out', out);
    expect(r.code).toBe(1);
    const xml = readFileSync(file, 'utf8');
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')).toBe(true);
    expect(xml.trimEnd().endsWith('</testsuites>')).toBe(true);
    expect(xml.match(/<testcase /g)).toHaveLength(6);
    expect(xml.match(/<failure /g)).toHaveLength(5);
    expect(xml).toMatch(/<testsuites name="silo eval [0-9A-Z]{26}" tests="6" failures="5" errors="0"/);
    // people still get the table on stdout; the file is named on stderr
    expect(r.stdout).toMatch(/^6 runs · 1 passed/m);
    expect(r.stdout).not.toContain('<?xml');
    expect(r.stderr).toContain(`report written to ${file}`);
  });

  it('resumes an eval by its id: same options, nothing finished is run again', async () => {
    const out = outDir();
    const first = await silo('eval', QUICK, '--agent', 'fixtures/agents/plain.js', '--trials', '2', '--reporter', 'json', '--out', out);
    const { evalId } = JSON.parse(first.stdout) as EvalSummary;
    const again = await silo('eval', '--resume', evalId, '--reporter', 'json', '--out', out);
    expect(again.code).toBe(0);
    const resumed = JSON.parse(again.stdout) as EvalSummary;
    expect(resumed).toMatchObject({ evalId, status: 'completed', trials: 2, totals: { runs: 6, passed: 6 } });
    expect(readdirSync(join(out, 'runs'))).toHaveLength(6);
  });

  it.each([
    [['eval', 'fixtures/no-such-folder', '--agent', SOLVER], /no such file or folder: .*no-such-folder/],
    [['eval', 'fixtures/agents', '--agent', SOLVER], /no task files in .*fixtures\/agents; task files are named tasks\.ts/],
    [['eval', HELPDESK, '--agent', 'no-such-agent.mjs'], /agent file not found/],
    [['eval', HELPDESK], /--agent/],
    [['eval', '--agent', SOLVER], /give task files or folders/],
    [['eval', HELPDESK, '--agent', SOLVER, '--min-pass-rate', '2'], /--min-pass-rate takes a number from 0 to 1/],
    [['eval', HELPDESK, '--agent', SOLVER, '--trials', '0'], /--trials/],
    [['eval', HELPDESK, '--agent', SOLVER, '--reporter', 'xml'], /--reporter.*default, json, junit/],
    [['eval', HELPDESK, '--agent', SOLVER, '--task', 'nope/*'], /no task matches --task nope\/\*/],
    [['eval', '--resume', 'NOPE'], /no eval NOPE in .*evals/],
  ])('exits 2 with one line for a set-up error: %j', async (args, message) => {
    const out = outDir();
    const r = await silo(...args, '--out', out);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toBe('');
    expect(existsSync(join(out, 'runs'))).toBe(false);
  });

  it('refuses options that --resume would silently ignore, and an empty --min-pass-rate', async () => {
    const r = await silo('eval', QUICK, '--agent', 'fixtures/agents/plain.js', '--trials', '7', '--resume', 'NOPE');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--resume keeps the eval's stored options, so task paths, --agent, --trials cannot be given/);
    const empty = await silo('eval', QUICK, '--agent', 'fixtures/agents/plain.js', '--min-pass-rate', '');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/--min-pass-rate takes a number from 0 to 1/);
  });

  it('has --help', async () => {
    const r = await silo('eval', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Usage: silo eval/);
    expect(r.stdout).toMatch(/--min-pass-rate/);
  });
});

describe('silo eval and SIGINT', () => {
  /** Starts an eval of agents that never finish on their own, and resolves once `running` rollouts have started. */
  async function startHangingEval(out: string, running: number) {
    const child = spawn(
      process.execPath,
      [BIN, 'eval', QUICK, '--agent', 'fixtures/agents/hangs.mjs', '--trials', '2', '--concurrency', String(running), '--timeout', '60000', '--out', out],
      { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number; stdout: string; stderr: string }>((resolve) => {
      child.on('exit', (code, signal) => resolve({ code, signal, ms: Date.now() - sentAt, stdout, stderr }));
    });
    let sentAt = 0;
    const runs = join(out, 'runs');
    const deadline = Date.now() + 120_000;
    while (!existsSync(runs) || readdirSync(runs).length < running) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the eval did not start ${running} rollouts: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    const interrupt = (): void => {
      sentAt = Date.now();
      child.kill('SIGINT');
    };
    return { child, exited, interrupt };
  }

  it('stops cleanly on the first SIGINT: exit 130, summary cancelled, running runs cancelled, nothing torn', async () => {
    const out = outDir();
    const { exited, interrupt } = await startHangingEval(out, 4);
    interrupt();
    const r = await exited;
    expect(r.code).toBe(130);
    // grace (1 s by default) plus shutting down; a generous bound (a loaded machine is slow to shut down too)
    expect(r.ms).toBeLessThan(60_000);
    expect(r.stderr).toMatch(/silo: stopping/);
    expect(r.stdout).toMatch(/^0 runs · 0 passed · 0 failed · 0 errors · pass rate – .* · cancelled$/m);

    const { dir, summary } = theEval(out);
    expect(summary.status).toBe('cancelled');
    expect(summary.finishedAt).toEqual(expect.any(String));
    expect(summary.totals).toMatchObject({ runs: 0, passed: 0, failed: 0, errors: 0 });
    expect(parseAll(dir)).toBe(2);
    expect(parseAll(join(out, 'runs'))).toBeGreaterThanOrEqual(4 * 4);

    const lines = readFileSync(join(dir, 'runs.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as EvalRunLine);
    expect(lines).toHaveLength(4);
    expect(lines.every((l) => l.termination === 'cancelled' && l.status === 'error')).toBe(true);
    for (const runId of readdirSync(join(out, 'runs'))) {
      const run = JSON.parse(readFileSync(join(out, 'runs', runId, 'run.json'), 'utf8'));
      expect(run).toMatchObject({ evalId: summary.evalId, status: 'error', termination: 'cancelled' });
    }
  });

  it('exits at once on a second SIGINT, still with 130 and no torn file', async () => {
    const out = outDir();
    const { exited, interrupt, child } = await startHangingEval(out, 2);
    interrupt();
    await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    const r = await exited;
    expect(r.code).toBe(130);
    expect(r.ms).toBeLessThan(15_000);
    // It did not wait for the grace period and the final summary: the eval is left as running.
    const { dir, summary } = theEval(out);
    expect(summary.status).toBe('running');
    expect(parseAll(dir)).toBe(2);
    expect(parseAll(join(out, 'runs'))).toBeGreaterThanOrEqual(2);
  });
});
