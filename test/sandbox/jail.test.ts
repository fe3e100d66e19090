/**
 * The sandbox's filesystem jail (bubblewrap) and its session: what an agent could reach beyond
 * Node's permission model (socket files, links under node_modules, whether a path exists, its
 * process group) does not exist for it. Each attack also runs at the `unshare` level, which lacks
 * the jail, to show what the jail takes away (and that the fixture can fail).
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runEval, runRollout } from '../../src/index.js';
import { localRunner } from '../../src/eval/runner.js';
import type { Limits, RunResult } from '../../src/index.js';
import { AgentPool } from '../../src/pool/pool.js';
import { launch, unavailable, type SandboxLevel } from '../../src/sandbox/jail.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { readRunFiles, tempDir, testWorld } from '../helpers.js';
import { runSilo } from '../cli/silo.js';

const jailed = unavailable('bwrap') === null;
const namespaces = unavailable('unshare') === null;
/**
 * CI installs bubblewrap (.ci/run): there, a jail that does not work where namespaces do fails
 * these tests instead of skipping them. (A container that allows no user namespaces has neither.)
 */
const mustJail = Boolean(process.env.CI) && namespaces;
if (!jailed && !mustJail) console.warn(`jail.test.ts: the jail's tests are skipped: ${unavailable('bwrap')} (apt-get install -y bubblewrap)`);

const fixture = (name: string): string => fileURLToPath(new URL(`../../fixtures/agents/${name}`, import.meta.url));
const LIMITS: Partial<Limits> = { timeoutMs: 15_000, graceMs: 300, memoryMb: 64 };

const tmp = tempDir('silo-jail-test-');
const out = join(tmp.dir, 'out');
const pools = {
  bwrap: new SandboxPool({ sandbox: 'bwrap' }),
  bwrapOffline: new SandboxPool({ sandbox: 'bwrap', noNetwork: true }),
  unshare: new SandboxPool({ sandbox: 'unshare' }),
  unshareOffline: new SandboxPool({ sandbox: 'unshare', noNetwork: true }),
};
afterAll(async () => {
  await Promise.all(Object.values(pools).map((p) => p.destroy()));
  tmp.remove();
});

/** One rollout of `agent` with `instruction`, its task file at `taskFile` (the worker's guard). */
async function roll(pool: SandboxPool, agent: string, instruction: string, taskFile?: string): Promise<RunResult> {
  const result = await runRollout({ task: testWorld({ instruction }).task, ...(taskFile ? { taskFile } : {}), agent, outDir: out, pool, limits: LIMITS });
  expect(result.termination, JSON.stringify(result.error)).toBe('returned');
  return result;
}

/** A unix socket server that greets whoever connects; closed after the test. */
async function socketServer(path: string, greeting: string): Promise<Server> {
  const server = createServer((socket) => socket.end(`${greeting}\n`));
  await new Promise<void>((resolve) => server.listen(path, () => resolve()));
  return server;
}

