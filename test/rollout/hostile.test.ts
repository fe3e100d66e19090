/**
 * Hostile agents against real rollouts. Each test runs one agent from fixtures/agents/hostile/
 * in a worker of its own and checks the protection it attacks: the host goes on (the test
 * finishing proves it), every artifact is written and parses, the world is graded where the
 * contract says so, and the termination names what happened.
 */
import { copyFileSync, existsSync, mkdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { check, defineTool, runRollout } from '../../src/index.js';
import type { Limits, RunResult, TraceEvent } from '../../src/index.js';
import { LOG_MAX_CHARS_PER_RUN } from '../../src/options.js';
import { AgentPool } from '../../src/pool/pool.js';
import type { PoolFinding } from '../../fixtures/agents/hostile/reads-pool.js';
import { eventsOf, readRunFiles, tempDir, testWorld, type RunFiles, type TestState, type TestWorld } from '../helpers.js';

// Set before any worker exists, so that a worker that inherited the host's environment would see it.
const SECRET_NAME = 'SILO_HOSTILE_TEST_SECRET';
const SECRET_VALUE = 'host-secret-that-must-not-leak';
process.env[SECRET_NAME] = SECRET_VALUE;

const out = tempDir('silo-hostile-');
afterAll(() => {
  delete process.env[SECRET_NAME];
  out.remove();
});

/** Small limits keep the file fast; tests override what they attack. */
// A timeout far above what these agents need, so a loaded machine never turns a throw, a crash or
// an answer into a timeout; the tests about timeouts set their own.
const FAST: Partial<Limits> = { timeoutMs: 15_000, graceMs: 300, memoryMb: 64 };

function hostile(name: string): string {
  return fileURLToPath(new URL(`../../fixtures/agents/hostile/${name}.ts`, import.meta.url));
}

interface Rollout {
  result: RunResult;
  files: RunFiles;
  /** Wall time of runRollout, ms. */
  elapsedMs: number;
}

/** Runs `agent` against `world` and checks that the run was recorded in full. */
async function roll(world: TestWorld, agent: string, limits: Partial<Limits> = {}): Promise<Rollout> {
  const started = performance.now();
  const result = await runRollout({ task: world.task, agent, outDir: out.dir, limits: { ...FAST, ...limits } });
  const elapsedMs = performance.now() - started;
  const files = readRunFiles(result.runDir);
  expect(files.run.status).not.toBe('running');
  expect(files.run).toMatchObject({ runId: result.runId, status: result.status, termination: result.termination });
  expect(files.run.finishedAt).toEqual(expect.any(String));
  expect(files.result).toMatchObject({ runId: result.runId, status: result.status, termination: result.termination, output: result.output });
  expect(files.trace[0]?.type).toBe('run_started');
  expect(files.trace.at(-1)).toMatchObject({ type: 'run_finished', status: result.status, termination: result.termination });
  expect(files.trace.map((e) => e.seq)).toEqual(files.trace.map((_, i) => i));
  expect(Array.isArray(files.diff)).toBe(true);
  return { result, files, elapsedMs };
}

/** The verifier ran once and its checks decided the status. */
function expectGraded(world: TestWorld, { result, files }: Rollout, status: 'passed' | 'failed'): void {
  expect(world.verified).toBe(1);
  expect(result.status).toBe(status);
  // A graded run carries an error only to say why its agent's worker ended early, or why its
  // output could not be recorded.
  if (result.termination === 'crashed' || result.termination === 'out_of_memory') {
    expect(result.error?.code).toMatch(result.termination === 'crashed' ? /^(crashed|agent_exit)$/ : /^out_of_memory$/);
    expect(files.result.error).toEqual(result.error);
  } else if (result.error?.code === 'output_not_recorded') {
    expect(files.result.error).toEqual(result.error);
  } else {
    expect(result.error).toBeUndefined();
  }
  expect(result.checks.length).toBeGreaterThan(0);
  expect(files.result.checks).toEqual(result.checks);
  if (status === 'passed') expect(files.result.score).toBe(1);
  else expect(files.result.score).toBeLessThan(1);
}

function toolCalls(trace: readonly TraceEvent[]): Extract<TraceEvent, { type: 'tool_call' }>[] {
  return eventsOf(trace, 'tool_call');
}

const recorded = (world: TestWorld): unknown[] => (world.final as TestState).records.map((r) => r.value);

describe('an agent that never stops', () => {
  it('stops while (true) {} on time and still grades the world', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('infinite-loop'), { timeoutMs: 1000, graceMs: 300 });
    expect(run.result.termination).toBe('timeout');
    expectGraded(world, run, 'failed');
    expect(run.result.output).toBeNull();
    expect(eventsOf(run.files.trace, 'limit_exceeded')).toEqual([expect.objectContaining({ limit: 'timeoutMs' })]);
    // A generous bound (the worker's start-up counts too, and may crawl on a loaded machine):
    // without termination the run would never end at all.
    expect(run.elapsedMs).toBeLessThan(25_000);
  }, 180_000);

  it('times out an agent awaiting a promise that never settles, rather than calling it a crash', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('never-settles'), { timeoutMs: 1000, graceMs: 300 });
    expect(run.result.termination).toBe('timeout');
    expectGraded(world, run, 'failed');
    expect(eventsOf(run.files.trace, 'agent_threw')).toEqual([]);
    expect(eventsOf(run.files.trace, 'limit_exceeded')).toEqual([expect.objectContaining({ limit: 'timeoutMs' })]);
    expect(run.elapsedMs).toBeLessThan(25_000);
  }, 180_000);
});

