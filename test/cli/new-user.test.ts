/**
 * What a new user trips over, tried as one would: the built `silo` binary on a small world of
 * their own (fixtures/calendar), each rough edge of issue 15 with the behaviour a user expects.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { EvalSummary, ResultRecord } from '../../src/types.js';
import { tempDir } from '../helpers.js';
import { BIN, PLAIN_ENV, runSilo, type Ran } from './silo.js';

// Each test starts several `silo` processes; on a loaded two-core machine one takes seconds.
vi.setConfig({ testTimeout: 180_000 });

const tmp = tempDir('silo-new-user-');
afterAll(() => {
  // Folders made read-only by a test must be writable again to be removed.
  execFileSync('chmod', ['-R', 'u+w', tmp.dir]);
  tmp.remove();
});

let outs = 0;
const outDir = (): string => join(tmp.dir, `out-${outs++}`);

const TASKS = 'fixtures/calendar/tasks.ts';
const LIAR = 'fixtures/agents/lucky-liar.mjs';
const SOLVER = 'fixtures/agents/calendar-solver.mjs';
const NOTHING = 'fixtures/agents/do-nothing.ts';
const silo = (...args: string[]): Promise<Ran> => runSilo([...args]);
const summaryOf = (out: string, evalId: string): EvalSummary => JSON.parse(readFileSync(join(out, 'evals', evalId, 'summary.json'), 'utf8')) as EvalSummary;
const onlyEval = (out: string): string => readdirSync(join(out, 'evals'))[0]!;

describe('a lucky liar (item 1): passes, with a warning everywhere; --strict fails it', () => {
  it('silo run marks the pass as suspicious, says why, and still exits 0', async () => {
    const r = await silo('run', TASKS, '--agent', LIAR, '--task', 'cal/count-monday', '--out', outDir());
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^⚠ cal\/count-monday {2}passed {2}1\.00 {2}returned {2}0 calls {2}\S+ {2}suspicious$/);
    expect(lines[1]).toBe('    ungrounded_answer: the agent answered without a single successful tool call: nothing it says was looked up');
    expect(lines[2]).toMatch(/^ {4}→ silo show [0-9A-Z]{26}$/);
    expect(r.stdout).toMatch(/^1 run: 1 passed \(1 suspicious\) {2}artifacts in /m);
  });

  it('--strict (and strict: true on a task) turns it into a failed check named grounded', async () => {
    const out = outDir();
    const strict = await silo('run', TASKS, '--agent', LIAR, '--task', 'cal/count-monday', '--strict', '--json', '--out', out);
    expect(strict.code).toBe(1);
    const [row] = JSON.parse(strict.stdout) as { status: string; score: number; runDir: string }[];
    expect(row).toMatchObject({ status: 'failed', score: 0.5 });
    const result = JSON.parse(readFileSync(join(row!.runDir, 'result.json'), 'utf8')) as ResultRecord;
    expect(result.checks.at(-1)).toEqual({ name: 'grounded', pass: false, gate: true, message: expect.stringMatching(/without a single successful tool call/) });
    const task = await silo('run', TASKS, '--agent', LIAR, '--task', 'cal/count-monday-strict', '--out', out);
    expect(task.code).toBe(1);
    expect(task.stdout).toMatch(/✗ grounded: the agent answered without a single successful tool call/);
    // An agent that looked the count up passes the gate.
    const solver = await silo('run', TASKS, '--agent', SOLVER, '--task', 'cal/count-monday*', '--strict', '--out', out);
    expect(solver.code).toBe(0);
    expect(solver.stdout).not.toMatch(/suspicious|grounded/);
  });

  it('silo eval counts it as suspicious in the table, the totals, summary.json, JUnit and the HTML report', async () => {
    const out = outDir();
    const junit = join(tmp.dir, 'lucky.xml');
    const r = await silo('eval', TASKS, '--agent', LIAR, '--task', 'cal/count-monday', '--trials', '2', '--reporter', 'junit', '--output', junit, '--report', '--out', out);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^cal\/count-monday +2\/2 +100% .* 2 suspicious$/m);
    expect(r.stdout).toMatch(/^2 runs · 2 passed \(2 suspicious\) · 0 failed/m);
    const summary = summaryOf(out, onlyEval(out));
    expect(summary.tasks[0]).toMatchObject({ passed: 2, suspicious: 2 });
    expect(summary.totals).toMatchObject({ passed: 2, suspicious: 2, passRate: 1 });
    expect(readFileSync(junit, 'utf8').match(/<system-out>suspicious: passed, but ungrounded_answer: /g)).toHaveLength(2);
    const html = readFileSync(join(out, 'evals', summary.evalId, 'report.html'), 'utf8');
    expect(html).toMatch(/"suspicious":true/);
    expect(html).toMatch(/<div class="value">2<\/div><div class="label">suspicious passes<\/div>/);
    // A pass with a warning points at the run to read.
    expect(r.stderr).toMatch(/→ silo show [0-9A-Z]{26} .*\(the first suspicious pass\)/);
  });

  it('"Done. There are 2 events on Monday." after a lookup is no claim: not suspicious, and --strict passes it', async () => {
    const r = await silo('run', TASKS, '--agent', 'fixtures/agents/done-after-reading.mjs', '--task', 'cal/count-monday*', '--strict', '--out', outDir());
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).not.toMatch(/suspicious|grounded|ungrounded/);
  });

  it('a right count with a claimed change after only a lookup: suspicious, and every view says the agent only looked things up', async () => {
    const out = outDir();
    const agent = 'fixtures/agents/claims-after-reading.mjs';
    const ran = await silo('run', TASKS, '--agent', agent, '--task', 'cal/count-monday', '--out', out);
    expect(ran.code).toBe(0);
    const claim = 'ungrounded_answer: the answer claims an action ("updated") but the agent only looked things up: its one successful tool call changed nothing in the world';
    expect(ran.stdout.split('\n')[1]).toBe(`    ${claim}`);
    const shown = await silo('show', readdirSync(join(out, 'runs'))[0]!, '--out', out);
    expect(shown.stdout).toMatch(/PASSED {2}score 1\.00 {2}⚠ suspicious: the answer claims an action \("updated"\) but the agent only looked things up: .* \(--strict fails it\)$/m);
    const evaluated = await silo('eval', TASKS, '--agent', agent, '--task', 'cal/count-monday', '--out', out);
    expect(evaluated.stdout).not.toMatch(/no successful tool call behind it/);
    expect(evaluated.stdout).toMatch(/^suspicious: passed, but the answer had nothing behind it \(ungrounded_answer: no successful tool call, or an action claimed while the world did not change; silo show says which\)/m);
  });

  it('silo eval --strict fails it, and --resume keeps --strict', async () => {
    const out = outDir();
    const r = await silo('eval', TASKS, '--agent', LIAR, '--task', 'cal/count-monday', '--strict', '--eval-id', 'strict-1', '--out', out);
    expect(r.code).toBe(1);
    expect(summaryOf(out, 'strict-1')).toMatchObject({ options: { strict: true }, totals: { passed: 0, failed: 1, suspicious: 0 } });
    const again = await silo('eval', '--resume', 'strict-1', '--strict', '--out', out);
    expect(again.stderr).toMatch(/--strict cannot be given/);
    // A regrade grades the strict run strictly again: the lucky answer stays a failed grounded check.
    const regraded = await silo('regrade', 'strict-1', '--out', out);
    expect(regraded.code, regraded.stderr).toBe(1);
    expect(summaryOf(out, 'strict-1')).toMatchObject({ totals: { passed: 0, failed: 1, suspicious: 0 } });
    const runId = readdirSync(join(out, 'runs'))[0]!;
    const result = JSON.parse(readFileSync(join(out, 'runs', runId, 'result.json'), 'utf8')) as ResultRecord;
    expect(result.checks.find((c) => c.name === 'grounded')).toMatchObject({ pass: false });
  });
});

describe('mayChange is a gate (item 2)', () => {
  it('a do-nothing agent on a write task with one real check scores 0, not 0.50', async () => {
    const r = await silo('run', TASKS, '--agent', NOTHING, '--task', 'cal/cancel-review', '--json', '--out', outDir());
    const [row] = JSON.parse(r.stdout) as { status: string; score: number; runDir: string }[];
    expect(row).toMatchObject({ status: 'failed', score: 0 });
    const result = JSON.parse(readFileSync(join(row!.runDir, 'result.json'), 'utf8')) as ResultRecord;
    // Respected, it is listed (not scored).
    expect(result.checks.map((c) => [c.name, c.pass])).toEqual([
      ['the review is cancelled', false],
      ['mayChange', true],
    ]);
  });

  it('a violation fails the run; the solver that stays inside it scores 1', async () => {
    const out = outDir();
    const solved = await silo('run', TASKS, '--agent', SOLVER, '--task', 'cal/cancel-*', '--json', '--out', out);
    expect((JSON.parse(solved.stdout) as { score: number }[]).map((row) => row.score)).toEqual([1, 1]);
  });
});

/** Runs `silo` as an unprivileged user when this process is root (root writes anywhere). */
function asUser(args: string[]): Promise<Ran> {
  const root = process.getuid?.() === 0;
  const [command, prefix] = root ? ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath]] : [process.execPath, []];
  return new Promise((resolve) => {
    const child = spawn(command, [...prefix, BIN, ...args], { env: PLAIN_ENV });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const canDropPrivileges = process.getuid?.() !== 0 || existsSync('/usr/bin/setpriv') || existsSync('/bin/setpriv');

describe.runIf(canDropPrivileges)('an artifact folder that cannot be written (item 4)', () => {
  it.each([
    ['run', (out: string) => ['run', TASKS, '--agent', SOLVER, '--task', 'cal/count-monday', '--isolation', 'thread', '--out', out]],
    ['eval', (out: string) => ['eval', TASKS, '--agent', SOLVER, '--task', 'cal/count-monday', '--isolation', 'thread', '--out', out]],
  ])('silo %s exits 2 naming the folder and --out, not an internal error', async (_name, args) => {
    const out = join(tmp.dir, `read-only-${outs++}`);
    mkdirSync(out);
    chmodSync(tmp.dir, 0o755);
    chmodSync(out, 0o555);
    const r = await asUser(args(out));
    expect(r.stderr).not.toMatch(/internal error|please report/);
    expect(r.stderr).toMatch(new RegExp(`^silo: cannot write to ${out}: permission denied \\(EACCES at ${out}/\\S+\\); give --out a folder you can write to, or fix its permissions\\n$`));
    expect(r.code).toBe(2);
  });
});

describe('--shard spreads each task\'s trials over the shards (item 5)', () => {
  it('4 tasks, 3 trials, 2 shards: both shards run trials of every task; merged, every pair once', async () => {
    const args = ['eval', TASKS, '--agent', SOLVER, '--trials', '3', '--eval-id', 'split', '--reporter', 'json', '--isolation', 'thread'];
    const [one, two] = await Promise.all([1, 2].map((i) => silo(...args, '--shard', `${i}/2`, '--out', join(tmp.dir, `shard-${i}`))));
    for (const r of [one!, two!]) {
      const summary = JSON.parse(r.stdout) as EvalSummary;
      expect(summary.tasks.map((t) => t.trials).every((n) => n >= 1)).toBe(true);
      expect(summary.totals.runs).toBe(6);
    }
    const merged = await silo('merge', join(tmp.dir, 'shard-1'), join(tmp.dir, 'shard-2'), '--reporter', 'json', '--out', join(tmp.dir, 'merged'));
    expect(merged.code).toBe(0);
    const summary = JSON.parse(merged.stdout) as EvalSummary;
    expect(summary.tasks.map((t) => t.trials)).toEqual([3, 3, 3, 3]);
  });
});

describe('one process per eval folder (item 6)', () => {
  it('a second eval with the same --eval-id exits 2 naming the id while the first runs; --resume then counts each pair once', async () => {
    const out = outDir();
    const args = ['eval', 'fixtures/eval/quick.tasks.mjs', '--agent', 'fixtures/agents/slow-answer.mjs', '--trials', '4', '--concurrency', '1', '--eval-id', 'same', '--isolation', 'thread', '--out', out];
    const first = silo(...args);
    const summary = join(out, 'evals', 'same', 'summary.json');
    for (let i = 0; i < 4800 && !existsSync(summary); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    const second = await silo(...args);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/^silo: eval same is being run by another process \(pid \d+ on .*\); wait for it to finish, stop it, or choose another --eval-id\n$/);
    expect((await first).code).toBe(0);
    const resumed = await silo('eval', '--resume', 'same', '--reporter', 'json', '--out', out);
    expect((JSON.parse(resumed.stdout) as EvalSummary).totals.runs).toBe(12);
    expect(readFileSync(join(out, 'evals', 'same', 'runs.jsonl'), 'utf8').trim().split('\n')).toHaveLength(12);
  });
});

describe('ids by prefix or suffix (item 8)', () => {
  it('show, report and eval --resume take the last characters the report shows', async () => {
    const out = outDir();
    const ran = await silo('eval', TASKS, '--agent', SOLVER, '--task', 'cal/count-monday', '--isolation', 'thread', '--out', out);
    expect(ran.code).toBe(0);
    const runId = readdirSync(join(out, 'runs'))[0]!;
    const evalId = onlyEval(out);
    const shown = await silo('show', runId.slice(-10), '--out', out);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(runId);
    expect((await silo('show', runId.slice(-10).toLowerCase(), '--out', out)).code).toBe(0);
    expect((await silo('report', evalId.slice(-10), '--out', out)).code).toBe(0);
    const resumed = await silo('eval', '--resume', evalId.slice(-10), '--out', out);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(`eval ${evalId}`);
  });
});

describe('after an eval (item 9)', () => {
  it('a failing eval names the first failed run to show, and the report', async () => {
    const out = outDir();
    const r = await silo('eval', TASKS, '--agent', NOTHING, '--out', out);
    expect(r.code).toBe(1);
    const evalId = onlyEval(out);
    const firstFailed = readFileSync(join(out, 'evals', evalId, 'runs.jsonl'), 'utf8').split('\n')[0]!;
    const runId = (JSON.parse(firstFailed) as { runId: string }).runId;
    expect(r.stderr).toContain(`→ silo show ${runId} --out ${out}   (the first run that failed)\n→ silo report ${evalId} --out ${out}   (every run, in the browser)\n`);
  });

  it('Ctrl-C prints the command that resumes the eval, and --resume keeps the stored --concurrency', async () => {
    const out = outDir();
    const child = spawn(process.execPath, [BIN, 'eval', 'fixtures/eval/quick.tasks.mjs', '--agent', 'fixtures/agents/slow-answer.mjs', '--trials', '10', '--concurrency', '2', '--isolation', 'thread', '--out', out], { env: PLAIN_ENV });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    for (let i = 0; i < 4800 && !existsSync(join(out, 'runs')); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const evalId = onlyEval(out);
    expect(stderr).toMatch(new RegExp(`silo: cancelled; continue with: silo eval --resume ${evalId} --out ${out}\\n$`));
    expect(summaryOf(out, evalId).options.concurrency).toBe(2);
    const resumed = await silo('eval', '--resume', evalId, '--out', out);
    expect(resumed.code).toBe(0);
    expect(summaryOf(out, evalId).options.concurrency).toBe(2);
  });
});

describe('findings (item 7)', () => {
  it('silo run keeps the ungrounded answer among the three it prints, names calls as silo show does, and prints a repeated finding once', async () => {
    const out = outDir();
    const r = await silo('run', 'fixtures/helpdesk/tasks.ts', '--agent', 'fixtures/agents/flails-then-answers.mjs', '--task', 'helpdesk/close-ticket', '--out', out);
    expect(r.code).toBe(1);
    const findings = r.stdout.split('\n').filter((l) => /^ {4}[a-z_]+( \(.*\))?: /.test(l));
    expect(findings).toEqual([
      '    ungrounded_answer: the agent answered without a single successful tool call: nothing it says was looked up',
      '    hallucinated_tool (call #1): called find_ticket, which does not exist (3 times)',
      '    repeated_failing_call (call #2): repeated a call that had already failed: find_ticket with the same input',
    ]);
    const runId = /silo show ([0-9A-Z]{26})/.exec(r.stdout)![1]!;
    const shown = (await silo('show', runId, '--out', out)).stdout;
    // The timeline prints the call the finding names under the same number.
    expect(shown).toMatch(/^ {2}hallucinated_tool \(call #1\): called find_ticket, which does not exist \(3 times\)$/m);
    expect(shown).toMatch(/^ +\S+ {2}#1 find_ticket \{\}$/m);
    expect(shown).not.toMatch(/\(event \d+\)/);
  });
});

describe('a schema mistake (item 10)', () => {
  it('is one sentence naming the path and the value', async () => {
    const r = await silo('run', 'fixtures/tasks/broken/misspelt-type.mjs', '--agent', SOLVER);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/misspelt-type\.mjs.* has an invalid inputSchema: inputSchema\.type is 'objekt'; expected one of object, array, string, number, integer, boolean, null \(or an array of them\)\n$/);
  });
});

describe('a verifier that throws (item 11)', () => {
  it('names the task file and line in result.json and in silo show', async () => {
    const out = outDir();
    const r = await silo('run', 'fixtures/calendar/throws.tasks.ts', '--agent', SOLVER, '--json', '--out', out);
    expect(r.code).toBe(1);
    const [row] = JSON.parse(r.stdout) as { runDir: string; runId: string }[];
    const result = JSON.parse(readFileSync(join(row!.runDir, 'result.json'), 'utf8')) as ResultRecord;
    // Line 15 of the TypeScript source: `summary.monday` on an undefined summary.
    const at = /\(at (.*fixtures\/calendar\/throws\.tasks\.ts):15:\d+\)$/;
    expect(result.error?.code).toBe('verifier_error');
    expect(result.error?.message).toMatch(at);
    expect(result.error?.stack).toMatch(/throws\.tasks\.ts:15:\d+/);
    const shown = await silo('show', row!.runId, '--out', out);
    expect(shown.stdout).toMatch(/^error {7}verifier_error: the verifier of cal\/verifier-throws threw: .* \(at .*fixtures\/calendar\/throws\.tasks\.ts:15:\d+\)$/m);
  });
});

describe('silo ls (item 12)', () => {
  it('lists evals newest first with their agent, pass rate and status, and --limit applies to them', async () => {
    const out = outDir();
    // Ids that sort the other way round from their start times.
    for (const id of ['zz-older', 'aa-newer']) {
      const r = await silo('eval', TASKS, '--agent', SOLVER, '--task', 'cal/count-monday', '--eval-id', id, '--isolation', 'thread', '--out', out);
      expect(r.code).toBe(0);
    }
    const ls = await silo('ls', '--out', out);
    const evals = ls.stdout.slice(ls.stdout.indexOf('Evals')).split('\n');
    expect(evals[0]).toBe('Evals (2 of 2, newest first)');
    expect(evals[1]).toMatch(/^ {2}aa-newer {2}completed {3}100% {6}1 run {3}calendar-solver\.mjs {2}\d{4}-/);
    expect(evals[2]).toMatch(/^ {2}zz-older /);
    const limited = await silo('ls', '--limit', '1', '--out', out);
    expect(limited.stdout).toMatch(/Evals \(1 of 2, newest first\)\n {2}aa-newer .*\n {2}… 1 older \(--limit 2\)\n$/);
    const json = JSON.parse((await silo('ls', '--json', '--limit', '1', '--out', out)).stdout) as { evals: { evalId: string; agent: string; passRate: number; status: string }[] };
    expect(json.evals).toEqual([expect.objectContaining({ evalId: 'aa-newer', status: 'completed', passRate: 1, agent: expect.stringMatching(/calendar-solver\.mjs$/) })]);
  });

  it('says interrupted for an eval whose process died while it ran', async () => {
    const out = outDir();
    const r = await silo('eval', TASKS, '--agent', SOLVER, '--task', 'cal/count-monday', '--eval-id', 'died', '--isolation', 'thread', '--out', out);
    expect(r.code).toBe(0);
    const file = join(out, 'evals', 'died', 'summary.json');
    writeFileSync(file, JSON.stringify({ ...summaryOf(out, 'died'), status: 'running' }));
    expect((await silo('ls', '--out', out)).stdout).toMatch(/^ {2}died {2}interrupted /m);
  });
});

describe('exit codes (item 13)', () => {
  it('an agent that cannot load and a world that reuses its object are runs with status error: exit 1, as --help says', async () => {
    const out = outDir();
    const unloadable = await silo('run', TASKS, '--agent', 'fixtures/agents/hostile/no-default-export.ts', '--task', 'cal/count-monday', '--out', out);
    expect(unloadable.code).toBe(1);
    expect(unloadable.stdout).toMatch(/! cal\/count-monday {2}error .* load_error/);
    const reused = await silo('run', 'fixtures/tasks/broken/reused-world.mjs', '--agent', SOLVER, '--out', out);
    expect(reused.code).toBe(1);
    expect(reused.stdout).toMatch(/environment_error: /);
    for (const command of ['run', 'eval']) {
      const help = (await silo(command, '--help')).stdout.replace(/\s+/g, ' ');
      expect(help).toContain('1 a run failed or ended in error (an agent that does not load, a createState that fails or reuses its world, a verifier that throws');
      expect(help).toContain('2 usage or set-up error, before any run is recorded');
    }
  });
});

describe('cosmetics (item 14)', () => {
  it('every error line starts with silo:, commander\'s own included', async () => {
    for (const args of [['run', TASKS, '--bogus'], ['eval', TASKS, '--agent', SOLVER, '--trials', 'x'], ['frobnicate']]) {
      const r = await silo(...args);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(/^silo: /);
    }
  });

  it('a missing --agent gets the same message from run and eval', async () => {
    const run = await silo('run', TASKS);
    const evaluate = await silo('eval', TASKS);
    const words = (r: Ran) => r.stderr.replace(/`silo (run|eval) [^`]*`/, '…');
    expect(run.code).toBe(2);
    expect(evaluate.code).toBe(2);
    expect(words(run)).toBe(words(evaluate));
    expect(run.stderr).toMatch(/^silo: --agent is required: the agent module/);
  });

  it('silo tools marks read-only tools', async () => {
    const r = await silo('tools', TASKS);
    expect(r.stdout).toMatch(/^ {2}list_events \(read-only\) {2}List the events/m);
    expect(r.stdout).toMatch(/^ {2}cancel_event {2}Cancel an event by id\.$/m);
    const json = JSON.parse((await silo('tools', TASKS, '--json')).stdout) as { readOnly: string[]; tools: object[] }[];
    expect(json[0]!.readOnly).toEqual(['list_events']);
    expect(Object.keys(json[0]!.tools[0]!).sort()).toEqual(['description', 'inputSchema', 'name']);
  });
});