describe.skipIf(!jailed && !mustJail)('the sandbox jail (bubblewrap)', () => {
  it('is available in CI (.ci/run installs bubblewrap)', () => {
    expect(unavailable('bwrap')).toBeNull();
  });

  it('runs an eval in one sandbox, and each agent of a process in a sandbox of its own (idle ones kept up to three)', async () => {
    const evalPool = new SandboxPool({ sandbox: 'bwrap' });
    const summary = await runEval({
      paths: [fileURLToPath(new URL('../../fixtures/helpdesk/tasks.ts', import.meta.url))],
      agent: fixture('helpdesk-solver.ts'),
      trials: 2,
      outDir: out,
      // (the eval's runner ends the pool when the eval is done)
      runner: (context) => Promise.resolve(localRunner(context, evalPool, 4)),
    });
    expect(summary.totals.passed).toBe(12);
    expect(evalPool.started).toBe(1);
    const pool = new SandboxPool({ sandbox: 'bwrap' });
    try {
      // Five agents in folders of their own, one after the other, then the first again.
      const homes = [0, 1, 2, 3, 4].map((i) => {
        const home = join(tmp.dir, `agent-${i}`);
        mkdirSync(home, { recursive: true });
        copyFileSync(fixture('where-am-i.mjs'), join(home, 'agent.mjs'));
        return join(home, 'agent.mjs');
      });
      for (const agent of [...homes, homes[4]!, homes[0]!]) {
        const r = await roll(pool, agent, 'x');
        expect(JSON.parse(r.output!)).toMatchObject({ pid: 1 });
      }
      // One more for each new agent; the last one's again reused its sandbox, the first's had been ended.
      expect(pool.started).toBe(5 + 1);
      expect(pool.running).toBeLessThanOrEqual(3);
    } finally {
      await pool.destroy();
    }
  }, 60_000);

  it('says in run.json how the agent was isolated, at each level it is forced to', async () => {
    const levels: [SandboxPool, string][] = [
      [pools.bwrap, 'bwrap'],
      [pools.unshare, 'unshare'],
    ];
    for (const [pool, level] of levels) {
      const r = await roll(pool, fixture('where-am-i.mjs'), 'x');
      expect(readRunFiles(r.runDir).run.isolation).toBe(level);
      expect(pool.level).toBe(level);
    }
    const plain = new SandboxPool({ sandbox: 'process', warn: () => {} });
    try {
      const r = await roll(plain, fixture('where-am-i.mjs'), 'x');
      expect(readRunFiles(r.runDir).run.isolation).toBe('process');
    } finally {
      await plain.destroy();
    }
    const threads = new AgentPool();
    try {
      const threaded = await runRollout({ task: testWorld().task, agent: fixture('where-am-i.mjs'), outDir: out, pool: threads, limits: LIMITS });
      expect(readRunFiles(threaded.runDir).run.isolation).toBe('thread');
    } finally {
      await threads.destroy();
    }
  });

  it('hides socket files from agents, with and without --no-network (a docker.sock in a folder they cannot read)', async () => {
    const hidden = join(tmp.dir, 'private');
    mkdirSync(hidden, { mode: 0o700 });
    const path = join(hidden, 'service.sock');
    const server = await socketServer(path, 'hello from the host');
    try {
      const agent = fixture('hostile/connects-socket.mjs');
      for (const pool of [pools.bwrap, pools.bwrapOffline]) {
        const seen = JSON.parse((await roll(pool, agent, JSON.stringify([path]))).output!) as Record<string, string>;
        expect(seen[path]).toBe('ENOENT');
      }
      // Without the jail the socket file is there to connect to, network namespace or not.
      if (namespaces) {
        for (const pool of [pools.unshare, pools.unshareOffline]) {
          const seen = JSON.parse((await roll(pool, agent, JSON.stringify([path]))).output!) as Record<string, string>;
          expect(seen[path]).toBe('connected: hello from the host');
        }
      }
    } finally {
      server.close();
    }
  });

  it('hides abstract unix sockets with --no-network (they belong to the network namespace)', async () => {
    const name = `\0silo-jail-test-${process.pid}`;
    const server = await socketServer(name, 'abstract hello');
    try {
      const agent = fixture('hostile/connects-socket.mjs');
      const offline = JSON.parse((await roll(pools.bwrapOffline, agent, JSON.stringify([name]))).output!) as Record<string, string>;
      expect(offline[name]).toBe('ECONNREFUSED');
      // With the network (the default) the sandbox shares this machine's: SECURITY.md says so.
      const online = JSON.parse((await roll(pools.bwrap, agent, JSON.stringify([name]))).output!) as Record<string, string>;
      expect(online[name]).toBe('connected: abstract hello');
    } finally {
      server.close();
    }
  });

  it('lets no link under an agent\'s node_modules lead to the answers', async () => {
    // root/world holds the task and its answers; root/agents/solver/node_modules/leak -> ../../../world.
    const root = join(tmp.dir, 'linked');
    const world = join(root, 'world');
    const home = join(root, 'agents', 'solver');
    mkdirSync(world, { recursive: true });
    mkdirSync(join(home, 'node_modules'), { recursive: true });
    writeFileSync(join(world, 'answers.json'), '{"answer":"linked-secret-2718"}');
    writeFileSync(join(world, 'tasks.mjs'), 'export default [];\n');
    symlinkSync('../../../world', join(home, 'node_modules', 'leak'));
    copyFileSync(fixture('hostile/reads-linked-package.mjs'), join(home, 'agent.mjs'));
    const taskFile = join(world, 'tasks.mjs');
    const r = await roll(pools.bwrap, join(home, 'agent.mjs'), 'x', taskFile);
    expect(r.output).not.toContain('linked-secret-2718');
    expect(r.output).toBe('ENOENT');
    if (namespaces) expect((await roll(pools.unshare, join(home, 'agent.mjs'), 'x', taskFile)).output).toContain('linked-secret-2718');
  });

  it('answers the same for a path outside that exists and one that does not (no realpathSync / require.resolve oracle)', async () => {
    const taskFile = fileURLToPath(new URL('../../fixtures/helpdesk/tasks.ts', import.meta.url));
    const pairs = [
      [taskFile, join(dirname(taskFile), 'no-such-tasks.ts')],
      ['/etc/shadow', '/etc/no-such-file'],
      [join(tmp.dir, 'out'), join(tmp.dir, 'no-such-folder')],
    ] as const;
    const agent = fixture('hostile/probes-paths.mjs');
    const probe = async (pool: SandboxPool): Promise<Record<string, unknown>> => JSON.parse((await roll(pool, agent, JSON.stringify(pairs.flat()), taskFile)).output!) as Record<string, unknown>;
    const seen = await probe(pools.bwrap);
    for (const [there, missing] of pairs) expect(seen[there], there).toEqual(seen[missing]);
    if (namespaces) {
      const open = await probe(pools.unshare);
      expect(open[taskFile]).not.toEqual(open[pairs[0][1]]);
    }
  });

  it('tells the user (not the agent) when the jail hid a module the agent imports, as the permission model would', async () => {
    // home/lib/shared.mjs exists; home/agent/ holds agents that import it, and a file that is nowhere.
    const home = join(tmp.dir, 'imports');
    mkdirSync(join(home, 'lib'), { recursive: true });
    mkdirSync(join(home, 'agent'), { recursive: true });
    writeFileSync(join(home, 'lib', 'shared.mjs'), 'export const secret = "shared";\n');
    writeFileSync(join(home, 'agent', 'there.mjs'), "import { secret } from '../lib/shared.mjs';\nexport default () => secret;\n");
    writeFileSync(join(home, 'agent', 'nowhere.mjs'), "import { secret } from '../lib/nowhere.mjs';\nexport default () => secret;\n");
    const load = async (name: string): Promise<string> => {
      const r = await runRollout({ task: testWorld().task, agent: join(home, 'agent', name), outDir: out, pool: pools.bwrap, limits: LIMITS });
      expect(r.termination).toBe('load_error');
      return r.error?.message ?? '';
    };
    const shared = join(home, 'lib', 'shared.mjs');
    expect(await load('there.mjs')).toMatch(new RegExp(`Cannot find module '${shared}'.* \\(FileSystemRead ${shared}\\): an agent may read only its own folder`));
    const nowhere = await load('nowhere.mjs');
    expect(nowhere).toContain(`Cannot find module '${join(home, 'lib', 'nowhere.mjs')}'`);
    expect(nowhere).not.toContain('FileSystemRead');
  });

  it('mounts a compiled TypeScript agent\'s own file, not the folder other compiled agents share', async () => {
    const compiled = join(tmpdir(), `silo-agents-${process.getuid?.() ?? 'user'}`);
    mkdirSync(compiled, { recursive: true, mode: 0o700 });
    const decoy = join(compiled, `decoy-${process.pid}.mjs`);
    writeFileSync(decoy, 'export default () => "another agent";\n');
    try {
      const agent = fixture('hostile/probes-paths.ts');
      const probe = async (pool: SandboxPool): Promise<Record<string, { realpath: string }>> =>
        JSON.parse((await roll(pool, agent, JSON.stringify([decoy]))).output!) as Record<string, { realpath: string }>;
      expect((await probe(pools.bwrap))[decoy]?.realpath).toBe('ENOENT');
      if (namespaces) expect((await probe(pools.unshare))[decoy]?.realpath).toBe('found');
    } finally {
      rmSync(decoy, { force: true });
    }
  });

  it('shows the sandbox nothing of /etc but what DNS and TLS need, and no other user\'s files', async () => {
    const agent = fixture('hostile/probes-paths.mjs');
    const wanted = ['/etc/shadow', '/etc/sudoers', '/root', '/home', '/var/run/docker.sock', tmp.dir, out];
    const seen = JSON.parse((await roll(pools.bwrap, agent, JSON.stringify(wanted))).output!) as Record<string, { realpath: string }>;
    for (const path of wanted) expect(seen[path]?.realpath, path).toBe('ENOENT');
  });
});

