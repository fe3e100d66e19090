/**
 * Silo as a user meets it: `npm pack`, the tarball installed into projects of their own outside
 * this repository (ESM and CommonJS with npm, and pnpm's layout), `silo init`, and every command
 * run through `npx` against the example it wrote and agents of the project's own. Nothing here
 * reaches into src/: only what the tarball ships runs.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiReply, scriptedServer } from '../agents/model-server.js';
import { tempDir } from '../helpers.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** Installs can be slow on a busy machine (the tarball's dependencies come from npm's cache). */
const INSTALL_MS = 240_000;
const COMMAND_MS = 90_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command in `cwd`, colourless, and never rejects. */
function sh(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env }, timeout: COMMAND_MS, maxBuffer: 64 * 2 ** 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * `npx silo ...` in a project; `--no` so that npx never fetches another package of that name, and
 * `--` so that npx passes options such as `--help` on to silo instead of answering them itself.
 */
const silo = (cwd: string, ...args: string[]): Promise<Ran> => sh('npx', ['--no', '--', 'silo', ...args], cwd);

/** Every installed package under `modules` (scoped ones and nested node_modules included). */
function packagesIn(modules: string): string[] {
  const found: string[] = [];
  const visit = (dir: string): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.startsWith('.')) continue;
      const path = join(dir, name);
      if (name.startsWith('@')) visit(path);
      else if (statSync(join(path, 'package.json'), { throwIfNoEntry: false })) {
        found.push(path);
        visit(join(path, 'node_modules'));
      }
    }
  };
  visit(modules);
  return found;
}

/** Bytes of the files under `dir`. */
function bytesIn(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}

const home = tempDir('silo-pack-');
let tarball = '';
/** A project of its own per module type, outside the repository, with the tarball installed. */
const projects: Record<'module' | 'commonjs', string> = { module: join(home.dir, 'esm-project'), commonjs: join(home.dir, 'cjs-project') };

