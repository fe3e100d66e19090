import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { check, defineTool, loadTasks, runRollout, SiloError, type Task } from '../../src/index.js';
import { applyChanges, type Change } from '../../src/rollout/diff.js';
import { closeSharedPool } from '../../src/pool/runners.js';
import { eventsOf, readRunFiles, tempDir, testWorld, type TestState } from '../helpers.js';

const out = tempDir('silo-rollout-');
afterAll(() => out.remove());

const helpdesk = await loadTasks(['fixtures/helpdesk/tasks.ts']);
const byId = (id: string): Task => helpdesk.find((t) => t.task.id === `helpdesk/${id}`)!.task;
const agent = (name: string): string => `fixtures/agents/${name}`;

describe('runRollout on the helpdesk world', () => {
  it('passes every task with the solver, and writes all four artifacts', async () => {
    for (const { task, file } of helpdesk) {
      const r = await runRollout({ task, taskFile: file, agent: agent('helpdesk-solver.ts'), outDir: out.dir });
      expect(r.status, `${task.id}: ${JSON.stringify(r.checks.filter((c) => !c.pass))}`).toBe('passed');
      expect(r.score).toBe(1);
      expect(r.diagnosis, task.id).toEqual([]);
      const files = readRunFiles(r.runDir);
      expect(files.run.status).toBe('passed');
      expect(files.run.taskFile).toBe(file);
      expect(files.result.checks.length).toBeGreaterThan(0);
      expect(files.trace[0]?.type).toBe('run_started');
      expect(files.trace.at(-1)?.type).toBe('run_finished');
    }
  });

  it('records a relative task file as the absolute path it names, so a regrade from elsewhere finds it', async () => {
    const { task, file } = helpdesk[0]!;
    const relative = join('fixtures', 'helpdesk', 'tasks.ts');
    expect(resolve(relative)).toBe(file);
    const r = await runRollout({ task, taskFile: relative, agent: agent('do-nothing.ts'), outDir: out.dir, isolation: 'thread' });
    expect(readRunFiles(r.runDir).run.taskFile).toBe(file);
  });

  it('fails every task with the do-nothing agent', async () => {
    for (const { task } of helpdesk) {
      const r = await runRollout({ task, agent: agent('do-nothing.ts'), outDir: out.dir });
      expect(r.status, task.id).toBe('failed');
      expect(r.termination).toBe('returned');
    }
  });

  it('records a confident liar as an answer with no tool call behind it', async () => {
    const r = await runRollout({ task: byId('count-open-for-user'), agent: agent('confident-liar.ts'), outDir: out.dir });
    const { trace, run } = readRunFiles(r.runDir);
    expect(r.status).toBe('failed');
    expect(run.toolCalls).toBe(0);
    expect(eventsOf(trace, 'tool_call')).toHaveLength(0);
    expect(eventsOf(trace, 'agent_returned')[0]?.output).toMatch(/3 open tickets/);
    const answer = eventsOf(trace, 'agent_returned')[0]!;
    expect(r.diagnosis[0]).toMatchObject({ code: 'ungrounded_answer', seq: answer.seq });
    expect(readRunFiles(r.runDir).result.diagnosis).toEqual(r.diagnosis);
  });

  it('lets a hallucinating agent read its errors and correct itself', async () => {
    const r = await runRollout({ task: byId('close-ticket'), agent: agent('hallucinator.ts'), outDir: out.dir });
    expect(r.status).toBe('passed');
    const { trace } = readRunFiles(r.runDir);
    const results = eventsOf(trace, 'tool_result');
    expect(results.map((e) => (e.ok ? 'ok' : e.error.code))).toEqual(['tool_not_found', 'invalid_input', 'ok']);
    const [notFound, invalid] = results;
    expect(!notFound!.ok && notFound!.error.message).toMatch(/update_ticket/);
    expect(!invalid!.ok && invalid!.error.message).toMatch(/ticketId.*did you mean 'ticket_id'/);
    expect(eventsOf(trace, 'agent_log').length).toBeGreaterThan(0);
  });

  it('writes a state diff that turns the initial world into the final world exactly', async () => {
    const task = byId('assign-urgent-to-on-call');
    const r = await runRollout({ task, agent: agent('helpdesk-solver.ts'), outDir: out.dir, seed: 7 });
    const { diff } = readRunFiles(r.runDir);
    expect(diff.length).toBeGreaterThan(0);
    let final: unknown;
    const probe = { ...task, verify: (args: { final: unknown }) => ((final = structuredClone(args.final)), [check.ok('seen', true)]) };
    await runRollout({ task: probe, agent: agent('helpdesk-solver.ts'), outDir: out.dir, seed: 7 });
    const initial = await task.environment.createState({ seed: 7, random: Math.random, now: () => 0, advance: () => {} });
    expect(applyChanges(initial, diff as Change[])).toEqual(final);
  });

  it('fails a change outside mayChange and names the path', async () => {
    const world = testWorld({ instruction: 'increment', verify: () => [check.ok('answered', true)] });
    const task = { ...world.task, mayChange: ['values.allowed'] };
    const r = await runRollout({ task, agent: 'fixtures/agents/hostile/calls-every-tool.ts', outDir: out.dir });
    const may = r.checks.find((c) => c.name === 'mayChange');
    expect(may?.pass).toBe(false);
    expect(may?.actual).toEqual(['count']);
    expect(may?.message).toMatch(/outside mayChange: count/);
    expect(r.status).toBe('failed');
  });
});