/**
 * Runs `fixtures/agents/hostile/<script>` as the sandbox process itself, with the sandbox's own
 * command line at `level`; resolves with how that command ended and what the script printed.
 */
function runAsSandbox(level: SandboxLevel, script: string): Promise<{ code: number | null; signal: string | null; stdout: string }> {
  return runInSandbox(level, { noNetwork: false, readable: [`${dirname(fixture(`hostile/${script}`))}/*`] }, [fixture(`hostile/${script}`)]);
}

/** Runs `node <args>` with the sandbox's own command line at `level`. */
function runInSandbox(level: SandboxLevel, options: Parameters<typeof launch>[1], nodeArgs: string[]): Promise<{ code: number | null; signal: string | null; stdout: string }> {
  const { command, args, inputs } = launch(level, options);
  const child = spawn(command, [...args, ...nodeArgs], { env: {}, cwd: tmp.dir, stdio: ['ignore', 'pipe', 'pipe', 'ignore', ...inputs.map(() => 'pipe' as const)], detached: true });
  inputs.forEach((text, i) => (child.stdio[4 + i] as Writable).end(text));
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout })));
}

describe('the sandbox\'s session', () => {
  for (const level of ['bwrap', 'unshare'] as const) {
    const available = unavailable(level) === null;
    it.skipIf(!available && !(mustJail && level === 'bwrap'))(`keeps kill(0, sig) and kill(-1, sig) inside the sandbox (${level}): what runs it survives`, async () => {
      const { code, signal, stdout } = await runAsSandbox(level, 'signals-its-group.mjs');
      // The bubblewrap or unshare process exits with the sandbox's own code, not of a signal.
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(stdout).toContain('survived');
      const seen = JSON.parse(stdout.split('\n')[0]!) as { pid: number; group: number; session: number };
      // Process 1 of its namespace, leading a session and a process group of its own.
      expect(seen).toMatchObject({ pid: 1, group: 1, session: 1 });
    }, 30_000);
  }

  it.skipIf(!jailed)('keeps the host and its other children alive when a jailed sandbox signals everything it can', async () => {
    const neighbour = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const { code } = await runAsSandbox('bwrap', 'signals-its-group.mjs');
      expect(code).toBe(0);
      expect(neighbour.exitCode).toBeNull();
      expect(neighbour.signalCode).toBeNull();
      expect(readFileSync(`/proc/${neighbour.pid}/stat`, 'utf8')).not.toMatch(/\) [ZX] /);
    } finally {
      neighbour.kill();
    }
  }, 30_000);
});