function makeProject(dir: string, type: 'module' | 'commonjs'): void {
  mkdirSync(dir, { recursive: true });
  // As `npm init -y` writes it (npm 11 says "type": "commonjs" outright).
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: `user-${type}`, version: '1.0.0', private: true, type }, null, 2)}\n`);
}

const npmInstall = (cwd: string, ...specs: string[]): Promise<Ran> => sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...specs], cwd);

beforeAll(async () => {
  expect(home.dir.startsWith(REPO)).toBe(false);
  const packed = await sh('npm', ['pack', '--json', '--pack-destination', home.dir], REPO);
  expect(packed.code, packed.stderr).toBe(0);
  tarball = join(home.dir, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
  for (const [type, dir] of Object.entries(projects)) makeProject(dir, type as 'module' | 'commonjs');
  const installs = await Promise.all(Object.values(projects).map((dir) => npmInstall(dir, tarball)));
  for (const ran of installs) expect(ran.code, ran.stderr).toBe(0);
}, INSTALL_MS);
afterAll(() => home.remove());

describe('the tarball', () => {
  it('ships the built runtime, the worker entry, the templates and the page the README links to, and nothing of the tests', () => {
    const installed = join(projects.module, 'node_modules', 'silo');
    for (const file of ['dist/bundle/bin.js', 'dist/bundle/index.js', 'dist/bundle/agent.js', 'dist/src/index.d.ts', 'dist/src/agent.d.ts', 'dist/workers/agent.cjs', 'dist/bundle/sandbox-child.cjs', 'templates/init/tasks.ts', 'README.md', 'docs/performance.md', 'LICENSE']) {
      expect(statSync(join(installed, file), { throwIfNoEntry: false })?.isFile(), file).toBe(true);
    }
    expect(statSync(join(installed, 'test'), { throwIfNoEntry: false })).toBeUndefined();
    expect(statSync(join(installed, 'fixtures'), { throwIfNoEntry: false })).toBeUndefined();
  });

  it('installs small: at most 30 packages and 60 MB, none of the optional ones', () => {
    const modules = join(projects.module, 'node_modules');
    const packages = packagesIn(modules);
    expect(packages.length).toBeLessThanOrEqual(30);
    expect(bytesIn(modules)).toBeLessThanOrEqual(60 * 2 ** 20);
    for (const optional of ['bullmq', 'ioredis', 'openai', '@anthropic-ai/sdk', '@modelcontextprotocol/sdk']) {
      expect(packages.some((p) => p.endsWith(join('node_modules', optional))), optional).toBe(false);
    }
  });
});

for (const type of ['module', 'commonjs'] as const) {
  describe(`in a "type": "${type}" project`, () => {
    const dir = projects[type];

    it('silo init writes the example, refuses to write it twice, and prints what to run next', async () => {
      const init = await silo(dir, 'init');
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toContain('npx silo check evals');
      expect(init.stdout).toContain('npx silo eval evals --agent evals/agents/solver.ts');
      for (const file of ['evals/environment.ts', 'evals/tasks.ts', 'evals/agents/solver.ts', 'evals/agents/llm.ts']) {
        expect(statSync(join(dir, file)).isFile()).toBe(true);
      }
      const again = await silo(dir, 'init');
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/^silo: silo init writes nothing over existing files, and .*evals\/environment\.ts.* exist/m);
    }, COMMAND_MS);

    it('silo check evals finds 0 errors in the example', async () => {
      const ran = await silo(dir, 'check', 'evals');
      expect(ran.code, ran.stdout + ran.stderr).toBe(0);
      expect(ran.stdout).toMatch(/3 tasks, 1 environment: 0 errors, 0 warnings/);
    }, COMMAND_MS);

    it('silo eval evals --agent evals/agents/solver.ts passes every task', async () => {
      const ran = await silo(dir, 'eval', 'evals', '--agent', 'evals/agents/solver.ts', '--reporter', 'json');
      expect(ran.code, ran.stdout + ran.stderr).toBe(0);
      const summary = JSON.parse(ran.stdout) as { status: string; totals: { runs: number; passed: number } };
      expect(summary.status).toBe('completed');
      expect(summary.totals).toMatchObject({ runs: 3, passed: 3 });
    }, COMMAND_MS);

    it('silo tools, run (a .ts and an .mjs agent of the project), show, ls and report', async () => {
      const tools = await silo(dir, 'tools', 'evals/tasks.ts', '--json');
      expect(tools.code, tools.stderr).toBe(0);
      expect((JSON.parse(tools.stdout) as { tools: { name: string }[] }[])[0]!.tools.map((t) => t.name)).toEqual(['list_orders', 'get_order', 'refund_order']);

      const body = "async function agent({ callTool }) {\n  const found = await callTool('list_orders', { status: 'pending' });\n  return `${found.value.length} orders are pending`;\n}\n";
      writeFileSync(join(dir, 'evals', 'agents', 'plain.mjs'), `export default ${body}`);
      // A .js agent in the project's own module type.
      writeFileSync(join(dir, 'evals', 'agents', 'plain.js'), type === 'module' ? `export default ${body}` : `module.exports = ${body}`);
      for (const agent of ['evals/agents/solver.ts', 'evals/agents/plain.mjs', 'evals/agents/plain.js']) {
        const run = await silo(dir, 'run', 'evals/tasks.ts', '--agent', agent, '--task', 'shop/count-pending', '--json');
        expect(run.code, run.stdout + run.stderr).toBe(0);
        expect((JSON.parse(run.stdout) as { status: string }[])[0]!.status).toBe('passed');
      }

      const show = await silo(dir, 'show');
      expect(show.code, show.stderr).toBe(0);
      expect(show.stdout).toContain('list_orders');
      const ls = await silo(dir, 'ls');
      expect(ls.code, ls.stderr).toBe(0);
      expect(ls.stdout).toContain('shop/count-pending');
      const report = await silo(dir, 'report');
      expect(report.code, report.stderr).toBe(0);
      expect(readFileSync(report.stdout.trim(), 'utf8')).toContain('shop/refund-latest');
    }, 4 * COMMAND_MS);

    it.runIf(type === 'module')('every command answers --help; silo merge joins the shards of an eval', async () => {
      const help = await silo(dir, '--help');
      expect(help.code).toBe(0);
      const commands = [...help.stdout.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
      expect(commands).toEqual(expect.arrayContaining(['init', 'run', 'eval', 'show', 'report', 'tools', 'check', 'ls', 'serve', 'merge', 'worker']));
      for (const command of commands) {
        const ran = await silo(dir, command, '--help');
        expect(ran.code, command).toBe(0);
        expect(ran.stdout, command).toContain(`Usage: silo ${command}`);
        // The examples name what `silo init` wrote, never this repository's fixtures.
        expect(ran.stdout, command).not.toMatch(/fixtures\//);
        for (const [path] of ran.stdout.matchAll(/(?<=\s)evals(?:\/[\w./-]+)?/g)) expect(statSync(join(dir, path), { throwIfNoEntry: false }), `${command}: ${path}`).toBeDefined();
      }
      // `silo run --help`'s first example, copied as it is printed.
      const example = (await silo(dir, 'run', '--help')).stdout.match(/^ {2}silo run (evals\/.*)$/m)![1]!.split(' ');
      const copied = await silo(dir, 'run', ...example);
      expect(copied.code, copied.stdout + copied.stderr).toBe(0);
      for (const shard of ['1/2', '2/2']) {
        const ran = await silo(dir, 'eval', 'evals', '--agent', 'evals/agents/solver.ts', '--shard', shard, '--eval-id', 'sharded', '--out', `shard-${shard[0]}`);
        expect(ran.code, ran.stderr).toBe(0);
      }
      const merged = await silo(dir, 'merge', 'shard-1', 'shard-2', '--out', 'merged', '--reporter', 'json');
      expect(merged.code, merged.stderr).toBe(0);
      expect((JSON.parse(merged.stdout) as { totals: { runs: number } }).totals.runs).toBe(3);
    }, 4 * COMMAND_MS);

    it(`the API works from ${type === 'module' ? 'import' : 'require'}: loadTasks and runEval`, async () => {
      const script =
        type === 'module'
          ? "import { loadTasks, runEval } from 'silo';\n" +
            "const tasks = await loadTasks(['evals/tasks.ts']);\n" +
            "const summary = await runEval({ paths: ['evals'], agent: 'evals/agents/solver.ts', trials: 2 });\n" +
            'console.log(JSON.stringify({ tasks: tasks.length, passed: summary.totals.passed }));\n'
          : "const { loadTasks, runEval } = require('silo');\n" +
            '(async () => {\n' +
            "  const tasks = await loadTasks(['evals/tasks.ts']);\n" +
            "  const summary = await runEval({ paths: ['evals'], agent: 'evals/agents/solver.ts', trials: 2 });\n" +
            '  console.log(JSON.stringify({ tasks: tasks.length, passed: summary.totals.passed }));\n' +
            '})();\n';
      writeFileSync(join(dir, 'api.js'), script);
      const ran = await sh(process.execPath, ['api.js'], dir);
      expect(ran.code, ran.stderr).toBe(0);
      expect(JSON.parse(ran.stdout.trim().split('\n').at(-1)!)).toEqual({ tasks: 3, passed: 6 });
    }, COMMAND_MS);

    it("a task file's import 'silo' (.mjs, and .ts compiled) and the command share one copy of Silo's modules (one SiloError class)", async () => {
      // The command and the package's entry points are one bundle with shared chunks; were they
      // bundled apart, the task's import would load a second copy of define.js and errors.js. A
      // .ts task file is compiled to one module whose import of 'silo' is pinned to the file Node
      // resolves (src/task-compile.ts); tsx, which would load a second copy but for what
      // src/load.ts adds, is not loaded at all.
      mkdirSync(join(dir, 'identity', 'agent'), { recursive: true });
      const tasks =
        "import { check, defineEnvironment, defineTask, defineTool, SiloError } from 'silo';\n" +
        "const env = defineEnvironment({ name: 'id', createState: () => ({ n: 1 }), tools: [defineTool({ name: 'get', description: 'n', inputSchema: { type: 'object', properties: {} }, run: (s: { n: number }) => s.n })] });\n" +
        "export default defineTask({ id: 'id/one', environment: env, instruction: 'say n', verify: ({ output }) => [check.ok('error class', typeof SiloError === 'function'), check.contains('n', output, '1')] });\n";
      writeFileSync(join(dir, 'identity', 'tasks.ts'), tasks);
      writeFileSync(join(dir, 'identity', 'tasks.mjs'), tasks.replace('(s: { n: number })', '(s)'));
      writeFileSync(join(dir, 'identity', 'agent', 'agent.mjs'), "export default async ({ callTool }) => `n is ${(await callTool('get', {})).value}`;\n");
      const installed = join(dir, 'node_modules', 'silo');
      const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { bin: { silo: string } };
      const meta = JSON.parse(readFileSync(join(installed, 'dist', 'bundle', 'meta.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> };
      for (const file of ['identity/tasks.mjs', 'identity/tasks.ts']) {
        const record = join(home.dir, `identity-modules-${file.split('.').at(-1)}.txt`);
        const ran = await sh(process.execPath, ['--import', join(REPO, 'test', 'cli', 'record-modules.mjs'), join(installed, manifest.bin.silo), 'run', file, '--agent', 'identity/agent/agent.mjs', '--json'], dir, {
          SILO_TEST_MODULES: record,
        });
        expect(ran.code, ran.stdout + ran.stderr).toBe(0);
        expect((JSON.parse(ran.stdout) as { status: string }[])[0]!.status).toBe('passed');

        // ES modules are recorded as URLs, CommonJS files (and ES modules required) as paths.
        const loaded = [...new Set(readFileSync(record, 'utf8').split('\n').filter(Boolean))].filter((m) => m.startsWith('file:') || m.startsWith('/'));
        const pathOf = (m: string): string => (m.startsWith('file:') ? fileURLToPath(m.replace(/\?.*$/, '')) : m.replace(/\?.*$/, ''));
        const paths = loaded.map(pathOf);
        // The task's import resolved into the bundle, where the command's own modules are.
        expect(paths, file).toContain(join(installed, 'dist', 'bundle', 'index.js'));
        expect(paths.filter((m) => m.includes(`${sep}node_modules${sep}tsx${sep}`)), file).toEqual([]);
        expect(paths.filter((m) => m.startsWith(join(installed, 'dist', 'src'))), file).toEqual([]);
        for (const source of ['dist/src/errors.js', 'dist/src/define.js']) {
          const holders = Object.entries(meta.outputs).filter(([, o]) => source in o.inputs).map(([output]) => join(installed, output));
          expect(holders, source).toHaveLength(1);
          // Loaded once, under one URL.
          expect(loaded.filter((m) => pathOf(m) === holders[0]), `${file}: ${source}`).toHaveLength(1);
        }
      }
    }, 2 * COMMAND_MS);

    it.runIf(type === 'commonjs')('a feature whose optional package is missing says what to install, exit 2', async () => {
      const cases: [string[], RegExp][] = [
        [['serve', 'evals/tasks.ts', '--task', 'shop/count-pending'], /^silo: silo serve needs @modelcontextprotocol\/sdk: npm install @modelcontextprotocol\/sdk$/m],
        [['eval', 'evals', '--agent', 'evals/agents/solver.ts', '--queue', 'redis://127.0.0.1:9'], /^silo: silo eval --queue and silo worker need bullmq and ioredis: npm install bullmq ioredis$/m],
        [['worker', '--queue', 'redis://127.0.0.1:9'], /^silo: silo eval --queue and silo worker need bullmq and ioredis: npm install bullmq ioredis$/m],
        [['run', 'evals/tasks.ts', '--agent', 'openai:gpt-4o-mini'], /^silo: the built-in agent openai:<model> needs openai: npm install openai$/m],
        [['run', 'evals/tasks.ts', '--agent', 'anthropic:claude-sonnet-4-5'], /^silo: the built-in agent anthropic:<model> needs @anthropic-ai\/sdk: npm install @anthropic-ai\/sdk$/m],
      ];
      for (const [args, message] of cases) {
        const ran = await silo(dir, ...args);
        expect(ran.code, args.join(' ')).toBe(2);
        expect(ran.stderr.trim().split('\n')).toHaveLength(1);
        expect(ran.stderr).toMatch(message);
      }
    }, 4 * COMMAND_MS);
  });
}

describe('in the ESM project, with the packages a TypeScript user adds', () => {
  const dir = projects.module;

  beforeAll(async () => {
    // The example's LLM agent needs the OpenAI SDK; type checking needs TypeScript and Node's types.
    const ran = await npmInstall(dir, 'openai@6', 'typescript@5.9.3', '@types/node@20');
    expect(ran.code, ran.stderr).toBe(0);
  }, INSTALL_MS);

  it("Silo's declarations and the example type-check with skipLibCheck: false", async () => {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      `${JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, noEmit: true, types: ['node'] }, include: ['evals'] }, null, 2)}\n`,
    );
    const ran = await sh(process.execPath, [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], dir);
    expect(ran.stdout + ran.stderr).toBe('');
    expect(ran.code).toBe(0);
  }, COMMAND_MS);

  it("the example's LLM agent passes its tasks through the model gateway (--provider), never holding the key", async () => {
    const server = await scriptedServer([
      () => openaiReply({ toolCalls: [{ id: 'c1', name: 'list_orders', args: { status: 'pending' } }], usage: { prompt: 10, completion: 5 } }),
      (request) => {
        const result = request.body.messages.at(-1).content as string;
        return openaiReply({ content: `${(JSON.parse(result) as unknown[]).length} orders are pending.`, usage: { prompt: 20, completion: 5 } });
      },
    ]);
    try {
      // The upstream and its key are the shell's, as a user exports them; the agent gets the gateway.
      const env = { OPENAI_BASE_URL: `${server.origin}/v1`, OPENAI_API_KEY: 'sk-host-key' };
      const ran = await sh('npx', ['--no', '--', 'silo', 'run', 'evals/tasks.ts', '--agent', 'evals/agents/llm.ts', '--task', 'shop/count-pending', '--provider', 'openai', '--json'], dir, env);
      expect(ran.code, ran.stdout + ran.stderr).toBe(0);
      const [row] = JSON.parse(ran.stdout) as { status: string; runDir: string }[];
      expect(row!.status).toBe('passed');
      expect(server.requests).toHaveLength(2);
      expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-host-key', 'Bearer sk-host-key']);
      const run = JSON.parse(readFileSync(join(row!.runDir, 'run.json'), 'utf8')) as { usage?: unknown; providers?: string[] };
      expect(run).toMatchObject({ providers: ['openai'], usage: { inputTokens: 30, outputTokens: 10, requests: 2, source: 'gateway' } });
      expect(readFileSync(join(row!.runDir, 'models.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    } finally {
      await server.close();
    }
  }, COMMAND_MS);
});

describe("with pnpm's layout (each package in .pnpm/, linked, nothing of Silo's hoisted)", () => {
  const dir = join(home.dir, 'pnpm-project');
  const pnpm = join(REPO, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');

  beforeAll(async () => {
    makeProject(dir, 'module');
    const ran = await sh(process.execPath, [pnpm, 'add', tarball], dir);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
  }, INSTALL_MS);

  it('silo init, check and eval work', async () => {
    expect(readdirSync(join(dir, 'node_modules')).filter((n) => !n.startsWith('.'))).toEqual(['silo']);
    const pnpmSilo = (...args: string[]): Promise<Ran> => sh(process.execPath, [pnpm, 'exec', 'silo', ...args], dir);
    expect((await pnpmSilo('init')).code).toBe(0);
    const check = await pnpmSilo('check', 'evals');
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const ran = await pnpmSilo('eval', 'evals', '--agent', 'evals/agents/solver.ts', '--reporter', 'json');
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect((JSON.parse(ran.stdout) as { totals: { passed: number } }).totals.passed).toBe(3);
  }, 3 * COMMAND_MS);
});