describe('an agent that fails hard', () => {
  it('records an agent that throws as threw, with its message, and grades the world', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('throws'));
    expect(run.result.termination).toBe('threw');
    expectGraded(world, run, 'failed');
    const threw = eventsOf(run.files.trace, 'agent_threw');
    expect(threw).toHaveLength(1);
    expect(threw[0]?.error.message).toBe('hostile agent gave up on purpose');
  });

  it('survives process.exit(3) in the agent: crashed, graded on the world as it was left', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('exits-process'));
    expect(run.result.termination).toBe('crashed');
    expectGraded(world, run, 'failed');
    // The write made before the exit is part of the graded world.
    expect(world.final?.values).toEqual({ 'before-exit': true });
    expect(run.files.run.toolCalls).toBe(1);
    // The agent said it was leaving, so the crash is its own doing (an eval will not retry it).
    expect(eventsOf(run.files.trace, 'agent_threw')).toEqual([
      expect.objectContaining({ error: expect.objectContaining({ code: 'agent_exit', message: expect.stringMatching(/process\.exit\(3\)/) }) }),
    ]);
    expect(run.result.error?.code).toBe('agent_exit');
  });

  it('ends a memory bomb as out_of_memory and grades the world', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('memory-bomb'), { memoryMb: 64, timeoutMs: 20_000 });
    expect(run.result.termination).toBe('out_of_memory');
    expectGraded(world, run, 'failed');
    expect(eventsOf(run.files.trace, 'limit_exceeded')).toEqual([expect.objectContaining({ limit: 'memoryMb' })]);
  });
});