describe('per-call changes', () => {
  it('puts on each tool_result the changes its call made; replayed in order they give the final world', async () => {
    const task = byId('assign-urgent-to-on-call');
    const r = await runRollout({ task, agent: agent('helpdesk-solver.ts'), outDir: out.dir, seed: 7 });
    const { trace, diff, run } = readRunFiles(r.runDir);
    expect(run.tracking).toEqual({ mode: 'writes' });
    const results = eventsOf(trace, 'tool_result');
    const writing = results.filter((e) => e.changes !== undefined);
    expect(writing.length).toBeGreaterThan(0);
    // Read-only calls changed nothing and carry nothing.
    const calls = new Map(eventsOf(trace, 'tool_call').map((e) => [e.callId, e.name]));
    for (const e of results) {
      if (['search_users', 'get_user', 'list_tickets', 'get_ticket'].includes(calls.get(e.callId) ?? '')) expect(e.changes).toBeUndefined();
    }
    const initial = () => task.environment.createState({ seed: 7, random: Math.random, now: () => 0, advance: () => {} });
    const stepByStep = applyChanges(await initial(), writing.flatMap((e) => e.changes ?? []) as Change[]);
    expect(stepByStep).toEqual(applyChanges(await initial(), diff as Change[]));
  });

  it('records what a tool changed before it threw, on its failed tool_result', async () => {
    const half = defineTool({
      name: 'half_done',
      description: 'Writes, then fails.',
      inputSchema: { type: 'object', properties: {} } as const,
      run(state: TestState) {
        state.values.started = true;
        throw new Error('fell over halfway');
      },
    });
    const world = testWorld({ instruction: 'half_done', tools: [half] });
    const r = await runRollout({ task: world.task, agent: agent('call-once.mjs'), outDir: out.dir });
    const [result] = eventsOf(readRunFiles(r.runDir).trace, 'tool_result');
    expect(result?.ok).toBe(false);
    expect(result?.changes).toEqual([{ kind: 'N', path: ['values', 'started'], rhs: true }]);
  });

  it('snapshots a world that is not plain data, says why in run.json, and still diffs it exactly', async () => {
    const stamp = defineTool({
      name: 'stamp',
      description: 'Sets a date.',
      inputSchema: { type: 'object', properties: {} } as const,
      run(state: { when: Date; n: number }) {
        state.when = new Date(86_400_000);
        state.n += 1;
      },
    });
    const task = {
      id: 'test/dates',
      instruction: 'stamp',
      environment: { name: 'dated', createState: () => ({ when: new Date(0), n: 0 }), tools: [stamp] },
      verify: ({ initial, final }: { initial: { n: number }; final: { n: number } }) => [check.equal('n', final.n, initial.n + 1)],
    };
    const r = await runRollout({ task, agent: agent('call-once.mjs'), outDir: out.dir });
    expect(r.status).toBe('passed');
    const { run, trace, diff } = readRunFiles(r.runDir);
    expect(run.tracking).toEqual({ mode: 'snapshot', reason: 'world.when is a Date' });
    expect(eventsOf(trace, 'tool_result')[0]?.changes).toBeUndefined();
    expect(diff.map((c) => (c as Change).path)).toEqual([['when'], ['n']]);
  });
});

