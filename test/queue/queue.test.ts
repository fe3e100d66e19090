/**
 * `silo eval --queue` and `silo worker` with a real Redis on 127.0.0.1: a coordinator and three
 * worker processes give the summary of a local eval even when a worker is SIGKILLed mid-rollout;
 * a coordinator killed and resumed picks up what the workers finished meanwhile; cancel empties
 * the queue; Redis out of reach is one line and exit 2; a worker with other files refuses; a run
 * too large to send back is an error that says where its files are.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvalStore } from '../../src/eval/store.js';
import { runEval } from '../../src/index.js';
import type { EvalRunLine, EvalSummary, ResultRecord, RunRecord } from '../../src/types.js';
import { BIN, PLAIN_ENV, runSilo } from '../cli/silo.js';
import { statistics } from '../eval/statistics.js';
import { tempDir } from '../helpers.js';
import { freePort, startRedis, startWorker, type TestRedis, type TestWorker } from './redis.js';

const tmp = tempDir('silo-queue-');
const HELPDESK = 'fixtures/helpdesk';
/** Deterministic (passes close-ticket only) and a second slow per rollout. */
const PATIENT = 'fixtures/agents/patient-hallucinator.ts';
const HALLUCINATOR = 'fixtures/agents/hallucinator.ts';
/** Short locks, so a killed worker's jobs move on within seconds. */
const LOCK = ['--lock-ms', '1500'];

let redis: TestRedis;
let workers: TestWorker[] = [];
let local: EvalSummary;