describe('output an agent returns', () => {
  it.each([
    ['a BigInt', 'returns-bigint', "the agent's output could not be recorded: it holds a BigInt (at .answer)"],
    ['a circular object', 'returns-circular', "the agent's output could not be recorded: it is circular (at .self)"],
    ['a function', 'returns-function', "the agent's output could not be recorded: a function has no JSON form"],
    ['a toJSON that throws something unprintable', 'returns-unprintable', "the agent's output could not be recorded: its toJSON threw: {}"],
  ])('fails a run whose output is %s (recorded as null) however its verifier grades it, and says why in one line', async (_what, agent, reason) => {
    // A verifier that never reads the output: without the output's own check, the run would pass.
    const world = testWorld({ verify: () => [check.ok('the world is as it should be', true)] });
    const run = await roll(world, hostile(agent));
    expect(run.result.termination).toBe('returned');
    expect(run.result.output).toBeNull();
    expectGraded(world, run, 'failed');
    expect(run.files.result.score).toBe(0.5);
    expect(run.files.result.checks).toEqual([
      { name: 'the world is as it should be', pass: true },
      { name: 'output recorded', pass: false, gate: true, message: reason.replace("the agent's output could not be recorded: ", '') },
    ]);
    expect(run.files.result.error).toEqual({ code: 'output_not_recorded', message: reason });
    const returned = eventsOf(run.files.trace, 'agent_returned');
    expect(returned).toHaveLength(1);
    expect(returned[0]?.output).toBeNull();
    expect(returned[0]?.outputError).toBe(reason);
  });

  it('keeps the reason one short line when a forged completion makes it a megabyte over half a million lines', async () => {
    const world = testWorld({ verify: () => [check.ok('the world is as it should be', true)] });
    const run = await roll(world, hostile('forges-output-error'));
    expectGraded(world, run, 'failed');
    const message = run.files.result.error?.message ?? '';
    expect(message).toMatch(/^the agent's output could not be recorded: no no no /);
    expect(message).not.toContain('\n');
    expect(message.length).toBeLessThanOrEqual(1_000);
    expect(eventsOf(run.files.trace, 'agent_returned')[0]?.outputError).toBe(message);
  });

  it('truncates an 8 MiB output to maxOutputBytes UTF-8 bytes, on a character boundary', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('huge-output'));
    const maxOutputBytes = 1024 * 1024; // the default
    expect(run.files.run.limits.maxOutputBytes).toBe(maxOutputBytes);
    expect(run.result.termination).toBe('returned');
    expectGraded(world, run, 'passed');
    const output = run.result.output ?? '';
    const bytes = Buffer.byteLength(output, 'utf8');
    expect(bytes).toBeLessThanOrEqual(maxOutputBytes);
    // 'a' then 2-byte characters: the 1 MiB mark falls inside one, so one byte is given up.
    expect(bytes).toBe(maxOutputBytes - 1);
    expect(output.startsWith('aéé')).toBe(true);
    expect(output).not.toContain('\uFFFD');
    expect(run.files.result.outputTruncated).toBe(true);
    expect(run.files.result.output).toBe(output);
    expect(eventsOf(run.files.trace, 'agent_returned')[0]).toMatchObject({ outputTruncated: true });
  });
});