describe('run.json', () => {
  it('exists from the start with status "running"', async () => {
    const dir = tempDir('silo-running-');
    try {
      // The run lasts at least timeoutMs after its agent starts: time enough to look, however loaded the machine.
      const world = testWorld({ limits: { timeoutMs: 5_000, graceMs: 100 } });
      const pending = runRollout({ task: world.task, agent: 'fixtures/agents/hostile/never-settles.ts', outDir: dir.dir });
      let seen: { status: string } | undefined;
      for (let i = 0; i < 1_000 && !seen; i++) {
        await new Promise((r) => setTimeout(r, 20));
        const runs = existsSync(join(dir.dir, 'runs')) ? readdirSync(join(dir.dir, 'runs')) : [];
        if (runs[0]) seen = JSON.parse(readFileSync(join(dir.dir, 'runs', runs[0], 'run.json'), 'utf8'));
      }
      expect(seen?.status).toBe('running');
      const r = await pending;
      expect(readRunFiles(r.runDir).run.status).toBe('failed');
    } finally {
      dir.remove();
    }
  });

  it('is made while the agent starts; a folder that cannot be made stops the agent at once and is the set-up error, naming --out', async () => {
    const dir = tempDir('silo-refused-');
    try {
      // A file where the artifacts folder should be: nothing of the run can be written.
      const blocked = join(dir.dir, 'not-a-folder');
      writeFileSync(blocked, '');
      const world = testWorld({ limits: { timeoutMs: 120_000, graceMs: 100 } });
      const started = Date.now();
      const error = await runRollout({ task: world.task, agent: 'fixtures/agents/hostile/never-settles.ts', outDir: blocked }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SiloError);
      expect((error as SiloError).code).toBe('SILO_OUT_NOT_WRITABLE');
      expect((error as SiloError).message).toMatch(/cannot write to .*not-a-folder: a file is in the way of a folder.*--out/);
      // Not after the agent's two minutes: it was stopped as soon as the folder was refused.
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(world.verified).toBe(0);
    } finally {
      dir.remove();
    }
  });

  it('names --out when a link on the way to it points to nothing', async () => {
    const dir = tempDir('silo-dangling-');
    try {
      const dangling = join(dir.dir, 'dangling');
      symlinkSync(join(dir.dir, 'nowhere'), dangling);
      const error = await runRollout({ task: testWorld().task, agent: 'fixtures/agents/bench-caller.mjs', outDir: join(dangling, 'x') }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SiloError);
      expect((error as SiloError).code).toBe('SILO_OUT_NOT_WRITABLE');
      expect((error as SiloError).message).toMatch(/cannot write to .*dangling.x: a link on the way points to nothing \(ENOENT at .*\).*--out/);
    } finally {
      dir.remove();
    }
  });

  it('is not made for a rollout whose pool cannot be made (a bad SILO_SANDBOX)', async () => {
    const dir = tempDir('silo-no-pool-');
    const saved = process.env.SILO_SANDBOX;
    // The process-wide pool is made afresh, reading the variable again.
    await closeSharedPool();
    process.env.SILO_SANDBOX = 'bogus';
    try {
      await expect(runRollout({ task: testWorld().task, agent: 'fixtures/agents/bench-caller.mjs', outDir: dir.dir })).rejects.toThrow(/SILO_SANDBOX/);
      // Past the turn where a run's folder would be made.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(existsSync(join(dir.dir, 'runs'))).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.SILO_SANDBOX;
      else process.env.SILO_SANDBOX = saved;
      dir.remove();
    }
  });

  it('records the seed, and the same seed gives the same ctx.random()', async () => {
    const roll = defineTool({
      name: 'roll',
      description: 'A random number from the world.',
      inputSchema: { type: 'object', properties: {} } as const,
      run: (state: TestState, _input, ctx) => {
        state.values.roll = ctx.random();
        return state.values.roll;
      },
    });
    const rolls: unknown[] = [];
    for (const seed of [42, 42, 43]) {
      const world = testWorld({ tools: [roll], verify: ({ final }) => (rolls.push(final.values.roll), [check.ok('rolled', true)]) });
      const r = await runRollout({ task: world.task, agent: 'fixtures/agents/roller.mjs', outDir: out.dir, seed });
      expect(readRunFiles(r.runDir).run.seed).toBe(seed);
    }
    expect(typeof rolls[0]).toBe('number');
    expect(rolls[0]).toBe(rolls[1]);
    expect(rolls[0]).not.toBe(rolls[2]);
  });
});

