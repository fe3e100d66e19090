/**
 * What an agent's worker could change of the process it shares with other rollouts: closed before
 * the agent loads (src/pool/process-wide.ts), in the sandbox process and in thread mode alike.
 * fixtures/agents/hostile/process-wide.mjs tries each API by every route to a built-in; the
 * worst are also tried for their effect on later and concurrent rollouts.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../src/index.js';
import type { AgentOptions, Limits, RunResult } from '../../src/index.js';
import { AgentPool, type AgentRunner } from '../../src/pool/pool.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { tempDir, testWorld } from '../helpers.js';

const out = tempDir('silo-process-wide-');
const FAST: Partial<Limits> = { timeoutMs: 10_000, graceMs: 300, memoryMb: 64 };
const hostile = (name: string): string => fileURLToPath(new URL(`../../fixtures/agents/hostile/${name}`, import.meta.url));

const runners: AgentRunner[] = [];
function runner(isolation: 'thread' | 'process', maxThreads = 2): AgentRunner {
  const made = isolation === 'thread' ? new AgentPool({ maxThreads }) : new SandboxPool({ maxThreads });
  runners.push(made);
  return made;
}
afterAll(async () => {
  await Promise.all(runners.map((r) => r.destroy()));
  out.remove();
});

async function roll(pool: AgentRunner, agent: string, options: { instruction?: string; agentOptions?: AgentOptions; limits?: Partial<Limits> } = {}): Promise<RunResult> {
  const world = testWorld(options.instruction === undefined ? {} : { instruction: options.instruction });
  return runRollout({
    task: world.task,
    agent,
    outDir: out.dir,
    pool,
    limits: { ...FAST, ...options.limits },
    ...(options.agentOptions ? { agentOptions: options.agentOptions } : {}),
  });
}

/** Every API the fixture tries; a probe it adds must be listed here (and in SECURITY.md). */
const APIS = [
  'v8.setFlagsFromString',
  'v8.setHeapSnapshotNearHeapLimit',
  'v8.writeHeapSnapshot',
  'v8.takeCoverage',
  'v8.stopCoverage',
  'v8.startupSnapshot',
  'process.report.writeReport',
  'process.report.getReport',
  'process.report.directory',
  'process.report.filename',
  'process.report.reportOnFatalError',
  'process.report.reportOnSignal',
  'process.report.reportOnUncaughtException',
  'process.report.signal',
  'process.report.compact',
  'process.report.excludeNetwork',
  'process.kill',
  'process._kill',
  'process._debugProcess',
  'process._debugEnd',
  'process.abort',
  'process.chdir',
  'process.umask',
  'process.setuid',
  'process.title',
  'process.debugPort',
  'process.binding',
  'process._linkedBinding',
  'process.dlopen',
  'process.execve',
  'os.setPriority',
  'BroadcastChannel',
  'worker_threads.postMessageToThread',
  'worker_threads.locks',
  'worker_threads.setEnvironmentData',
  'module.register',
  'module.registerHooks',
  'module.enableCompileCache',
  'trace_events.createTracing',
  'inspector.open',
  'inspector.Session',
  'wasi.WASI',
  'crypto.setEngine',
  'crypto.setFips',
  'worker_threads.Worker',
  'child_process.spawn',
  'navigator.locks',
];

/**
 * What a closed API may answer: refused (by Silo or the permission model), not available in a
 * worker thread at all, absent from this Node version, or a harmless stand-in's answer.
 */
const CLOSED = new Set([
  'ERR_ACCESS_DENIED',
  'ERR_WORKER_UNSUPPORTED_OPERATION',
  'ERR_TRACE_EVENTS_UNAVAILABLE',
  'ERR_DLOPEN_DISABLED',
  'ERR_CRYPTO_CUSTOM_ENGINE_NOT_SUPPORTED',
  'ERR_NOT_BUILDING_SNAPSHOT',
  'absent',
  'ignored',
  'read-only',
  'own environment only',
  'own thread only',
]);

