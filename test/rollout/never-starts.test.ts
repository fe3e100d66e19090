/**
 * Rollouts whose agent worker never starts: a pool whose workers die as they start (a heap too
 * small for Node to boot, as a process-wide `--max-old-space-size=4` once made it), a sandbox
 * whose workers do, and a runner that never answers at all. The time limit counts from the moment
 * the rollout asks for a worker, so each ends `crashed` (an infrastructure failure that evals
 * retry) within its limit, and an eval of such rollouts finishes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runEval, runRollout } from '../../src/index.js';
import type { EvalRunLine, Limits, RunResult } from '../../src/index.js';
import { localRunner } from '../../src/eval/runner.js';
import { WORKER_GONE_MS } from '../../src/options.js';
import { workerStartMs } from '../../src/rollout/agent.js';
import { PortLink, type Link } from '../../src/pool/ends.js';
import { AgentPool, type AgentRunner, type WorkerExit } from '../../src/pool/pool.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { eventsOf, readRunFiles, tempDir, testWorld } from '../helpers.js';

const out = tempDir('silo-never-starts-');
const destroyed: AgentRunner[] = [];
afterAll(async () => {
  await Promise.all(destroyed.map((r) => r.destroy()));
  out.remove();
});

const plain = fileURLToPath(new URL('../../fixtures/agents/plain.js', import.meta.url));
const LIMITS: Partial<Limits> = { timeoutMs: 1_500, graceMs: 300 };
/** How long a worker gets to start with these limits: 10 s (the least it gets). */
const START_MS = workerStartMs(LIMITS.timeoutMs!);

/** Workers with a 1 MiB heap: Node cannot boot them; they die as they start, or never finish starting. */
class DyingThreads extends AgentPool {
  override run(task: Parameters<AgentPool['run']>[0], link: Link, _memoryMb: number, ...rest: [AbortSignal, Readonly<Record<string, string>>, readonly string[]]): Promise<WorkerExit> {
    return super.run(task, link, 1, ...rest);
  }
}

/** The same inside a sandbox process. */
class DyingSandbox extends SandboxPool {
  override run(task: Parameters<SandboxPool['run']>[0], link: Link, _memoryMb: number, ...rest: [AbortSignal, Readonly<Record<string, string>>, readonly string[]]): Promise<WorkerExit> {
    return super.run(task, link, 1, ...rest);
  }
}

/** A runner that takes each rollout and then neither starts a worker nor ever answers, terminated or not. */
class Silent implements AgentRunner {
  link(): PortLink {
    return new PortLink();
  }
  run(): Promise<WorkerExit> {
    return new Promise(() => {});
  }
  destroy(): Promise<void> {
    return Promise.resolve();
  }
}

async function rollOn(pool: AgentRunner): Promise<{ result: RunResult; elapsedMs: number }> {
  const world = testWorld();
  const started = performance.now();
  const result = await runRollout({ task: world.task, agent: plain, outDir: out.dir, pool, limits: LIMITS });
  const elapsedMs = performance.now() - started;
  const files = readRunFiles(result.runDir);
  expect(files.run.status).not.toBe('running');
  expect(eventsOf(files.trace, 'agent_threw')).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'crashed' }) })]);
  // The world is built, so it is graded: as the agent (never) left it.
  expect(world.verified).toBe(1);
  return { result, elapsedMs };
}

describe('a rollout whose worker never starts', () => {
  it.each([
    ['threads of this process', () => new DyingThreads({ maxThreads: 2 })],
    ['a sandbox process', () => new DyingSandbox({ maxThreads: 2 })],
  ])('ends crashed within its time limit when the workers of %s die as they start', async (_, make) => {
    const pool = make();
    destroyed.push(pool);
    // Several in a row: a pool could give up on starting workers that die as they start, and the
    // rollouts after that must not wait for one for ever either.
    for (let i = 0; i < 3; i++) {
      const { result, elapsedMs } = await rollOn(pool);
      expect(result.termination).toBe('crashed');
      expect(result.error?.message).toMatch(/^the agent's worker never started/);
      // Generous; without a limit on starting the rollout would never end.
      expect(elapsedMs).toBeLessThan(START_MS + WORKER_GONE_MS + 5_000);
    }
  }, 120_000);

  it('ends crashed when its runner never answers, even once its worker is terminated', async () => {
    const { result, elapsedMs } = await rollOn(new Silent());
    expect(result.termination).toBe('crashed');
    expect(result.error?.message).toBe(`the agent's worker never started within ${START_MS} ms`);
    expect(elapsedMs).toBeLessThan(START_MS + WORKER_GONE_MS + 5_000);
  }, 60_000);
});

describe('an eval whose workers never start', () => {
  it('finishes: every run crashed and was retried, the summary completed', async () => {
    const pool = new DyingThreads({ maxThreads: 2 });
    destroyed.push(pool);
    const summary = await runEval({
      paths: ['fixtures/eval/quick.tasks.mjs'],
      agent: plain,
      trials: 2,
      concurrency: 2,
      retries: 1,
      limits: LIMITS,
      outDir: out.dir,
      runner: (context) => Promise.resolve(localRunner(context, pool, 2)),
    });
    expect(summary.status).toBe('completed');
    // Every pair has its run (crashed, graded as the agent left the world: nothing answered).
    expect(summary.totals.runs).toBe(3 * 2);
    expect(summary.totals.passed).toBe(0);
    const lines = readFileSync(join(out.dir, 'evals', summary.evalId, 'runs.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as EvalRunLine);
    // Each pair was tried twice (retries: 1): crashed is an infrastructure failure.
    expect(lines).toHaveLength(2 * 3 * 2);
    for (const line of lines) expect(line.termination).toBe('crashed');
  }, 120_000);
});