describe('tool calls an agent makes', () => {
  it('runs exactly maxToolCalls of a 5,000-call flood, refuses the rest and records one refusal', async () => {
    const world = testWorld();
    // The limit ends the run, not the clock: the agent has all the time a loaded machine needs to
    // send its calls and collect every answer.
    const run = await roll(world, hostile('call-flood'), { maxToolCalls: 500, timeoutMs: 150_000, graceMs: 150_000 });
    expect(run.result.termination).toBe('tool_call_limit');
    expectGraded(world, run, 'passed');
    expect(run.files.run.toolCalls).toBe(500);
    expect(run.files.run.refusedCalls).toBe(4500);
    expect(world.final?.count).toBe(500);
    // Every call was answered, none rejected: 500 ran, 4,500 were refused.
    expect(JSON.parse(run.result.output ?? 'null')).toEqual({ ok: 500, limit_exceeded: 4500 });

    const calls = toolCalls(run.files.trace);
    const results = eventsOf(run.files.trace, 'tool_result');
    expect(calls).toHaveLength(501);
    expect(results).toHaveLength(501);
    const refused = results.filter((r) => !r.ok);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ ok: false, error: { code: 'limit_exceeded', limit: 'maxToolCalls' } });
    expect(calls.some((c) => c.callId === refused[0]?.callId)).toBe(true);
    expect(eventsOf(run.files.trace, 'limit_exceeded')).toEqual([expect.objectContaining({ limit: 'maxToolCalls' })]);
  });

  it('never lets calls fired after the agent returned reach the world', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('calls-after-return'));
    expect(run.result.termination).toBe('returned');
    expect(run.result.output).toBe('returned');
    expectGraded(world, run, 'passed');
    expect(recorded(world)).toEqual(['before-return']);
    expect(toolCalls(run.files.trace).map((c) => c.input)).toEqual([{ value: 'before-return' }]);
    // The graded world is the live one: had a late call slipped through, it would show up here.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(recorded(world)).toEqual(['before-return']);
  });

  it("drops calls an agent posts on the rollout's port itself after returning", async () => {
    const world = testWorld();
    const run = await roll(world, hostile('forges-late-calls'));
    expect(run.result.termination).toBe('returned');
    expectGraded(world, run, 'passed');
    expect(toolCalls(run.files.trace).map((c) => c.input)).toEqual([{ value: 'before-return' }]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(recorded(world)).toEqual(['before-return']);
  });

  it("survives malformed messages an agent posts on the rollout's port itself, and a forged completion", async () => {
    const world = testWorld();
    const run = await roll(world, hostile('forges-bad-messages'));
    // The forged completion says the agent threw; its error could not be read, and says so.
    expect(run.result.termination).toBe('threw');
    expectGraded(world, run, 'failed');
    expect(eventsOf(run.files.trace, 'agent_threw')).toEqual([
      expect.objectContaining({ error: { code: 'agent_threw', message: 'unknown error' } }),
    ]);
    // The ordinary call went through; the deep one was refused before any tool ran.
    expect(recorded(world)).toEqual(['ordinary']);
    const results = eventsOf(run.files.trace, 'tool_result').map((r) => (r.ok ? 'ok' : r.error.code));
    expect(results).toEqual(['invalid_input', 'invalid_input', 'ok']);
    // Each malformed message left a note instead of ending the host.
    const notes = eventsOf(run.files.trace, 'agent_log').filter((e) => e.message.startsWith('silo: dropped'));
    expect(notes).toHaveLength(6);
  });

  describe('__proto__ and constructor keys in an input', () => {
    /** What each payload of prototype-keys.ts would add to Object.prototype, in call order. */
    const PAYLOADS = ['pollutedTop', 'pollutedNested', 'pollutedCtorTop', 'pollutedCtorNested', 'pollutedDeep'];
    const POLLUTED = [...PAYLOADS, 'pollutedEscaped'];
    afterEach(() => {
      // Clean up if a protection failed, so one failure does not spread to other tests.
      for (const key of POLLUTED) {
        delete (Object.prototype as Record<string, unknown>)[key];
        delete (Object as unknown as Record<string, unknown>)[key];
      }
    });

    it('refuses them as invalid_input before any tool runs, and the host prototype stays clean', async () => {
      const world = testWorld();
      const run = await roll(world, hostile('prototype-keys'));
      expect(run.result.termination).toBe('returned');
      expectGraded(world, run, 'passed');
      // Five hostile inputs refused; the harmless control call went through.
      expect(JSON.parse(run.result.output ?? 'null')).toEqual([...PAYLOADS.map(() => 'invalid_input'), 'ok']);
      const probe: Record<string, unknown> = {};
      for (const key of POLLUTED) {
        expect(probe[key], key).toBeUndefined();
        expect(Object.prototype, key).not.toHaveProperty(key);
      }
      // Only the control call changed the world.
      expect(world.final?.settings).toEqual({ harmless: 1 });
      expect(Object.getPrototypeOf(world.final?.settings)).toBe(Object.prototype);
      const results = eventsOf(run.files.trace, 'tool_result');
      expect(results.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual([...PAYLOADS.map(() => 'invalid_input'), 'ok']);
      expect(JSON.stringify(run.files.trace)).not.toMatch(/polluted/);
    });

    it('refuses them also when the agent escapes them in the JSON text it sends', async () => {
      const world = testWorld();
      const run = await roll(world, hostile('escaped-proto-key'));
      expect(run.result.termination).toBe('returned');
      expect(JSON.parse(run.result.output ?? 'null')).toEqual(['invalid_input', 'invalid_input']);
      expect({} as Record<string, unknown>).not.toHaveProperty('pollutedEscaped');
      expect(world.final?.settings).toEqual({});
    });
  });

  it('hands the tool the value of a SharedArrayBuffer-backed input as it was at call time, as plain data', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('shared-memory-input'));
    expect(run.result.termination).toBe('returned');
    expectGraded(world, run, 'passed');
    expect(world.final?.records).toEqual([{ value: { 0: 5 }, kind: '[object Object]' }]);
    expect(toolCalls(run.files.trace).map((c) => c.input)).toEqual([{ value: { 0: 5 } }]);
  });

  it.each([
    ['', 'huge-input'],
    [', also when the agent goes around the worker', 'forges-huge-input'],
  ])('refuses one input over maxMessageBytes with limit_exceeded and lets the run go on%s', async (_how, agent) => {
    const world = testWorld();
    const run = await roll(world, hostile(agent));
    expect(run.files.run.limits.maxMessageBytes).toBe(1024 * 1024);
    expect(run.result.termination).toBe('returned');
    expectGraded(world, run, 'passed');
    const { huge, small } = JSON.parse(run.result.output ?? 'null');
    expect(huge).toMatchObject({ ok: false, error: { code: 'limit_exceeded', limit: 'maxMessageBytes' } });
    expect(small).toEqual({ ok: true, value: { recorded: 1 } });
    expect(recorded(world)).toEqual(['small']);
    // The refused input is not copied into the trace.
    const calls = toolCalls(run.files.trace);
    expect(calls).toHaveLength(2);
    expect(JSON.stringify(calls[0]?.input).length).toBeLessThan(1000);
  });
});