beforeAll(async () => {
  redis = await startRedis();
  workers = [0, 1, 2].map(() => startWorker(['--queue', redis.url, '--concurrency', '2', ...LOCK], tmp.dir));
  [local] = await Promise.all([
    // The same answers without the wait: statuses, counts and scores are what is compared.
    runEval({ paths: [HELPDESK], agent: HALLUCINATOR, trials: 2, outDir: join(tmp.dir, 'local') }),
    ...workers.map((w) => w.waitFor(/waiting for jobs/)),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await redis?.stop();
  tmp.remove();
});

/** The coordinator as a child process, and its output. */
function coordinator(args: string[]) {
  const child = spawn(process.execPath, [BIN, 'eval', ...args], { env: PLAIN_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

function summaryOf(out: string): EvalSummary {
  const [id] = readdirSync(join(out, 'evals'));
  return new EvalStore(out, id!).readSummary();
}

function linesOf(out: string, evalId: string): EvalRunLine[] {
  return [...new EvalStore(out, evalId).readLines()];
}

/** Each (task, trial) has exactly one run that counts, and it has a complete folder. */
function expectOneRunPerPair(out: string, evalId: string, pairCount = 12): void {
  const counted = linesOf(out, evalId).filter((l) => !l.retried && l.termination !== 'cancelled');
  const pairs = counted.map((l) => `${l.taskId}#${l.trial}`);
  expect(new Set(pairs).size).toBe(pairs.length);
  expect(pairs).toHaveLength(pairCount);
  for (const line of counted) {
    const dir = join(out, 'runs', line.runId);
    const run = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as RunRecord;
    expect(run).toMatchObject({ evalId, taskId: line.taskId, trial: line.trial, status: line.status });
    expect(existsSync(join(dir, 'trace.jsonl')) && existsSync(join(dir, 'state-diff.json')) && existsSync(join(dir, 'result.json'))).toBe(true);
  }
}

/** Resolves once `check` holds, polling; fails after 120 s (a loaded machine is slow). */
async function until(check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 120_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Nothing of the eval is left in Redis. */
async function expectQueueGone(evalId: string): Promise<void> {
  expect(await redis.client.keys(`silo:${evalId}:*`)).toEqual([]);
  expect(await redis.client.zrange('silo:evals', 0, -1)).not.toContain(evalId);
}

describe('silo eval --queue with three workers', () => {
  it('gives the summary of the local eval, though one worker is SIGKILLed mid-rollout', async () => {
    const out = join(tmp.dir, 'killed');
    const since = workers[0]!.log().length;
    const eval_ = coordinator([HELPDESK, '--agent', PATIENT, '--trials', '2', '--queue', redis.url, '--out', out, '--reporter', 'json']);
    // Once a worker has finished a rollout, its second slot is mid-rollout (each takes a second).
    await workers[0]!.waitFor(/trial \d (passed|failed)/, since);
    workers[0]!.process.kill('SIGKILL');
    expect(await eval_.exited).toBe(1); // the hallucinator fails 5 of the 6 tasks
    const summary = JSON.parse(eval_.output().stdout) as EvalSummary;
    // The progress of a local eval, on stderr.
    expect(eval_.output().stderr).toMatch(/^\d+\/12 · \d+ passed, \d+ failed, \d+ errors.* · \d+ running · /m);
    expect(statistics(summary, { retries: false })).toEqual(statistics(local, { retries: false }));
    expect(summary.totals.retries).toBeGreaterThanOrEqual(1);
    const lost = linesOf(out, summary.evalId).filter((l) => l.retried);
    expect(lost.length).toBe(summary.totals.retries);
    for (const l of lost) expect(l.error).toMatchObject({ code: 'worker_lost' });
    expectOneRunPerPair(out, summary.evalId);
    await expectQueueGone(summary.evalId);
    // A replacement for the next tests.
    workers[0] = startWorker(['--queue', redis.url, '--concurrency', '2', ...LOCK], tmp.dir);
  });

  it('resumes a coordinator that was SIGKILLed, with the results the workers finished meanwhile', async () => {
    const out = join(tmp.dir, 'resumed');
    const since = workers.map((w) => w.log().length);
    const first = coordinator([HELPDESK, '--agent', PATIENT, '--queue', redis.url, '--out', out]);
    // Killed after some runs are written and while others run.
    await Promise.race(workers.map((w, i) => w.waitFor(/trial \d (passed|failed)/, since[i])));
    first.child.kill('SIGKILL');
    await first.exited;
    const evalId = readdirSync(join(out, 'evals'))[0]!;
    const before = linesOf(out, evalId).length;
    // The workers go on without a coordinator: wait until the queue has nothing left to run.
    for (let i = 0; i < 1_200; i++) {
      const counts = await redis.client.eval(
        "return redis.call('llen', KEYS[1]) + redis.call('llen', KEYS[2])",
        2,
        `silo:${evalId}:wait`,
        `silo:${evalId}:active`,
      );
      if (counts === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const finishedInRedis = await redis.client.zcard(`silo:${evalId}:completed`);
    expect(finishedInRedis).toBeGreaterThan(0);

    const resumed = await runSilo(['eval', '--resume', evalId, '--queue', redis.url, '--out', out, '--reporter', 'json']);
    expect(resumed.code, resumed.stderr).toBe(1);
    const summary = JSON.parse(resumed.stdout) as EvalSummary;
    expect(summary.totals).toMatchObject({ runs: 6, passed: 1, failed: 5, errors: 0 });
    expect(summary.tasks.find((t) => t.passed === 1)?.taskId).toBe('helpdesk/close-ticket');
    expect(linesOf(out, evalId).length - before).toBeGreaterThanOrEqual(finishedInRedis);
    expectOneRunPerPair(out, evalId, 6);
    await expectQueueGone(evalId);
  });

  it('cancels on SIGINT: exit 130, no job left waiting, the running rollouts end cancelled', async () => {
    const out = join(tmp.dir, 'cancelled');
    const since = workers.map((w) => w.log().length);
    // An agent that never returns: whatever a worker has taken when the cancel comes ends cancelled.
    const eval_ = coordinator([HELPDESK, '--agent', 'fixtures/agents/hangs.mjs', '--trials', '4', '--queue', redis.url, '--out', out]);
    await Promise.all(workers.map((w, i) => w.waitFor(/serving/, since[i])));
    // Cancel once workers are running some of its jobs (read from Redis, not from timing).
    await until(async () => {
      const [evalId] = existsSync(join(out, 'evals')) ? readdirSync(join(out, 'evals')) : [];
      return evalId !== undefined && (await redis.client.llen(`silo:${evalId}:active`)) > 0;
    });
    eval_.child.kill('SIGINT');
    expect(await eval_.exited).toBe(130);
    const summary = summaryOf(out);
    expect(summary.status).toBe('cancelled');
    expect(summary.totals.runs).toBeLessThan(24);
    expect(await redis.client.llen(`silo:${summary.evalId}:wait`)).toBe(0);
    expect(await redis.client.llen(`silo:${summary.evalId}:active`)).toBe(0);
    expect(await redis.client.zrange('silo:evals', 0, -1)).not.toContain(summary.evalId);
    const cancelled = linesOf(out, summary.evalId).filter((l) => l.termination === 'cancelled');
    expect(cancelled.length).toBeGreaterThan(0);
  });
});

describe('silo eval --queue set-up errors', () => {
  it('says in one line that Redis is out of reach, exits 2 and writes nothing', async () => {
    const port = await freePort();
    const out = join(tmp.dir, 'unreachable');
    const [r, w] = await Promise.all([
      runSilo(['eval', HELPDESK, '--agent', HALLUCINATOR, '--queue', `redis://127.0.0.1:${port}`, '--out', out]),
      runSilo(['worker', '--queue', `redis://127.0.0.1:${port}`]),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`silo: cannot reach Redis at redis://127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port}); start redis-server there or fix --queue\n`);
    expect(existsSync(out)).toBe(false);
    expect(w.code).toBe(2);
    expect(w.stderr).toMatch(/^silo: cannot reach Redis at .*ECONNREFUSED.*\n$/);
  });

  it('stops the eval when a worker has a different agent file, naming the file', async () => {
    // A machine whose copy of the agent differs (a separate database keeps the other workers away).
    const root = join(tmp.dir, 'other-machine');
    mkdirSync(join(root, 'fixtures/agents'), { recursive: true });
    cpSync('fixtures/helpdesk', join(root, 'fixtures/helpdesk'), { recursive: true });
    writeFileSync(join(root, HALLUCINATOR), `${readFileSync(HALLUCINATOR, 'utf8')}\n// edited on this machine\n`);
    const url = `${redis.url}/1`;
    const stranger = startWorker(['--queue', url, '--root', root], tmp.dir);
    try {
      await stranger.waitFor(/waiting for jobs/);
      const out = join(tmp.dir, 'refused');
      const r = await runSilo(['eval', HELPDESK, '--agent', HALLUCINATOR, '--queue', url, '--out', out]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/\nsilo: worker \S+ refused helpdesk\/\S+: fixtures\/agents\/hallucinator\.ts differs from the coordinator's copy \(sha256 [0-9a-f]{12}… here, [0-9a-f]{12}… there\); every machine needs the same task and agent files under its --root\n$/);
      expect(summaryOf(out).status).toBe('error');
      expect(stranger.log()).toMatch(/refused helpdesk\/\S+: fixtures\/agents\/hallucinator\.ts differs/);
    } finally {
      // Ctrl-C: the worker leaves its evals and exits cleanly.
      expect(await stranger.stop('SIGINT')).toBe(0);
    }
  });

  it('gives the agent the --env variables from each worker\'s own environment, and a worker without one refuses', async () => {
    const url = `${redis.url}/2`;
    const task = ['--task', 'helpdesk/close-ticket'];
    const withIt = startWorker(['--queue', url], tmp.dir, { SILO_QUEUE_SECRET: 'from-the-worker' });
    try {
      await withIt.waitFor(/waiting for jobs/);
      const out = join(tmp.dir, 'env');
      const r = await runSilo(['eval', HELPDESK, ...task, '--agent', 'fixtures/agents/prints-env.mjs', '--env', 'SILO_QUEUE_SECRET', '--queue', url, '--out', out], {
        SILO_QUEUE_SECRET: 'from-the-coordinator',
      });
      expect(r.code, r.stderr).toBe(1); // the agent only prints its environment: the task fails
      const [line] = linesOf(out, summaryOf(out).evalId);
      const result = JSON.parse(readFileSync(join(out, 'runs', line!.runId, 'result.json'), 'utf8')) as ResultRecord;
      expect(JSON.parse(result.output!)).toEqual({ SILO_QUEUE_SECRET: 'from-the-worker' });
    } finally {
      expect(await withIt.stop('SIGINT')).toBe(0);
    }
    const without = startWorker(['--queue', url], tmp.dir);
    try {
      await without.waitFor(/waiting for jobs/);
      const out = join(tmp.dir, 'env-missing');
      const r = await runSilo(['eval', HELPDESK, ...task, '--agent', 'fixtures/agents/prints-env.mjs', '--env', 'SILO_QUEUE_SECRET', '--queue', url, '--out', out], {
        SILO_QUEUE_SECRET: 'from-the-coordinator',
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/refused helpdesk\/close-ticket: --env SILO_QUEUE_SECRET: SILO_QUEUE_SECRET is not set in this shell.*\(on this worker: start silo worker with the variable set\)/);
    } finally {
      expect(await without.stop('SIGINT')).toBe(0);
    }
  });

  it('records a run whose artifacts exceed the cap as an error that says where they are', async () => {
    const url = `${redis.url}/2`;
    const kept = join(tmp.dir, 'kept');
    const small = startWorker(['--queue', url, '--max-result-mb', '0.001', '--out', kept], tmp.dir);
    try {
      await small.waitFor(/waiting for jobs/);
      const out = join(tmp.dir, 'too-large');
      const r = await runSilo(['eval', HELPDESK, '--agent', HALLUCINATOR, '--task', 'helpdesk/close-ticket', '--queue', url, '--out', out]);
      expect(r.code).toBe(1);
      const summary = summaryOf(out);
      expect(summary.totals).toMatchObject({ runs: 1, errors: 1 });
      const [line] = linesOf(out, summary.evalId);
      const result = JSON.parse(readFileSync(join(out, 'runs', line!.runId, 'result.json'), 'utf8')) as ResultRecord;
      expect(result.error?.code).toBe('artifacts_too_large');
      expect(result.error?.message).toContain(`over the 0.001 MiB a queue worker sends back (--max-result-mb); they are on`);
      expect(result.error?.message).toContain('(the run was graded passed, score 1)');
      expect(readdirSync(join(kept, 'runs'))).toEqual([line!.runId]);
      expect(readFileSync(join(kept, 'runs', line!.runId, 'trace.jsonl'), 'utf8')).toContain('"type":"tool_call"');
    } finally {
      await small.stop();
    }
  });
});