describe('environment errors', () => {
  it('ends not_started with an environment_error when createState throws, artifacts whole', async () => {
    const world = testWorld();
    const task = { ...world.task, environment: { ...world.task.environment, createState: () => { throw new Error('seed file missing'); } } };
    const r = await runRollout({ task, agent: agent('do-nothing.ts'), outDir: out.dir });
    expect(r.status).toBe('error');
    expect(r.termination).toBe('not_started');
    expect(r.error?.code).toBe('environment_error');
    expect(r.error?.message).toMatch(/seed file missing/);
    const files = readRunFiles(r.runDir);
    expect(files.run.status).toBe('error');
    expect(files.result.error?.code).toBe('environment_error');
  });

  it('refuses a createState that hands out a cached object, saying how to fix it', async () => {
    const cached = { records: [], values: {}, settings: {}, count: 0 };
    const world = testWorld();
    const task = { ...world.task, environment: { ...world.task.environment, name: 'cached', createState: () => cached } };
    const r = await runRollout({ task, agent: agent('do-nothing.ts'), outDir: out.dir });
    expect(r.error?.code).toBe('environment_error');
    expect(r.error?.message).toMatch(/structuredClone/);
  });
});

describe('agents', () => {
  it('compiles a TypeScript agent with its own modules and runs it with the packages it imports', async () => {
    const world = testWorld();
    const r = await runRollout({ task: world.task, agent: agent('imports.ts'), outDir: out.dir });
    expect(r.termination).toBe('returned');
    expect(r.output).toBe('hello agent 26');
  });

  it("gives each module of a TypeScript agent its own source file as import.meta, so it reads the files next to it", async () => {
    const r = await runRollout({ task: testWorld({ instruction: 'where' }).task, agent: agent('ts-meta/agent.ts'), outDir: out.dir });
    expect(r.termination).toBe('returned');
    const folder = resolve('fixtures/agents/ts-meta');
    const seen = JSON.parse(r.output!) as Record<string, unknown>;
    expect(seen).toEqual({
      prompt: 'Answer carefully.',
      agent: { url: pathToFileURL(join(folder, 'agent.ts')).href, filename: join(folder, 'agent.ts'), dirname: folder },
      helper: { url: pathToFileURL(join(folder, 'lib', 'helper.ts')).href, filename: join(folder, 'lib', 'helper.ts'), dirname: join(folder, 'lib') },
    });
  });

  it("points a TypeScript agent's stack trace at its own source lines", async () => {
    const r = await runRollout({ task: testWorld({ instruction: 'throw' }).task, agent: agent('ts-meta/agent.ts'), outDir: out.dir });
    expect(r.termination).toBe('threw');
    const threw = eventsOf(readRunFiles(r.runDir).trace, 'agent_threw')[0]!;
    expect(threw.error.message).toBe('refused: Answer carefully.');
    const folder = resolve('fixtures/agents/ts-meta');
    // helper.ts line 7 throws; agent.ts line 12 called it.
    expect(threw.error.stack).toContain(`${join(folder, 'lib', 'helper.ts')}:7:`);
    expect(threw.error.stack).toContain(`${join(folder, 'agent.ts')}:12:`);
    expect(threw.error.stack).not.toContain('silo-agents');
  });

  it("points the stacks a TypeScript agent logs at its own source lines", async () => {
    const r = await runRollout({ task: testWorld({ instruction: 'log' }).task, agent: agent('ts-meta/agent.ts'), outDir: out.dir });
    expect(r.termination).toBe('returned');
    const logged = eventsOf(readRunFiles(r.runDir).trace, 'agent_log').map((e) => e.message).join('\n');
    expect(logged).toContain('Error: noted');
    expect(logged).toContain(`${join(resolve('fixtures/agents/ts-meta'), 'agent.ts')}:13:`);
  });

  it('says where a TypeScript agent does not compile, as a load_error', async () => {
    const home = tempDir('silo-broken-agent-');
    try {
      writeFileSync(join(home.dir, 'broken.ts'), 'export default function agent( {\n');
      const r = await runRollout({ task: testWorld().task, agent: join(home.dir, 'broken.ts'), outDir: out.dir });
      expect(r.termination).toBe('load_error');
      expect(r.error?.message).toMatch(/cannot compile the agent .*broken\.ts: .*\(.*broken\.ts:\d+\)/);
    } finally {
      home.remove();
    }
  });

  it('loads .mjs, .js and .ts agents', async () => {
    for (const file of ['fixtures/agents/roller.mjs', 'fixtures/agents/plain.js', agent('do-nothing.ts')]) {
      const r = await runRollout({ task: testWorld().task, agent: file, outDir: out.dir });
      expect(r.termination, file).toBe('returned');
    }
  });

  it('throws a SiloError for an agent file that does not exist', async () => {
    await expect(runRollout({ task: testWorld().task, agent: 'fixtures/agents/nope.ts', outDir: out.dir })).rejects.toThrow(SiloError);
  });

  it('is cancelled by its signal, recorded as cancelled and not graded', async () => {
    const world = testWorld();
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(), 300);
    const r = await runRollout({ task: world.task, agent: 'fixtures/agents/hostile/never-settles.ts', outDir: out.dir, signal: cancel.signal, limits: { graceMs: 100 } });
    expect(r.termination).toBe('cancelled');
    expect(r.status).toBe('error');
    expect(r.error?.code).toBe('cancelled');
    expect(world.verified).toBe(0);
    expect(readRunFiles(r.runDir).run.status).toBe('error');
  });
});