describe("the agent's surroundings", () => {
  it("gives the agent an empty environment, so the host's variables do not leak", async () => {
    expect(process.env[SECRET_NAME]).toBe(SECRET_VALUE);
    const world = testWorld();
    const run = await roll(world, hostile('reads-env'));
    expect(run.result.termination).toBe('returned');
    expectGraded(world, run, 'passed');
    expect(run.result.output).toBe('{}');
    expect(JSON.stringify(run.files)).not.toContain(SECRET_VALUE);
  });

  it('keeps the agent from the task file, the artifacts, /proc, processes, workers, the inspector and addons', async () => {
    const taskFile = fileURLToPath(new URL('../../fixtures/helpdesk/tasks.ts', import.meta.url));
    const world = testWorld({ instruction: JSON.stringify({ taskFile, outDir: out.dir }) });
    const result = await runRollout({ task: world.task, taskFile, agent: hostile('breaks-out'), outDir: out.dir, limits: FAST });
    expect(result.termination).toBe('returned');
    expect(JSON.parse(result.output!)).toEqual({
      readTaskFile: 'ERR_ACCESS_DENIED',
      readEnviron: 'ERR_ACCESS_DENIED',
      openMemory: 'ERR_ACCESS_DENIED',
      writeArtifacts: 'ERR_ACCESS_DENIED',
      makeFolder: 'ERR_ACCESS_DENIED',
      runCommand: 'ERR_ACCESS_DENIED',
      spawnDetached: 'ERR_ACCESS_DENIED',
      startWorker: 'ERR_ACCESS_DENIED',
      inspectHost: 'ERR_ACCESS_DENIED',
      loadAddon: 'ERR_DLOPEN_DISABLED',
    });
    expect(statSync(out.dir).isDirectory()).toBe(true);
    expect(existsSync(join(out.dir, 'forged.json'))).toBe(false);
  });

  it('refuses an agent whose folder holds a link leading out of it (the permission model does not follow links)', async () => {
    const home = tempDir('silo-agent-link-');
    try {
      mkdirSync(join(home.dir, 'agent'));
      copyFileSync(fileURLToPath(new URL('../../fixtures/agents/plain.js', import.meta.url)), join(home.dir, 'agent', 'agent.mjs'));
      symlinkSync(fileURLToPath(new URL('../../fixtures/helpdesk', import.meta.url)), join(home.dir, 'agent', 'answers'));
      const r = await runRollout({ task: testWorld().task, agent: join(home.dir, 'agent', 'agent.mjs'), outDir: out.dir, limits: FAST });
      expect(r.termination).toBe('load_error');
      expect(r.error?.message).toMatch(/holds a link that leads out of it \(.*answers -> .*fixtures\/helpdesk\)/);
    } finally {
      home.remove();
    }
  });

  it('refuses to run an agent whose folder holds the task file or the artifacts, saying why', async () => {
    const home = tempDir('silo-agent-home-');
    try {
      copyFileSync(fileURLToPath(new URL('../../fixtures/agents/plain.js', import.meta.url)), join(home.dir, 'agent.mjs'));
      const world = testWorld();
      const taskFile = join(home.dir, 'tasks', 'tasks.mjs');
      const nested = await runRollout({ task: world.task, taskFile, agent: join(home.dir, 'agent.mjs'), outDir: out.dir, limits: FAST });
      expect(nested.termination).toBe('load_error');
      expect(nested.error?.message).toMatch(/could read the task file's folder \(.*tasks\).*keep the agent in a folder of its own/);
      const artifacts = await runRollout({ task: world.task, agent: join(home.dir, 'agent.mjs'), outDir: join(home.dir, '.silo'), limits: FAST });
      expect(artifacts.termination).toBe('load_error');
      expect(artifacts.error?.message).toMatch(/could read the artifacts folder/);
    } finally {
      home.remove();
    }
  });

  it("puts what the agent prints in the trace as agent_log events, never on the host's stdout", async () => {
    const captured: string[] = [];
    const capture = (stream: NodeJS.WriteStream) =>
      vi.spyOn(stream, 'write').mockImplementation(function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
        captured.push(String(chunk));
        const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      } as NodeJS.WriteStream['write']);
    const stdout = capture(process.stdout);
    const stderr = capture(process.stderr);
    let run: Rollout;
    try {
      const world = testWorld();
      run = await roll(world, hostile('prints'));
      expectGraded(world, run, 'passed');
      // Worker stdio reaches the host asynchronously: give stray output time to arrive.
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
    }
    expect(captured.filter((text) => text.includes('HOSTILE'))).toEqual([]);
    expect(run.result.termination).toBe('returned');
    const logs = eventsOf(run.files.trace, 'agent_log').map(({ message, stream }) => ({ message, stream }));
    expect(logs).toEqual([
      { message: 'HOSTILE-CONSOLE-LOG { answer: 42 }', stream: 'stdout' },
      { message: 'HOSTILE-CONSOLE-ERROR', stream: 'stderr' },
      { message: 'HOSTILE-STDOUT-WRITE', stream: 'stdout' },
      { message: 'HOSTILE-STDERR-WRITE', stream: 'stderr' },
    ]);
  });

  it('records a thrown value that cannot even be described as threw, and grades the world', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('throws-unprintable'));
    expect(run.result.termination).toBe('threw');
    expectGraded(world, run, 'failed');
    expect(eventsOf(run.files.trace, 'agent_threw')).toHaveLength(1);
  });

  it('keeps a bounded part of a log flood, so printing in a loop cannot fill the host', async () => {
    const world = testWorld();
    // The agent prints past the budget before it looks at its signal, however slow the machine: it
    // keeps going through the grace period if it must.
    const run = await roll(world, hostile('log-flood'), { timeoutMs: 1000, graceMs: 150_000 });
    expect(run.result.termination).toBe('timeout');
    expectGraded(world, run, 'failed');
    const logs = eventsOf(run.files.trace, 'agent_log');
    expect(logs.at(-1)?.message).toMatch(/^silo: the agent's logs passed the per-run budget \(\d+ characters, \d+ per event\); later logs are dropped$/);
    const kept = logs.reduce((sum, e) => sum + e.message.length, 0);
    expect(kept).toBeLessThanOrEqual(LOG_MAX_CHARS_PER_RUN + 1000);
    expect(statSync(join(run.result.runDir, 'trace.jsonl')).size).toBeLessThan(LOG_MAX_CHARS_PER_RUN + 1024 * 1024);
  });

  it('refuses to run a module without a default export: load_error, status error, every artifact written', async () => {
    const world = testWorld();
    const run = await roll(world, hostile('no-default-export'));
    expect(run.result.status).toBe('error');
    expect(run.result.termination).toBe('load_error');
    expect(world.verified).toBe(0);
    expect(run.files.result.error?.code).toBe('agent_load_error');
    expect(run.files.result.error?.message).toMatch(/default-export/);
    expect(run.files.result.error?.message).toContain('no-default-export.ts');
    expect(run.files.result.score).toBeNull();
    expect(run.files.diff).toEqual([]);
  });
});

