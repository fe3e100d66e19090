/**
 * Agents that try to flood the host with what it parses and keeps: megabyte tool names, large
 * inputs piling up behind a slow tool, from eight rollouts at once. Everything an agent sends is
 * capped where the host parses it (src/pool/channel.ts), calls waiting for their turn are bounded,
 * the trace kept in memory is bounded (src/rollout/trace.ts) and the trace file is written in
 * bounded pieces (src/rollout/append-file.ts), so the host stays up and small.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { defineTool, runRollout } from '../../src/index.js';
import type { AgentOptions, Limits, RunResult, TraceEvent } from '../../src/index.js';
import { CALLS_WAITING_MAX_CHARS, MAX_TOOL_NAME_CHARS, TRACE_MEMORY_MAX_CHARS } from '../../src/options.js';
import { AgentPool, type AgentRunner } from '../../src/pool/pool.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { eventsOf, readRunFiles, tempDir, testWorld, type TestState } from '../helpers.js';

const out = tempDir('silo-host-flood-');
const runners: AgentRunner[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.destroy()));
  out.remove();
});

const agent = fileURLToPath(new URL('../../fixtures/agents/hostile/floods-host.mjs', import.meta.url));

/**
 * A tool whose calls all wait until 1.5 s after its first one, so that the calls of a flood pile
 * up behind it (one per rollout: each has its own gate).
 */
function slowRecord() {
  let gateAt: number | undefined;
  return defineTool({
    name: 'slow_record',
    description: 'Stores the value after a wait.',
    inputSchema: { type: 'object', properties: { value: {} }, required: ['value'] } as const,
    async run(state: TestState, input) {
      gateAt ??= Date.now() + 1_500;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, gateAt! - Date.now())));
      state.records.push({ value: typeof input.value === 'string' ? input.value.length : input.value, kind: 'slow' });
      return null;
    },
  });
}

interface Flood {
  result: RunResult;
  /** The trace as the verifier got it: what the host kept in memory. */
  kept: readonly TraceEvent[];
  /** trace.jsonl. */
  file: TraceEvent[];
}

async function flood(pool: AgentRunner, options: AgentOptions, limits: Partial<Limits> = {}): Promise<Flood> {
  let kept: readonly TraceEvent[] = [];
  const world = testWorld({
    tools: [slowRecord()],
    verify: ({ trace }) => {
      kept = trace;
      return [{ name: 'the host went through the flood', pass: true }];
    },
  });
  const result = await runRollout({ task: world.task, agent, agentOptions: options, outDir: out.dir, pool, limits: { timeoutMs: 60_000, maxToolCalls: 1_000, ...limits } });
  return { result, kept, file: readRunFiles(result.runDir).trace };
}

function expectNamesCapped(trace: readonly TraceEvent[]): void {
  const names = eventsOf(trace, 'tool_call').map((e) => e.name);
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) expect(name.length).toBeLessThanOrEqual(MAX_TOOL_NAME_CHARS + 32);
  for (const r of eventsOf(trace, 'tool_result')) if (!r.ok) expect(r.error.message.length).toBeLessThan(4 * MAX_TOOL_NAME_CHARS + 1_000);
}

describe('a flood of calls with huge tool names', () => {
  it('keeps each name cut to its cap, answers tool_not_found, and the run goes on (thread mode: the flood lands in the host itself)', async () => {
    const pool = new AgentPool({ maxThreads: 1 });
    runners.push(pool);
    // 50 names of 6 M characters: uncut, their calls and errors in one turn of the host's event
    // loop made a trace write longer than a string can be ("Invalid string length").
    const { result, kept, file } = await flood(pool, { names: 50, nameChars: 6_000_000 }, { memoryMb: 512 });
    expect(result.termination).toBe('returned');
    expect(JSON.parse(result.output!)).toMatchObject({ posted: 50, after: { ok: true } });
    expectNamesCapped(file);
    expectNamesCapped(kept);
    expect(eventsOf(file, 'tool_result').filter((r) => !r.ok && r.error.code === 'tool_not_found')).toHaveLength(50);
  }, 120_000);
});

describe('a flood of large calls behind a slow tool', () => {
  it('keeps a bounded amount of calls waiting: those past it are refused at once, unrun, and counted', async () => {
    // In thread mode the calls land at once, so they pile up behind the slow tool.
    const pool = new AgentPool({ maxThreads: 1 });
    runners.push(pool);
    const options = { slow: 50, inputChars: 200_000 };
    const { result, file } = await flood(pool, options);
    expect(result.termination).toBe('returned');
    expect(JSON.parse(result.output!)).toMatchObject({ posted: 50, after: { ok: true } });
    // 10 M characters arrived at once, over the 8 Mi that may wait: the rest was refused, the
    // first refusal recorded, every one counted.
    expect(CALLS_WAITING_MAX_CHARS).toBeLessThan(options.slow * options.inputChars);
    const waiting = eventsOf(file, 'tool_result').filter((r) => !r.ok && (r.error as { limit?: string }).limit === 'callsWaiting');
    expect(waiting).toHaveLength(1);
    const ran = eventsOf(file, 'tool_call').filter((c) => c.name === 'slow_record' && typeof (c.input as { value?: unknown }).value === 'string');
    const { run } = readRunFiles(result.runDir);
    expect(run.refusedCalls).toBeGreaterThan(0);
    expect(ran.length + run.refusedCalls).toBe(options.slow);
    expect(ran.length * options.inputChars).toBeLessThanOrEqual(CALLS_WAITING_MAX_CHARS + options.inputChars);
  }, 120_000);
});

describe('eight rollouts flooding the host at once', () => {
  it('each keeps a bounded trace in memory and its names cut, and writes the whole trace to its file', async () => {
    // A long silence allowed: on a loaded machine a sandbox relaying eight floods can be slow to
    // answer pings, which is not what this test is about.
    const pool = new SandboxPool({ maxThreads: 8, silenceMs: 120_000 });
    runners.push(pool);
    // Per rollout: 20 calls with 200 k-character names, and 50 calls of 200 k characters each to
    // a slow tool (10 M characters arriving at once, over the 8 Mi that may wait).
    const options = { names: 20, nameChars: 200_000, slow: 50, inputChars: 200_000 };
    const floods = await Promise.all(Array.from({ length: 8 }, () => flood(pool, options)));
    for (const { result, kept, file } of floods) {
      expect(result.termination).toBe('returned');
      expect(JSON.parse(result.output!)).toMatchObject({ posted: 70, after: { ok: true } });
      expectNamesCapped(file);
      // What the verifier got is what the host kept: within the budget (and a little for the
      // events past it, kept without their large parts).
      expect(JSON.stringify(kept).length).toBeLessThan(TRACE_MEMORY_MAX_CHARS + 512 * 1024);
      // The file has everything the host took, whole.
      const calls = eventsOf(file, 'tool_call');
      const inputs = calls.filter((c) => c.name === 'slow_record' && typeof (c.input as { value?: unknown }).value === 'string');
      expect(inputs.length).toBeGreaterThan(0);
      for (const c of inputs) expect((c.input as { value: string }).value).toHaveLength(options.inputChars);
    }
  }, 180_000);
});