describe('hangs and floods', () => {
  it('finishes and writes every artifact when a tool never settles', async () => {
    const hang = defineTool({
      name: 'hang',
      description: 'Never answers.',
      inputSchema: { type: 'object', properties: {} } as const,
      run: () => new Promise<never>(() => {}),
    });
    const world = testWorld({ instruction: 'hang', tools: [hang], limits: { timeoutMs: 500, graceMs: 100 } });
    const r = await runRollout({ task: world.task, agent: 'fixtures/agents/call-once.mjs', outDir: out.dir });
    expect(r.termination).toBe('timeout');
    expect(r.status).toBe('failed');
    const files = readRunFiles(r.runDir);
    expect(files.run.status).toBe('failed');
    expect(files.result.termination).toBe('timeout');
  });

  it('charges every log event against the budget, so a flood of empty lines stays bounded', async () => {
    // The agent sends more events than the budget allows whatever the machine's load (it keeps
    // going through the grace period if it must), so the note does not depend on its speed.
    const world = testWorld({ limits: { timeoutMs: 1_500, graceMs: 60_000 } });
    const r = await runRollout({ task: world.task, agent: 'fixtures/agents/hostile/logs-empty-flood.mjs', outDir: out.dir });
    const { trace } = readRunFiles(r.runDir);
    const logs = eventsOf(trace, 'agent_log');
    // 16 MiB at 128 characters an event is at most 131,072 events.
    const seen = JSON.stringify({ termination: r.termination, error: r.error, logs: logs.length, events: trace.length, last: trace.at(-2) });
    expect(logs.length, seen).toBeLessThanOrEqual(131_073);
    expect(logs.at(-1)?.message, seen).toMatch(/per-run budget/);
    expect(r.termination).toBe('timeout');
    const fired = eventsOf(trace, 'limit_exceeded')[0];
    // The timeout still fires under the flood (a generous bound: CI machines may be loaded).
    expect(fired?.t).toBeLessThan(1_500 + 20_000);
  }, 120_000);
});

describe('call counters', () => {
  it('counts an input over maxMessageBytes as refused, not as a call that reached a tool', async () => {
    const world = testWorld({ limits: { maxMessageBytes: 1_024 } });
    const r = await runRollout({ task: world.task, agent: 'fixtures/agents/hostile/huge-input.ts', outDir: out.dir });
    const { run, trace } = readRunFiles(r.runDir);
    const results = eventsOf(trace, 'tool_result');
    const refused = results.filter((e) => !e.ok && e.error.code === 'limit_exceeded');
    expect(refused.length).toBeGreaterThan(0);
    expect(run.refusedCalls).toBe(refused.length);
    expect(run.toolCalls).toBe(results.length - refused.length);
  });
});

describe('agents that end their own worker', () => {
  it('records an uncaught exception in a stray callback as crashed, agent_exit, with its message', async () => {
    const r = await runRollout({ task: testWorld().task, agent: 'fixtures/agents/hostile/throws-later.mjs', outDir: out.dir });
    expect(r.termination).toBe('crashed');
    expect(r.error?.code).toBe('agent_exit');
    expect(r.error?.message).toMatch(/uncaught exception in the agent: stray failure in a callback/);
    expect(r.status).toBe('failed');
  });

  it('leaves an agent that handles its own uncaught exceptions running', async () => {
    const r = await runRollout({ task: testWorld().task, agent: 'fixtures/agents/handles-own-exceptions.mjs', outDir: out.dir });
    expect(r.termination).toBe('returned');
    expect(r.output).toBe('still here');
    expect(eventsOf(readRunFiles(r.runDir).trace, 'agent_log').map((e) => e.message)).toContain('caught: stray failure in a callback');
  });
});
