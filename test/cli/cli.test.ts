import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunRecord } from '../../src/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { BIN, PLAIN_ENV, runSilo } from './silo.js';
import { INIT_FILES } from '../../src/init.js';

const out = tempDir('silo-cli-');
afterAll(() => out.remove());


const silo = (...args: string[]) => runSilo(args);

const TASKS = 'fixtures/helpdesk/tasks.ts';
const SOLVER = 'fixtures/agents/helpdesk-solver.ts';
const LIAR = 'fixtures/agents/confident-liar.ts';

describe('silo run', () => {
  it('exits 0 when every run passes and prints a line per task and the artifact folder', async () => {
    const r = await silo('run', TASKS, '--agent', SOLVER, '--task', 'helpdesk/close-ticket', '--task', 'helpdesk/escalate-*', '--out', out.dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/✓ helpdesk\/close-ticket\s+passed/);
    expect(r.stdout).toMatch(/✓ helpdesk\/escalate-priority\s+passed/);
    expect(r.stdout).toMatch(/2 runs: 2 passed/);
  });

  it('exits 1 when a run fails, naming the failed check and how to show the run', async () => {
    const r = await silo('run', TASKS, '--agent', LIAR, '--task', 'helpdesk/close-ticket', '--out', out.dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/ungrounded_answer: the agent answered without a single successful tool call/);
    expect(r.stdout).toMatch(/✗ t3 is closed/);
    expect(r.stdout).toMatch(/silo show [0-9A-Z]{26}/);
  });

  it('ends once the command has returned, with its code, even when something keeps the event loop alive', async () => {
    const started = Date.now();
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ['--import', './fixtures/cli/leaks-a-handle.mjs', BIN, 'run', TASKS, '--agent', 'no-such-agent.mjs', '--out', out.dir], { env: PLAIN_ENV, stdio: 'ignore' });
      // (without the bound, it would run for ever: ended here, and the test fails)
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.once('exit', (c) => {
        clearTimeout(killer);
        resolve(c);
      });
    });
    expect(code).toBe(2);
    // A generous bound: the grace is 5 s.
    expect(Date.now() - started).toBeLessThan(55_000);
  }, 70_000);

  it('exits 1 for a failed run whose reader closed the pipe before the end (silo run … | head -1)', async () => {
    // The read end is closed before silo writes anything: every write of its meets EPIPE.
    const child = spawn(process.execPath, [BIN, 'run', TASKS, '--agent', LIAR, '--task', 'helpdesk/close-ticket', '--out', out.dir], { env: PLAIN_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect([code, stderr]).toEqual([1, '']);
  });

  it('puts how a failed run ended (what its agent threw) first among the findings it prints', async () => {
    const r = await silo('run', TASKS, '--agent', 'fixtures/agents/flails-then-throws.mjs', '--task', 'helpdesk/close-ticket', '--out', out.dir);
    expect(r.code).toBe(1);
    const findings = r.stdout.split('\n').filter((l) => /^ {4}[a-z_]+: /.test(l));
    expect(findings[0]).toBe('    threw: the agent threw: gave up after flailing');
    expect(findings.slice(1).every((l) => l.startsWith('    hallucinated_tool: '))).toBe(true);
  });

  it('prints a JSON array with --json', async () => {
    const r = await silo('run', TASKS, '--agent', SOLVER, '--task', 'helpdesk/close-ticket', '--seed', '5', '--json', '--out', out.dir);
    const rows = JSON.parse(r.stdout) as Record<string, unknown>[];
    expect(rows).toHaveLength(1);
    expect(Object.keys(rows[0]!).sort()).toEqual(['runDir', 'runId', 'score', 'status', 'taskId', 'termination']);
    expect(rows[0]).toMatchObject({ taskId: 'helpdesk/close-ticket', status: 'passed', score: 1, termination: 'returned' });
  });

  it("records the agent in run.json as silo eval does: the module's absolute path, given a relative one", async () => {
    const dir = join(out.dir, 'same-agent');
    const run = await silo('run', TASKS, '--agent', SOLVER, '--task', 'helpdesk/close-ticket', '--json', '--out', dir);
    const evaluated = await silo('eval', TASKS, '--agent', SOLVER, '--task', 'helpdesk/close-ticket', '--out', dir);
    expect([run.code, evaluated.code]).toEqual([0, 0]);
    const runs = readdirSync(join(dir, 'runs')).map((id) => JSON.parse(readFileSync(join(dir, 'runs', id, 'run.json'), 'utf8')) as RunRecord);
    expect(runs.map((r) => r.evalId === undefined)).toEqual(expect.arrayContaining([true, false]));
    for (const r of runs) expect(r.agent).toBe(resolve(SOLVER));
    const started = readFileSync(join(dir, 'runs', runs[0]!.runId, 'trace.jsonl'), 'utf8').split('\n')[0]!;
    expect(JSON.parse(started)).toMatchObject({ type: 'run_started', agent: resolve(SOLVER) });
  });

  it('applies --timeout and --max-tool-calls', async () => {
    const r = await silo('run', TASKS, '--agent', SOLVER, '--task', 'helpdesk/assign-urgent-to-on-call', '--max-tool-calls', '1', '--json', '--out', out.dir);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)[0].termination).toBe('tool_call_limit');
    const t = await silo('run', TASKS, '--agent', 'fixtures/agents/hostile/infinite-loop.ts', '--task', 'helpdesk/close-ticket', '--timeout', '300', '--json', '--out', out.dir);
    expect(JSON.parse(t.stdout)[0].termination).toBe('timeout');
  });

  it.each([
    [['run', 'missing.ts', '--agent', SOLVER], /task file not found: .*missing\.ts/],
    [['run', TASKS, '--agent', 'missing-agent.ts'], /agent file not found/],
    [['run', TASKS, '--agent', 'openia:gpt-4o'], /agent file not found: .*openia:gpt-4o; .*\(the built-in agents are openai:<model> and anthropic:<model>\)/],
    // (a provider's name alone: told the built-in agents too, with that provider's)
    [['run', TASKS, '--agent', 'openai'], /agent file not found: .*\/openai; .*\(the built-in agents are openai:<model> and anthropic:<model>: --agent openai:gpt-4o-mini, say\)$/m],
    [['eval', TASKS, '--agent', 'anthropic'], /agent file not found: .*\/anthropic; .*: --agent anthropic:claude-sonnet-4-5, say\)$/m],
    [['run', TASKS], /^silo: --agent is required: the agent module/],
    [['run', TASKS, '--agent', SOLVER, '--timeout', 'soon'], /--timeout <ms>.*expected an integer/],
    [['run', TASKS, '--agent', SOLVER, '--task', 'nope/*'], /no task matches --task nope\/\*/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['show', 'NOSUCHRUN', '--out', 'nowhere'], /no run NOSUCHRUN/],
  ])('exits 2 with one line for bad usage: %j', async (args, message) => {
    const r = await silo(...args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  // Node's recursive mkdir spins there for ever, deaf to Ctrl-C: the child is killed after 30 s.
  it.runIf(existsSync('/proc/self')).each(['run', 'eval'])('silo %s --out /proc/nope exits 2 at once, naming --out', async (command) => {
    const r = await runSilo([command, TASKS, '--agent', SOLVER, '--task', 'helpdesk/close-ticket', '--out', '/proc/nope'], {}, { timeoutMs: 30_000, killSignal: 'SIGKILL' });
    expect(r.stderr).toBe('silo: cannot write to /proc/nope: no folder can be made there (ENOENT); give --out a folder you can write to, or fix its permissions\n');
    expect(r.code).toBe(2);
  });

  it('exits 2 with one line for a task file that does not load', async () => {
    const file = join(out.dir, 'broken.tasks.mjs');
    writeFileSync(file, 'export default [{ id: "x" }];\n');
    const r = await silo('run', file, '--agent', SOLVER);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/broken\.tasks\.mjs.*needs an instruction/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 2 with the location for a TypeScript task file with a syntax error', async () => {
    const file = join(out.dir, 'syntax.tasks.ts');
    writeFileSync(file, 'const broken: number = ;\nexport default [];\n');
    const r = await silo('run', file, '--agent', SOLVER);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot load task file .*syntax\.tasks\.ts: syntax error: .*syntax\.tasks\.ts:1:\d+: ERROR/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('says so when a task file or agent path is a directory', async () => {
    const dirTask = await silo('run', 'fixtures/helpdesk', '--agent', SOLVER);
    expect(dirTask.code).toBe(2);
    expect(dirTask.stderr).toMatch(/is a directory; `silo run` takes a task file/);
    const dirAgent = await silo('run', TASKS, '--agent', 'fixtures/agents');
    expect(dirAgent.code).toBe(2);
    expect(dirAgent.stderr).toMatch(/agents is a directory/);
  });

  it('records an agent without a default export as an error run (exit 1), not a usage error', async () => {
    const r = await silo('run', TASKS, '--agent', 'fixtures/agents/hostile/no-default-export.ts', '--task', 'helpdesk/close-ticket', '--out', out.dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/agent_load_error: .*default-export/);
  });
});

describe('silo show', () => {
  it('shows the latest run: header, timeline with inputs and results, changes and checks', async () => {
    await silo('run', TASKS, '--agent', 'fixtures/agents/hallucinator.ts', '--task', 'helpdesk/close-ticket', '--out', out.dir);
    const r = await silo('show', '--out', out.dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^helpdesk\/close-ticket {2}PASSED {2}score 1\.00/);
    expect(r.stdout).toMatch(/^time .* total · worker start-up .* · world .* · agent .* \(thinking .*, tools .*\) · grading .* · artifacts /m);
    expect(r.stdout).toMatch(/#1 close_ticket .*\n.*→ tool_not_found/);
    expect(r.stdout).toMatch(/#2 update_ticket \{"ticketId":"t3".*\n.*→ invalid_input/);
    expect(r.stdout).toMatch(/→ ok/);
    expect(r.stdout).toMatch(/~ tickets\.t3\.status: "open" → "closed"/);
    expect(r.stdout).toMatch(/✓ t3 is closed/);
    expect(r.stdout).not.toContain(String.fromCharCode(27));
  });

  it('prints run, result, trace and diff with --json, found by a runId prefix', async () => {
    const ran = await silo('run', TASKS, '--agent', SOLVER, '--task', 'helpdesk/close-ticket', '--json', '--out', out.dir);
    const runId = JSON.parse(ran.stdout)[0].runId as string;
    const r = await silo('show', runId.slice(0, 20), '--json', '--out', out.dir);
    const shown = JSON.parse(r.stdout);
    expect(shown.run.runId).toBe(runId);
    expect(shown.result.status).toBe('passed');
    expect(shown.trace[0].type).toBe('run_started');
    expect(shown.diff.length).toBeGreaterThan(0);
  });
});

describe('silo tools', () => {
  it('prints exactly the schemas an agent receives, once per environment, with its tasks', async () => {
    const r = await silo('tools', TASKS, '--json');
    const rows = JSON.parse(r.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0].environment).toBe('helpdesk');
    expect(rows[0].tasks).toHaveLength(6);
    const close = rows[0].tools.find((t: { name: string }) => t.name === 'update_ticket');
    expect(close.inputSchema.additionalProperties).toBe(false);
    const human = await silo('tools', TASKS, '--task', 'helpdesk/close-ticket');
    expect(human.stdout).toMatch(/^helpdesk {2}7 tools · tasks: helpdesk\/close-ticket$/m);
    expect(human.stdout).toMatch(/ticket_id: string/);
  });
});

describe('silo ls', () => {
  it('lists recent runs newest first', async () => {
    const r = await silo('ls', '--out', out.dir, '--json');
    const { runs } = JSON.parse(r.stdout);
    expect(runs.length).toBeGreaterThan(3);
    const ids = runs.map((x: { runId: string }) => x.runId);
    expect([...ids].sort().reverse()).toEqual(ids);
    const human = await silo('ls', '--out', out.dir, '--limit', '2');
    expect(human.stdout).toMatch(/Runs \(2 of \d+, newest first\)/);
  });

  it('says how to start when there are no runs', async () => {
    const empty = tempDir('silo-empty-');
    const r = await silo('ls', '--out', empty.dir);
    empty.remove();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/no runs .* yet; start one with `silo run/);
  });
});

describe('--help', () => {
  it.each([[[]], [['run']], [['show']], [['tools']], [['ls']]])('is available for %j', async (cmd) => {
    const r = await silo(...cmd, '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Usage: silo/);
  });

  it.each(['run', 'eval', 'serve', 'check'])('of %s gives examples on the files silo init writes, none from this repository', async (command) => {
    const r = await silo(command, '--help');
    expect(r.stdout).toMatch(/^Examples?, on the files `npx silo init` writes \(evals\/\):$/m);
    expect(r.stdout).not.toMatch(/fixtures\//);
    const written = ['evals', ...INIT_FILES];
    for (const [path] of r.stdout.matchAll(/(?<=\s)evals(?:\/[\w./-]+)?/g)) expect(written, path).toContain(path);
  });

  it('is what silo help prints, on stdout, exiting 0', async () => {
    const r = await silo('help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: silo \[options\] \[command\]/);
    // Every file of a run folder, models.jsonl included.
    expect(r.stdout).toMatch(/^Artifacts go to \.silo\/runs\/<runId>\/ \(run\.json, trace\.jsonl, state-diff\.json, result\.json, and\nmodels\.jsonl when the agent or its simulated user called a model\)\.$/m);
  });

  it('goes to stderr with exit code 2 when no command is given: a usage error, as an unknown command is', async () => {
    const r = await silo();
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Usage: silo \[options\] \[command\]/);
    expect(r.stderr).toMatch(/Exit codes: 0 all passed, 1 something failed, 2 usage or set-up error\./);
    expect(r.code).toBe(2);
  });
});