describe.each(['thread', 'process'] as const)('an agent trying every process-wide API (isolation %s)', (isolation) => {
  let outcome: Record<string, Record<string, string>>;
  const dir = tempDir('silo-process-wide-writes-');
  afterAll(() => dir.remove());

  beforeAll(async () => {
    const pool = runner(isolation);
    const instruction = JSON.stringify({ dir: dir.dir });
    // Twice in one pool: what the first sets must not show in the second.
    for (let i = 0; i < 2; i++) {
      const r = await roll(pool, hostile('process-wide.mjs'), { instruction });
      expect(r.termination, JSON.stringify(r.error)).toBe('returned');
      outcome = JSON.parse(r.output!) as typeof outcome;
    }
  }, 60_000);

  it('tries exactly the APIs listed here', () => {
    expect(Object.keys(outcome).sort()).toEqual([...APIS].sort());
  });

  it.each(APIS)('%s is out of its reach by every route', (api) => {
    const routes = outcome[api]!;
    expect(Object.keys(routes).length).toBeGreaterThan(0);
    for (const [route, result] of Object.entries(routes)) expect(CLOSED.has(result), `${api} through ${route}: ${result}`).toBe(true);
  });

  it('wrote nothing (reports, heap snapshots)', () => {
    expect(readdirSync(dir.dir)).toEqual([]);
  });
});

describe('V8 flags set by one rollout', () => {
  it('neither lift the heap cap of a later rollout in the same sandbox nor fix its random seed', async () => {
    // One thread at a time: each later rollout runs in a worker started after the flags were set.
    const pool = runner('process', 1);
    const first = await roll(pool, hostile('sets-v8-flags.mjs'), { agentOptions: { flags: '--max-old-space-size=6000 --random-seed=42' } });
    const later: { heapLimitMb: number; random: number[] }[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await roll(pool, hostile('sets-v8-flags.mjs'));
      expect(r.termination).toBe('returned');
      later.push(JSON.parse(r.output!) as (typeof later)[number]);
    }
    // The heap limit is the old generation (memoryMb) plus the young one: far from 6,000 MiB.
    for (const { heapLimitMb } of later) expect(heapLimitMb).toBeLessThan(4 * FAST.memoryMb!);
    expect(later[0]!.random).not.toEqual(later[1]!.random);
    expect(JSON.parse(first.output!)).toMatchObject({ set: 'ERR_ACCESS_DENIED' });
  }, 60_000);
});

describe('the diagnostic report', () => {
  it("keeps the process's settings when an agent points it at a folder of its own (what the next fatal error of any thread would write)", async () => {
    const settings = (): Record<string, unknown> => {
      const { directory, filename, reportOnFatalError, reportOnSignal, reportOnUncaughtException, signal } = process.report;
      return { directory, filename, reportOnFatalError, reportOnSignal, reportOnUncaughtException, signal };
    };
    const before = settings();
    const dir = tempDir('silo-report-target-');
    try {
      // In thread mode the agent shares this very process: its settings are the ones read here.
      const r = await roll(runner('thread'), hostile('points-report.mjs'), { instruction: JSON.stringify({ dir: dir.dir }) });
      expect(r.termination).toBe('returned');
      expect(settings()).toEqual(before);
      expect(JSON.parse(r.output!)).toMatchObject({ directory: '', reportOnFatalError: false });
    } finally {
      dir.remove();
    }
  });
});

describe.each(['thread', 'process'] as const)('two rollouts running at once (isolation %s)', (isolation) => {
  it('exchange no messages over a BroadcastChannel or postMessageToThread', async () => {
    const pool = runner(isolation);
    const [a, b] = await Promise.all([roll(pool, hostile('broadcasts.mjs'), { instruction: 'trial A' }), roll(pool, hostile('broadcasts.mjs'), { instruction: 'trial B' })]);
    for (const r of [a!, b!]) {
      expect(r.termination).toBe('returned');
      const { heard, errors } = JSON.parse(r.output!) as { heard: string[]; errors: Record<string, string> };
      expect(heard).toEqual([]);
      expect(errors).toMatchObject({ BroadcastChannel: 'ERR_ACCESS_DENIED', postMessageToThread: 'ERR_ACCESS_DENIED' });
    }
  }, 60_000);
});

describe('an agent blocked in Atomics.wait', () => {
  it('is ended on time: there is no memory another thread shares with it to wake it, and terminate() does', async () => {
    const r = await roll(runner('thread'), hostile('waits-on-atomics.mjs'), { limits: { timeoutMs: 500 } });
    expect(r.termination).toBe('timeout');
  });
});
