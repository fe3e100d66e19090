/**
 * The sandbox process (--isolation process): agents that signal, abort or block their process
 * end their rollout as crashed or timed out, graded and recorded, while the host (this test
 * process) goes on and the next rollout gets a new sandbox.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../src/index.js';
import type { Limits, RunResult } from '../../src/index.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { eventsOf, readRunFiles, tempDir, testWorld } from '../helpers.js';
import { runSilo } from '../cli/silo.js';

const out = tempDir('silo-sandbox-test-');
const homes = tempDir('silo-sandbox-agents-');
const sandbox = new SandboxPool();
afterAll(async () => {
  await sandbox.destroy();
  out.remove();
  homes.remove();
});

const FAST: Partial<Limits> = { timeoutMs: 1500, graceMs: 300, memoryMb: 64 };
/**
 * Whether this machine lets the sandbox have its own namespaces. Without them an agent can signal
 * the host (SECURITY.md says so), so the tests of that guarantee only run where it holds.
 */
const namespaces = spawnSync('unshare', ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', '--mount-proc', 'true']).status === 0;
if (!namespaces) console.warn('silo sandbox tests: Linux namespaces are not available here; the tests that need them are skipped');
const fixture = (name: string): string => fileURLToPath(new URL(`../../fixtures/agents/${name}`, import.meta.url));
/**
 * The fixtures named, copied into one folder (with the hostile fixtures' lib/): agents whose
 * workers may read the same paths share a sandbox (a jailed one serves one set of mounts), so
 * these can reach one another's process.
 */
function neighbours(...names: string[]): (name: string) => string {
  const home = join(homes.dir, `neighbours-${names.map((n) => basename(n).replace(/\W/g, '')).join('-')}`);
  mkdirSync(home, { recursive: true });
  cpSync(fixture('hostile/lib'), join(home, 'lib'), { recursive: true });
  for (const name of names) copyFileSync(fixture(name), join(home, basename(name)));
  return (name) => join(home, basename(name));
}

async function roll(agent: string, limits: Partial<Limits> = FAST): Promise<RunResult> {
  const world = testWorld();
  const result = await runRollout({ task: world.task, agent, outDir: out.dir, pool: sandbox, limits });
  const files = readRunFiles(result.runDir);
  expect(files.run.status).toBe(result.status);
  expect(files.trace.at(-1)).toMatchObject({ type: 'run_finished' });
  return result;
}

/** An ordinary agent still runs: a new sandbox took over if the last one died. */
async function expectAlive(): Promise<void> {
  const r = await roll(fixture('plain.js'));
  expect(r.termination).toBe('returned');
}

describe('the sandbox process', () => {
  it('runs agents with an empty working folder, and in a pid namespace of its own where Linux allows', async () => {
    const r = await roll(fixture('where-am-i.mjs'));
    const seen = JSON.parse(r.output!) as { cwd: string; pid: number; ppid: number };
    expect(seen.cwd).toMatch(/silo-sandbox-/);
    expect(seen.cwd).not.toBe(process.cwd());
    if (!namespaces) return;
    // In its own pid namespace the sandbox is process 1 and sees no parent.
    expect(seen.pid).toBe(1);
    expect(seen.ppid).toBe(0);
  });

  it('survives an agent that SIGKILLs its own process (in a thread of the host, that is the host)', async () => {
    const r = await roll(fixture('hostile/kills-host.ts'));
    // Agents may not signal at all (src/pool/process-wide.ts): process.kill throws. Without that,
    // as process 1 of its namespace the sandbox would ignore the signal; without namespaces it
    // would die, and its rollouts with it.
    expect(r.termination).toBe('threw');
    expect(r.error?.message ?? eventsOf(readRunFiles(r.runDir).trace, 'agent_threw')[0]?.error.message).toMatch(/process\.kill is not available to agents/);
    expect(r.checks.length).toBeGreaterThan(0);
    await expectAlive();
  });

  it('ends the rollouts of a sandbox that dies as crashed, graded, and starts a new one', async () => {
    // An agent that says it has started, then hangs: the sandbox is killed once it runs (not
    // while it starts, which a busy machine can make longer than any fixed wait).
    const home = join(homes.dir, 'says-then-hangs');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'agent.mjs'), "console.log('up');\nexport default async function agent() {\n  await new Promise(() => {});\n}\n");
    const runs = join(out.dir, 'runs');
    const before = new Set(existsSync(runs) ? readdirSync(runs) : []);
    const rolling = roll(join(home, 'agent.mjs'), { ...FAST, timeoutMs: 20_000 });
    const started = (): boolean =>
      existsSync(runs) &&
      readdirSync(runs).some((id) => !before.has(id) && existsSync(join(runs, id, 'trace.jsonl')) && readFileSync(join(runs, id, 'trace.jsonl'), 'utf8').includes('"message":"up"'));
    for (let i = 0; i < 500 && !started(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(started()).toBe(true);
    process.kill(sandbox.pid!, 'SIGKILL');
    const r = await rolling;
    expect(r.termination).toBe('crashed');
    expect(r.error).toMatchObject({ code: 'crashed', message: expect.stringMatching(/the sandbox process died \(SIGKILL\)/) });
    expect(r.checks.length).toBeGreaterThan(0);
    await expectAlive();
  });

  it('keeps the inspector of the sandbox closed to an agent that sends it SIGUSR1', async () => {
    const r = await roll(fixture('hostile/opens-inspector.mjs'), { ...FAST, timeoutMs: 10_000 });
    expect(r.termination).toBe('returned');
    expect(r.output).not.toBe('open');
    await expectAlive();
  });

  it('drops what an agent posts on its port that cannot cross to the host, and goes on', async () => {
    const r = await roll(fixture('hostile/posts-shared-memory.mjs'));
    expect(r.termination).toBe('returned');
    expect(r.output).toBe('survived');
    await expectAlive();
  });

  it('lets no agent forge the messages of other rollouts by writing to the sandbox\'s descriptors', async () => {
    // Rollouts in one sandbox share its process, and so its file descriptors, including the one
    // to the host: whatever an agent writes there must not pass for another rollout's worker.
    const together = neighbours('bench-waiter.mjs', 'hostile/forges-neighbours.mjs');
    const victims = [0, 1, 2].map(() => roll(together('bench-waiter.mjs'), { ...FAST, timeoutMs: 10_000 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const attacker = await roll(together('forges-neighbours.mjs'), { ...FAST, timeoutMs: 10_000 });
    for (const victim of await Promise.all(victims)) {
      expect(victim.output).not.toBe('forged');
      // Either the victim finished as it would have, or the sandbox was ended for the bad bytes
      // (its rollouts crashed, as when an agent aborts its process; evals retry them).
      if (victim.termination === 'returned') expect(victim.output).toBe('waited');
      else expect(victim.error?.message).toMatch(/the sandbox process/);
    }
    expect(attacker.output).not.toBe('forged');
    await expectAlive();
  });

  it('ends a sandbox whose link an agent blocks, so its neighbours crash (and are retried) instead of timing out', async () => {
    // A length header with no frame after it: the host would take every later message for its body.
    const quiet = new SandboxPool({ silenceMs: 2_000 });
    try {
      const limits = { ...FAST, timeoutMs: 60_000 };
      const together = neighbours('bench-waiter.mjs', 'hostile/blocks-link.mjs');
      const waiting = [0, 1].map(() => runRollout({ task: testWorld().task, agent: together('bench-waiter.mjs'), outDir: out.dir, pool: quiet, limits }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const blocker = runRollout({ task: testWorld().task, agent: together('blocks-link.mjs'), outDir: out.dir, pool: quiet, limits });
      const started = Date.now();
      for (const r of await Promise.all([...waiting, blocker])) {
        expect(r.termination).toBe('crashed');
        expect(r.error?.message).toMatch(/sent nothing for 2 s.*an agent blocked its link/);
      }
      // Well before the 60 s limit (the silence, a ping or two, the kill).
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      await quiet.destroy();
    }
  }, 180_000);

  it('passes on a worker\'s death over a huge uncaught error without ending its neighbours', async () => {
    const limits = { ...FAST, timeoutMs: 10_000, memoryMb: 256 };
    const together = neighbours('bench-waiter.mjs', 'hostile/throws-huge-uncaught.mjs');
    const neighbour = runRollout({ task: testWorld().task, agent: together('bench-waiter.mjs'), outDir: out.dir, pool: sandbox, limits });
    const thrower = await runRollout({ task: testWorld().task, agent: together('throws-huge-uncaught.mjs'), outDir: out.dir, pool: sandbox, limits });
    expect(thrower.termination).toBe('crashed');
    expect(thrower.error!.message.length).toBeLessThan(10_000);
    expect((await neighbour).output).toBe('waited');
  });

  it('lets no agent read the messages meant for other rollouts off the sandbox\'s descriptors', async () => {
    const together = neighbours('keeps-a-secret.mjs', 'hostile/reads-neighbours.mjs');
    const thief = roll(together('reads-neighbours.mjs'), { ...FAST, timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Each victim's tool results carry its secret back, 300 times: plenty for a thief to catch.
    const world = testWorld({ instruction: 'neighbour-secret-4711 is yours to keep' });
    const victims = await Promise.all(
      [0, 1].map(() => runRollout({ task: world.task, agent: together('keeps-a-secret.mjs'), outDir: out.dir, pool: sandbox, limits: { ...FAST, timeoutMs: 10_000 } })),
    );
    const took = await thief;
    // The thief may take bytes (what it reads is gone for the sandbox, which then ends: its
    // rollouts crash), but never plaintext.
    if (took.termination === 'returned') expect(JSON.parse(took.output!)).toMatchObject({ sawSecret: false });
    else expect(took.error?.message).toMatch(/the sandbox process/);
    for (const victim of victims) {
      if (victim.termination !== 'returned') expect(victim.error?.message).toMatch(/the sandbox process/);
    }
    await expectAlive();
  });

  it('delivers an abort sent while its sandbox was starting, after the rollout reaches it', async () => {
    const cold = new SandboxPool();
    try {
      const cancel = new AbortController();
      cancel.abort();
      const world = testWorld();
      // A grace period long enough that only the abort itself can end the agent in time.
      const r = await runRollout({ task: world.task, agent: fixture('hostile/returns-on-abort.ts'), outDir: out.dir, pool: cold, signal: cancel.signal, limits: { ...FAST, graceMs: 20_000 } });
      expect(r.termination).toBe('cancelled');
      expect(r.output).toBe('partial');
    } finally {
      await cold.destroy();
    }
  });

  it('ends a rollout whose sandbox cannot start as crashed, and does not hang on its port', async () => {
    const gone = new SandboxPool();
    await gone.destroy();
    const r = await runRollout({ task: testWorld().task, agent: fixture('plain.js'), outDir: out.dir, pool: gone, limits: FAST });
    expect(r.termination).toBe('crashed');
    expect(r.error?.message).toMatch(/could not start: .*destroyed/);
  });

  it.runIf(namespaces)('survives an agent that signals its parent and every process it can see', async () => {
    const r = await roll(fixture('hostile/kills-parent.ts'));
    expect(['crashed', 'returned']).toContain(r.termination);
    await expectAlive();
  });

  it('survives agents whose allocations abort their process (one ever-growing array, one Map)', async () => {
    for (const agent of ['hostile/aborts-process.ts', 'hostile/fills-map.ts']) {
      const r = await roll(fixture(agent), { ...FAST, timeoutMs: 20_000 });
      expect(['crashed', 'out_of_memory'], agent).toContain(r.termination);
      expect(r.checks.length).toBeGreaterThan(0);
      await expectAlive();
    }
  }, 180_000);

  it('kills a sandbox whose worker is stuck in a system call, so the rollout ends on time', async () => {
    const home = tempDir('silo-fifo-agent-');
    try {
      mkdirSync(join(home.dir, 'agent'));
      copyFileSync(fixture('hostile/reads-fifo.mjs'), join(home.dir, 'agent', 'agent.mjs'));
      execFileSync('mkfifo', [join(home.dir, 'agent', 'fifo')]);
      const started = Date.now();
      const r = await roll(join(home.dir, 'agent', 'agent.mjs'));
      expect(r.termination).toBe('timeout');
      // 1.5 s limit, 0.3 s grace, then at most 5 s before the sandbox is killed: generous bound.
      expect(Date.now() - started).toBeLessThan(20_000);
      await expectAlive();
    } finally {
      home.remove();
    }
  }, 180_000);

  it.runIf(namespaces)('gives agents the network by default, and none with noNetwork (a network namespace of their own)', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const offline = new SandboxPool({ noNetwork: true });
    try {
      const world = (): ReturnType<typeof testWorld> => testWorld({ instruction: url });
      const agent = fixture('hostile/phones-home.mjs');
      const open = await runRollout({ task: world().task, agent, outDir: out.dir, pool: sandbox, limits: { ...FAST, timeoutMs: 10_000 } });
      expect(open.output).toBe('reached');
      const closed = await runRollout({ task: world().task, agent, outDir: out.dir, pool: offline, limits: { ...FAST, timeoutMs: 10_000 } });
      expect(closed.output).not.toBe('reached');
      expect(closed.output).toMatch(/^E[A-Z]+|TimeoutError/);
    } finally {
      await offline.destroy();
      server.close();
    }
  });

  it('says once, clearly, when it runs without namespaces, and still runs agents', async () => {
    const said: string[] = [];
    const plain = new SandboxPool({ namespaces: 'never', warn: (m) => said.push(m) });
    try {
      for (let i = 0; i < 2; i++) {
        const r = await runRollout({ task: testWorld().task, agent: fixture('where-am-i.mjs'), outDir: out.dir, pool: plain, limits: FAST });
        const seen = JSON.parse(r.output!) as { cwd: string; pid: number };
        expect(seen.cwd).toMatch(/silo-sandbox-/);
        expect(seen.pid).not.toBe(1);
      }
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/Linux namespaces are not available here .* runs without them/);
    } finally {
      await plain.destroy();
    }
  });

  it('dies with the host, even a host killed with SIGKILL while a worker is stuck in a system call', async () => {
    const home = tempDir('silo-orphan-');
    try {
      mkdirSync(join(home.dir, 'agent'));
      copyFileSync(fixture('hostile/reads-fifo.mjs'), join(home.dir, 'agent', 'agent.mjs'));
      execFileSync('mkfifo', [join(home.dir, 'agent', 'fifo')]);
      const script = `
        import { runRollout } from ${JSON.stringify(new URL('../../dist/src/index.js', import.meta.url).href)};
        import { SandboxPool } from ${JSON.stringify(new URL('../../dist/src/sandbox/pool.js', import.meta.url).href)};
        const pool = new SandboxPool();
        const task = { id: 't', instruction: 'x', environment: { name: 'e', createState: () => ({}), tools: [] }, verify: () => [{ name: 'x', pass: true }] };
        const rolling = runRollout({ task, agent: ${JSON.stringify(join(home.dir, 'agent', 'agent.mjs'))}, outDir: ${JSON.stringify(join(home.dir, 'out'))}, pool, limits: { timeoutMs: 60000 } });
        setTimeout(() => console.log(pool.pid), 1500);
        await rolling;`;
      const host = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const pid = Number(await new Promise<string>((resolve) => host.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()))));
      const descendants = (root: number): number[] => {
        const kids = readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number).filter((p) => {
          try {
            return Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === root;
          } catch {
            return false;
          }
        });
        return [root, ...kids.flatMap(descendants)];
      };
      const sandboxed = descendants(pid);
      expect(sandboxed.length).toBeGreaterThanOrEqual(2); // unshare and the sandbox's node
      host.kill('SIGKILL');
      const alive = (): number[] => sandboxed.filter((p) => existsSync(`/proc/${p}`) && !readFileSync(`/proc/${p}/stat`, 'utf8').includes(') Z '));
      for (let i = 0; i < 600 && alive().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(alive()).toEqual([]);
    } finally {
      home.remove();
    }
  }, 180_000);

  /** Runs an ES module script in a plain node process (nothing else keeps its event loop alive). */
  const script = (body: string): Promise<{ code: number | null; stdout: string }> =>
    new Promise((resolve) => {
      const source = `import * as silo from ${JSON.stringify(new URL('../../dist/src/index.js', import.meta.url).href)};\n${body}`;
      execFile(process.execPath, ['--input-type=module', '-e', source], { timeout: 150_000 }, (err, stdout) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout }),
      );
    });

  it('does not keep an API user\'s process alive once its rollouts are done', async () => {
    const { code, stdout } = await script(`
      const [first] = await silo.loadTasks([${JSON.stringify(fileURLToPath(new URL('../../fixtures/helpdesk/tasks.ts', import.meta.url)))}]);
      const r = await silo.runRollout({ task: first.task, agent: ${JSON.stringify(fixture('helpdesk-solver.ts'))}, outDir: ${JSON.stringify(out.dir)} });
      console.log(r.status);`);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe('passed');
  }, 180_000);

  it('keeps an API user\'s process alive while its eval runs (the eval starts its sandbox early)', async () => {
    // Node ends a process whose event loop is empty, even under an awaited eval (exit code 13):
    // a sandbox started before its first rollout must be held once a rollout waits for it.
    const { code, stdout } = await script(`
      const summary = await silo.runEval({ paths: [${JSON.stringify(fileURLToPath(new URL('../../fixtures/helpdesk/tasks.ts', import.meta.url)))}], task: ['helpdesk/close-ticket'], agent: ${JSON.stringify(fixture('helpdesk-solver.ts'))}, trials: 2, outDir: ${JSON.stringify(out.dir)} });
      console.log(summary.totals.passed);`);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe('2');
  }, 180_000);

  it('is the default of silo run; --isolation thread keeps workers in the process; anything else is a usage error', async () => {
    const args = ['run', 'fixtures/helpdesk/tasks.ts', '--task', 'helpdesk/close-ticket', '--agent', 'fixtures/agents/where-am-i.mjs', '--out', out.dir, '--json'];
    const sandboxed = await runSilo(args);
    const threaded = await runSilo([...args, '--isolation', 'thread']);
    const cwdOf = (stdout: string): string => {
      const [row] = JSON.parse(stdout) as { runDir: string }[];
      return (JSON.parse(readRunFiles(row!.runDir).result.output!) as { cwd: string }).cwd;
    };
    expect(cwdOf(sandboxed.stdout)).toMatch(/silo-sandbox-/);
    expect(cwdOf(threaded.stdout)).toBe(process.cwd());
    const bad = await runSilo([...args, '--isolation', 'vm']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--isolation.*expected process or thread, got 'vm'/);
  });
});