describe('hostile tools and verifiers', () => {
  it('turns a tool result that cannot be cloned, and a tool that throws, into tool_error results', async () => {
    const world = testWorld({
      instruction: 'returns_function, explodes, increment',
      tools: [
        defineTool({
          name: 'returns_function',
          description: 'Returns a function, which cannot cross to the agent.',
          inputSchema: { type: 'object', properties: {} } as const,
          run: () => ({ callback: () => 'not data' }),
        }),
        defineTool({
          name: 'explodes',
          description: 'Always throws.',
          inputSchema: { type: 'object', properties: {} } as const,
          run: () => {
            throw new Error('the tool exploded on purpose');
          },
        }),
      ],
    });
    const run = await roll(world, hostile('calls-every-tool'));
    expect(run.result.termination).toBe('returned');
    expectGraded(world, run, 'passed');
    const results = JSON.parse(run.result.output ?? 'null');
    expect(results.returns_function).toMatchObject({ ok: false, error: { code: 'tool_error' } });
    expect(results.returns_function.error.message).toMatch(/returns_function returned a value that cannot be cloned/);
    expect(results.explodes).toEqual({ ok: false, error: { code: 'tool_error', message: 'the tool exploded on purpose' } });
    // The run went on after both.
    expect(results.increment).toEqual({ ok: true, value: 1 });
    expect(eventsOf(run.files.trace, 'tool_result').map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['tool_error', 'tool_error', 'ok']);
  });

  it('makes a verifier that throws a verifier_error run and still writes every artifact', async () => {
    const world = testWorld({
      verify: () => {
        throw new Error('the verifier blew up');
      },
    });
    const run = await roll(world, fileURLToPath(new URL('../../fixtures/agents/do-nothing.ts', import.meta.url)));
    expect(run.result.termination).toBe('returned');
    expect(run.result.status).toBe('error');
    expect(world.verified).toBe(1);
    expect(run.files.result.error?.code).toBe('verifier_error');
    expect(run.files.result.error?.message).toContain('the verifier blew up');
    expect(run.files.result.score).toBeNull();
    expect(run.files.result.output).toBe('I could not do anything.');
  });
});