describe.skipIf(!jailed && !mustJail)('the jail with --no-network', () => {
  it('has its loopback up (what relays into the sandbox listen there), and nothing beyond it', async () => {
    const server = createServer((socket) => socket.end('host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const hostPort = (server.address() as AddressInfo).port;
    const code = `
      const net = require('node:net');
      const inside = net.createServer((s) => s.end('inside')).listen(0, '127.0.0.1', () => {
        const reach = (port) => new Promise((resolve) => {
          const c = net.connect(port, '127.0.0.1');
          c.once('data', (d) => { c.destroy(); resolve(String(d).trim()); });
          c.once('error', (e) => resolve(e.code));
        });
        Promise.all([reach(inside.address().port), reach(${hostPort})]).then((seen) => { console.log(JSON.stringify(seen)); inside.close(); });
      });`;
    try {
      const { code: exit, stdout } = await runInSandbox('bwrap', { noNetwork: true, readable: [] }, ['-e', code]);
      expect(exit).toBe(0);
      expect(JSON.parse(stdout)).toEqual(['inside', 'ECONNREFUSED']);
    } finally {
      server.close();
    }
  });
});

describe('the fallback', () => {
  // Each case runs a script of its own with PATH set to a folder of its own: the real programs it
  // links, wrappers that log each call, or fakes that fail as a machine without them would.
  const REAL = ['/usr/bin', '/bin', '/usr/sbin', '/sbin'];
  const real = (program: string): string | undefined => REAL.map((d) => join(d, program)).find((p) => existsSync(p));
  const binFolder = (name: string, { link = [], log, logged = [], failing = {} }: { link?: string[]; log?: string; logged?: string[]; failing?: Record<string, string> }): string => {
    const bin = join(tmp.dir, name);
    mkdirSync(bin, { recursive: true });
    for (const program of link) {
      const found = real(program);
      if (found) symlinkSync(found, join(bin, program));
    }
    // A wrapper that logs `<program> <args>` and runs the real one.
    for (const program of logged) writeFileSync(join(bin, program), `#!/bin/sh\necho "${program} $*" >> ${JSON.stringify(log)}\nexec ${real(program)!} "$@"\n`, { mode: 0o755 });
    // A fake that says `message` and fails (logging its arguments first, with `log`).
    for (const [program, message] of Object.entries(failing)) {
      const logs = log === undefined ? '' : `echo "$*" >> ${JSON.stringify(log)}\n`;
      writeFileSync(join(bin, program), `#!/bin/sh\n${logs}echo "${message}" >&2\nexit 1\n`, { mode: 0o755 });
    }
    return bin;
  };
  /** What these scripts start with: a task, and rollouts of where-am-i.mjs (`show` prints each one's status and isolation). */
  const PRELUDE = `
      import { readFileSync } from 'node:fs';
      import { runRollout } from ${JSON.stringify(new URL('../../dist/src/index.js', import.meta.url).href)};
      import { SandboxPool } from ${JSON.stringify(new URL('../../dist/src/sandbox/pool.js', import.meta.url).href)};
      const task = { id: 't', instruction: 'x', environment: { name: 'e', createState: () => ({}), tools: [] }, verify: () => [{ name: 'x', pass: true }] };
      const isolation = (r) => JSON.parse(readFileSync(r.runDir + '/run.json', 'utf8')).isolation;
      const show = (r) => console.log(r.status, isolation(r));
      const roll = (pool) => runRollout({ task, agent: ${JSON.stringify(fixture('where-am-i.mjs'))}, outDir: ${JSON.stringify(out)}, ...(pool ? { pool } : {}) });`;
  const runScript = (source: string, bin: string): Promise<{ stdout: string; stderr: string }> =>
    new Promise((resolve) =>
      execFile(process.execPath, ['--input-type=module', '-e', `${PRELUDE}\n${source}`], { env: { PATH: bin }, timeout: 30_000 }, (_err, stdout, stderr) => resolve({ stdout, stderr })),
    );
  const warnings = (stderr: string): string[] => stderr.split('\n').filter((line) => line.startsWith('silo: '));

  it.skipIf(!namespaces)('runs the sandbox with namespaces only where bubblewrap is missing, and says so once', async () => {
    // A PATH with unshare, setsid and setpriv but no bwrap.
    const bin = binFolder('bin-without-bwrap', { link: ['unshare', 'setsid', 'setpriv'] });
    const { stdout, stderr } = await runScript(`for (let i = 0; i < 2; i++) console.log(isolation(await roll()));`, bin);
    expect(stdout.trim().split('\n')).toEqual(['unshare', 'unshare']);
    expect(warnings(stderr)).toEqual([expect.stringMatching(/^silo: bubblewrap cannot jail the sandbox here \(bubblewrap \(bwrap\) is not installed\), so it runs in Linux namespaces only: .*install bubblewrap/)]);
  }, 40_000);

  it.skipIf(!namespaces)('falls back to namespaces where bubblewrap is installed but fails, though no probe ran before the first sandbox', async () => {
    // bubblewrap is taken to work until a sandbox started with it does not come up: then it is
    // probed, and the rollout runs in a sandbox at the level the probe allows.
    const bin = binFolder('bin-with-broken-bwrap', { link: ['unshare', 'setsid', 'setpriv'], failing: { bwrap: 'bwrap: setting up uid map: Permission denied' } });
    // Three at once first: every rollout that waited for the sandbox that did not come up goes on.
    const { stdout, stderr } = await runScript(`(await Promise.all([roll(), roll(), roll()])).forEach(show); show(await roll());`, bin);
    expect(stdout.trim().split('\n')).toEqual(['passed unshare', 'passed unshare', 'passed unshare', 'passed unshare']);
    expect(warnings(stderr)).toEqual([expect.stringMatching(/^silo: bubblewrap cannot jail the sandbox here \(bwrap failed: bwrap: setting up uid map: Permission denied\), so it runs in Linux namespaces only/)]);
  }, 40_000);

  it.skipIf(!namespaces)('starts the first sandbox without probing unshare or setpriv first', async () => {
    // Each probe is a process start on the way of every cold command: the first sandbox is the probe.
    const log = join(tmp.dir, 'launches.log');
    const bin = binFolder('bin-logging', { link: ['setsid'], logged: ['unshare', 'setpriv'], log });
    const { stdout } = await runScript(`console.log((await roll()).status);`, bin);
    expect(stdout.trim()).toBe('passed');
    const launches = readFileSync(log, 'utf8').trim().split('\n');
    // setpriv runs unshare, which runs the sandbox's node: one launch, no probe (which would run `true`).
    expect(launches).toHaveLength(2);
    expect(launches.every((line) => !/ true$/.test(line))).toBe(true);
    expect(launches[0]).toMatch(/^setpriv --pdeathsig KILL -- .*unshare --user/);
  }, 40_000);

  it.skipIf(!namespaces)('probes nothing when the host itself ends a sandbox started on the presumption before it is up', async () => {
    // A command that stops at once (a usage error, a wrong early guess) ends its early sandbox:
    // that is no sign that unshare does not work, and no reason for a probe's process start.
    const log = join(tmp.dir, 'ended-launches.log');
    const bin = binFolder('bin-logging-ended', { logged: ['unshare', 'setpriv'], log });
    const { stdout } = await runScript(`const pool = new SandboxPool(); pool.warm([]); await pool.destroy(); console.log(pool.started);`, bin);
    expect(stdout.trim()).toBe('1');
    // No probe (which runs \`true\`, and would log it). The launch is logged only if its wrapper got
    // that far before the kill: the log may not exist at all.
    const launches = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
    expect(launches.filter((line) => / true$/.test(line))).toEqual([]);
  }, 40_000);

  it('falls back to a plain process where unshare is installed but fails, though no probe ran before the first sandbox', async () => {
    // Without bubblewrap, unshare is taken to work as bubblewrap is: the first sandbox is the probe.
    // Here it does not come up; unshare is probed, and every rollout runs without namespaces.
    const bin = binFolder('bin-with-broken-unshare', { link: ['setsid', 'setpriv'], failing: { unshare: 'unshare: unshare failed: Operation not permitted' } });
    const { stdout, stderr } = await runScript(`(await Promise.all([roll(), roll(), roll()])).forEach(show); show(await roll());`, bin);
    expect(stdout.trim().split('\n')).toEqual(['passed process', 'passed process', 'passed process', 'passed process']);
    // Said once, and only what is so: nothing of the namespaces it presumed.
    expect(warnings(stderr)).toEqual([
      expect.stringMatching(/^silo: Linux namespaces are not available here \(unshare --user --pid failed: unshare: unshare failed: Operation not permitted; bubblewrap \(bwrap\) is not installed\), so the sandbox process runs without them/),
    ]);
  }, 40_000);

  it('gives a presumption up once, whichever pool of the process finds it wrong, even with no rollout waiting', async () => {
    // B's first sandbox (started ahead by warm(), nobody waiting for it) does not come up: unshare
    // is probed then and there, so neither B's rollouts nor A's start another presumed sandbox.
    const log = join(tmp.dir, 'unshare-calls.log');
    const bin = binFolder('bin-with-broken-unshare-logged', { link: ['setsid', 'setpriv'], failing: { unshare: 'unshare: unshare failed: Operation not permitted' }, log });
    const { stdout } = await runScript(
      `const a = new SandboxPool(), b = new SandboxPool();
      b.warm([]);
      for (let i = 0; i < 100 && b.running > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      show(await roll(a));
      (await Promise.all([roll(b), roll(b)])).forEach(show);
      console.log(b.level, b.started);
      await a.destroy();
      await b.destroy();`,
      bin,
    );
    expect(stdout.trim().split('\n')).toEqual(['passed process', 'passed process', 'passed process', 'process 2']);
    // The one presumed launch, then the probe (which runs `true`): nothing more.
    const calls = readFileSync(log, 'utf8').trim().split('\n');
    expect(calls).toHaveLength(2);
    expect(calls[1]).toMatch(/ true$/);
  }, 40_000);

  it.skipIf(!namespaces)('probes setpriv too where a sandbox started on the presumption does not come up', async () => {
    // setpriv --pdeathsig is presumed along with unshare; a setpriv that fails stops the sandbox
    // from starting, and the probes then run it without (unshare itself works here).
    const bin = binFolder('bin-with-broken-setpriv', { link: ['unshare', 'setsid'], failing: { setpriv: 'setpriv: unrecognized option --pdeathsig' } });
    const { stdout, stderr } = await runScript(`for (let i = 0; i < 2; i++) show(await roll());`, bin);
    expect(stdout.trim().split('\n')).toEqual(['passed unshare', 'passed unshare']);
    expect(warnings(stderr)).toEqual([expect.stringMatching(/^silo: bubblewrap cannot jail the sandbox here \(bubblewrap \(bwrap\) is not installed\), so it runs in Linux namespaces only/)]);
  }, 40_000);

  it('refuses an unknown SILO_SANDBOX with a usage error', async () => {
    const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--task', 'helpdesk/close-ticket', '--agent', 'fixtures/agents/where-am-i.mjs', '--out', out], { SILO_SANDBOX: 'docker' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/SILO_SANDBOX: expected auto, bwrap, unshare, process, got 'docker'/);
  });
});