describe('the grace period', () => {
  it('keeps the output of an agent that returns after its signal fired; the termination is the limit', async () => {
    const world = testWorld({ verify: ({ output }) => [check.equal('partial answer kept', output, 'partial')] });
    const run = await roll(world, hostile('returns-on-abort'), { timeoutMs: 500, graceMs: 2_000 });
    expect(run.result.termination).toBe('timeout');
    expect(run.result.output).toBe('partial');
    expectGraded(world, run, 'passed');
    expect(run.files.result.output).toBe('partial');
    expect(eventsOf(run.files.trace, 'agent_returned')).toEqual([expect.objectContaining({ output: 'partial' })]);
    expect(eventsOf(run.files.trace, 'agent_log').map((e) => e.message)).toEqual([expect.stringMatching(/^stopping: timeout/)]);
  });
});

describe.each(['thread', 'process'] as const)('typed arrays handed to an agent (isolation %s)', (isolation) => {
  it("carry their own bytes only, never the rest of the memory they are views of (Node's shared pool, other rollouts' data in it)", async () => {
    // Another rollout's data, left in Node's shared pool just before each small Buffer is made.
    const SECRET = 'host-secret-of-another-rollout-7731';
    Buffer.from(SECRET);
    const blob = Buffer.from('option');
    Buffer.from(SECRET);
    const hint = Buffer.from('default');
    const world = testWorld({
      // (the agent looks for it)
      instruction: SECRET,
      tools: [
        defineTool({
          name: 'pooled',
          description: 'Returns small Buffers and views of memory that holds more than them.',
          inputSchema: { type: 'object', properties: { hint: { type: 'string', default: hint } } },
          run: () => {
            Buffer.from(SECRET);
            const memory = new ArrayBuffer(128);
            Buffer.from(memory).write(SECRET, 0);
            Buffer.from(memory).write(SECRET, 64);
            new Float64Array(memory, 40, 2).set([1.5, 2.5]);
            Buffer.from(memory).write('view', 36);
            return {
              text: Buffer.from('abc'),
              // At every offset modulo 8 in the message: V8's deserializer (the sandbox's) copies a
              // Float64Array at an unaligned one into a slice of the sandbox's own pool.
              floats: Array.from({ length: 8 }, (_, pad) => ({ pad: 'x'.repeat(pad), values: new Float64Array(memory, 40, 2) })),
              view: new DataView(memory, 36, 4),
              map: new Map([['entry', Buffer.from('in a map')]]),
            };
          },
        }),
      ],
    });
    const pool = isolation === 'thread' ? new AgentPool({ maxThreads: 1 }) : undefined;
    try {
      const result = await runRollout({ task: world.task, agent: hostile('reads-pool'), outDir: out.dir, limits: FAST, agentOptions: { blob }, ...(pool ? { pool } : {}) });
      expect(result.termination).toBe('returned');
      expect(readRunFiles(result.runDir).run.isolation).toEqual(isolation === 'thread' ? 'thread' : expect.stringMatching(/^(bwrap|unshare|process)$/));
      const findings = JSON.parse(result.output ?? 'null') as PoolFinding[];
      const hex = (text: string): string => Buffer.from(text).toString('hex');
      const floats = Buffer.from(new Float64Array([1.5, 2.5]).buffer).toString('hex');
      // Every view, of the type the agent would get it as from structured clone, with its bytes.
      expect(findings.map((f) => [f.where, f.type, f.hex])).toEqual([
        ['result.text', 'Uint8Array', hex('abc')],
        ...Array.from({ length: 8 }, (_, pad) => [`result.floats.${pad}.values`, 'Float64Array', floats]),
        ['result.view', 'DataView', hex('view')],
        ['result.map.get(entry)', 'Uint8Array', hex('in a map')],
        ['tools.pooled.hint.default', 'Uint8Array', hex('default')],
        ['options.blob', 'Uint8Array', hex('option')],
      ]);
      // And nothing more: behind each, memory of exactly its size.
      for (const f of findings) {
        expect(f.bufferByteLength, f.where).toBe(f.byteLength);
        expect(f.secret, f.where).toBe(false);
      }
    } finally {
      await pool?.destroy();
    }
  });
});

describe('single-use workers', () => {
  it('never lets a later rollout run in a worker whose agent disabled process.exit', async () => {
    // One thread at most: if the first worker went back to the pool, the second rollout would get it.
    const pool = new AgentPool({ maxThreads: 1, minThreads: 1 });
    try {
      const first = testWorld({ instruction: 'first rollout' });
      const a = await runRollout({ task: first.task, agent: hostile('keeps-its-worker'), outDir: out.dir, limits: FAST, pool });
      expect(a.termination).toBe('returned');
      expect(a.output).toBe('none');
      const second = testWorld({ instruction: 'second rollout' });
      const b = await runRollout({ task: second.task, agent: hostile('keeps-its-worker'), outDir: out.dir, limits: FAST, pool });
      expect(b.termination).toBe('returned');
      expect(b.output).toBe('none');
    } finally {
      await pool.destroy();
    }
  });
});

describe('built-ins patched by an agent', () => {
  it('never reach a later rollout: its tool results and its own code run on untouched built-ins', async () => {
    const pool = new AgentPool({ maxThreads: 1, minThreads: 1 });
    try {
      const patcher = await runRollout({ task: testWorld().task, agent: fileURLToPath(new URL('../../fixtures/agents/hostile/patches-builtins.mjs', import.meta.url)), outDir: out.dir, pool, limits: FAST });
      expect(patcher.output).toBe('patched');
      const world = testWorld({ instruction: 'record' });
      const r = await runRollout({ task: world.task, agent: fileURLToPath(new URL('../../fixtures/agents/hostile/reports-result.mjs', import.meta.url)), outDir: out.dir, pool, limits: FAST });
      expect(JSON.parse(r.output!)).toEqual({ result: { ok: true, value: { recorded: 1 } }, mapped: [2, 4] });
    } finally {
      await pool.destroy();
    }
  });
});

describe('after all of the above', () => {
  it('still runs an ordinary agent in a fresh worker', async () => {
    const world = testWorld();
    const run = await roll(world, fileURLToPath(new URL('../../fixtures/agents/do-nothing.ts', import.meta.url)));
    expect(run.result.termination).toBe('returned');
    expectGraded(world, run, 'passed');
  });
});
