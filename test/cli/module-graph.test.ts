/**
 * Each command loads what it uses: the module graph of `silo --version`, `silo run` and `silo eval`
 * (every ES module and CommonJS file the process loads, recorded by record-modules.mjs) must not
 * hold a package or a part of Silo that the command does not use. A static import of the queue,
 * an SDK, MCP, the report writer or the rollout machinery into the wrong place fails here.
 * The command runs bundled (dist/bundle/, see scripts/bundle-package.mjs): each chunk it loads
 * stands for the modules esbuild put in it, as the bundle's metafile (meta.json) lists them.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { BIN, PLAIN_ENV } from './silo.js';

const out = tempDir('silo-graph-');
afterAll(() => out.remove());

let count = 0;

const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The modules (paths relative to the repository) in each file of the bundle, by absolute path. */
const chunks = new Map(
  Object.entries((JSON.parse(readFileSync(join(REPO, 'dist', 'bundle', 'meta.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> }).outputs).map(
    ([output, { inputs }]) => [join(REPO, output), Object.keys(inputs).map((input) => join(REPO, input))],
  ),
);

/** A loaded file (URL or path) as the modules it holds: a chunk of the bundle as its inputs. */
function modulesOf(loaded: string): string[] {
  const path = loaded.startsWith('file:') ? fileURLToPath(loaded) : loaded;
  return chunks.get(path) ?? [path];
}

/**
 * The modules `silo <args>` loaded: Silo's own as `src/...`, packages as their names; and the
 * files of the bundle it loaded.
 */
async function graph(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; silo: string[]; packages: string[]; modules: string[]; files: string[]; stderr: string }> {
  const file = join(out.dir, `modules-${count++}.txt`);
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', './test/cli/record-modules.mjs', BIN, ...args],
      { env: { ...PLAIN_ENV, ...env, SILO_TEST_MODULES: file }, timeout: 150_000 },
      (err, _stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr }),
    );
  });
  const lines = [...new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean))];
  const files = lines.filter((m) => chunks.has(m.startsWith('file:') ? fileURLToPath(m) : m));
  const loaded = [...new Set(lines.flatMap(modulesOf))];
  const silo = loaded.flatMap((m) => /\/dist\/(src\/.*)\.js$/.exec(m)?.[1] ?? []);
  const packages = [...new Set(loaded.flatMap((m) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(m)?.[1] ?? []))].sort();
  return { code, silo, packages, modules: loaded, files, stderr };
}

/** Parts of Silo only some commands use (a prefix of a module path under src/). */
const ROLLOUT = ['src/rollout/', 'src/pool/', 'src/sandbox/', 'src/load', 'src/typescript'];
// (The gateway's server and its client, node:http with them, load only for a rollout that reaches a
// model: a provider or an LLM user.)
const OTHERS = ['src/queue/', 'src/serve/', 'src/check/', 'src/inspect/report', 'src/agents/openai', 'src/agents/anthropic', 'src/gateway/gateway', 'src/gateway/call', 'src/gateway/exchange', 'src/gateway/upstream'];
/** Packages no command of these tests uses: the optional peers, and what the tests here never load. */
const HEAVY = ['bullmq', 'ioredis', '@modelcontextprotocol/sdk', 'openai', '@anthropic-ai/sdk', 'tsx', 'esbuild', 'playwright-core'];

const within = (modules: string[], prefixes: string[]): string[] => modules.filter((m) => prefixes.some((p) => m.startsWith(p)));

describe('the module graph of a command', () => {
  it('silo --version loads commander and none of the commands, not even their definitions', async () => {
    for (const flag of ['--version', '-v']) {
      const g = await graph([flag]);
      expect(g.code).toBe(0);
      expect(g.silo).toContain('src/cli/main');
      expect(g.packages).toEqual(['commander']);
      expect(within(g.silo, [...ROLLOUT, ...OTHERS, 'src/eval/run-eval', 'src/eval/store', 'src/inspect/runs', 'src/inspect/show'])).toEqual([]);
      expect(g.silo.filter((m) => m.startsWith('src/cli/') && !['src/cli/bin', 'src/cli/main'].includes(m))).toEqual([]);
    }
  });

  it('silo --help loads the commands\' definitions, nothing of what they run', async () => {
    const g = await graph(['--help']);
    expect(g.code).toBe(0);
    expect(g.packages).toEqual(['commander']);
    expect(within(g.silo, [...ROLLOUT, ...OTHERS])).toEqual([]);
  });

  it('silo run of a JavaScript task and agent in the sandbox loads no queue, SDK, MCP, report, TypeScript loader, bundler or thread pool', async () => {
    const g = await graph(['run', 'fixtures/bench/tasks.mjs', '-t', 'bench/calls-0', '--agent', 'fixtures/agents/bench-caller.mjs', '--out', out.dir]);
    expect(g.stderr).not.toMatch(/internal error/);
    expect(g.code).toBe(0);
    expect(g.silo).toContain('src/rollout/rollout');
    // (piscina ran reused workers once; the host must never load a worker pool package.)
    expect(g.packages.filter((p) => [...HEAVY, 'piscina'].includes(p))).toEqual([]);
    expect(within(g.silo, [...OTHERS, 'src/eval/run-eval', 'src/eval/store'])).toEqual([]);
    // Nor the other commands' definitions.
    expect(g.silo.filter((m) => m.startsWith('src/cli/') && !['src/cli/bin', 'src/cli/main', 'src/cli/run', 'src/cli/run-early', 'src/cli/run-line', 'src/cli/options', 'src/cli/signals'].includes(m))).toEqual([]);
  });

  it("silo run of a task file that imports 'silo' (for its define helpers) loads none of the API's other parts", async () => {
    // The package's entry loads what runs evals, regrades, merges, reports, queues and MCP
    // serving when one of them is called, not when a task file imports it.
    const g = await graph(['run', 'fixtures/graph/imports-silo.tasks.mjs', '--agent', 'fixtures/agents/bench-caller.mjs', '--out', out.dir]);
    expect(g.stderr).not.toMatch(/internal error/);
    expect(g.code).toBe(0);
    expect(g.silo).toContain('src/index');
    expect(g.packages.filter((p) => [...HEAVY, 'piscina'].includes(p))).toEqual([]);
    expect(within(g.silo, [...OTHERS, 'src/inspect/report', 'src/eval/run-eval', 'src/eval/regrade', 'src/eval/merge', 'src/check/'])).toEqual([]);
  });

  it("silo run loads ajv only for a tool schema no command has met: then the validator's code is kept", async () => {
    // (a private folder of its own, where nothing is kept yet)
    const tmp = join(out.dir, 'tmp');
    mkdirSync(tmp, { recursive: true });
    const args = ['run', 'fixtures/bench/tasks.mjs', '-t', 'bench/calls-0', '--agent', 'fixtures/agents/bench-caller.mjs', '--out', out.dir];
    const ajvCompiler = (g: { modules: string[] }) => g.modules.filter((m) => /\/node_modules\/ajv\/dist\/(ajv|core|compile\/)/.test(m));
    const first = await graph(args, { TMPDIR: tmp });
    expect(first.code).toBe(0);
    expect(ajvCompiler(first)).not.toEqual([]);
    expect(readdirSync(join(tmp, `silo-agents-${process.getuid?.() ?? 'user'}`, 'validators')).filter((name) => name.startsWith('validator-'))).not.toEqual([]);
    const second = await graph(args, { TMPDIR: tmp });
    expect(second.stderr).not.toMatch(/internal error/);
    expect(second.code).toBe(0);
    expect(ajvCompiler(second)).toEqual([]);
  });

  it('silo run --help starts no sandbox: it loads nothing of the rollout, the sandbox or the agent compiler', async () => {
    const g = await graph(['run', 'fixtures/bench/tasks.mjs', '--agent', 'fixtures/agents/bench-caller.mjs', '--help']);
    expect(g.code).toBe(0);
    expect(g.packages).toEqual(['commander']);
    expect(within(g.silo, [...ROLLOUT, ...OTHERS])).toEqual([]);
  });

  it('silo eval --help starts no sandbox either', async () => {
    const g = await graph(['eval', 'fixtures/bench/tasks.mjs', '--agent', 'fixtures/agents/bench-caller.mjs', '--help']);
    expect(g.code).toBe(0);
    expect(g.packages).toEqual(['commander']);
    expect(within(g.silo, [...ROLLOUT, ...OTHERS])).toEqual([]);
  });

  it('silo eval loads no queue without --queue, no report writer without --report, no SDK and no MCP', async () => {
    const g = await graph(['eval', 'fixtures/bench/tasks.mjs', '-t', 'bench/calls-0', '--agent', 'fixtures/agents/bench-caller.mjs', '--out', out.dir]);
    expect(g.stderr).not.toMatch(/internal error/);
    expect(g.code).toBe(0);
    expect(g.silo).toContain('src/eval/run-eval');
    expect(g.packages.filter((p) => [...HEAVY, 'piscina'].includes(p))).toEqual([]);
    expect(within(g.silo, OTHERS)).toEqual([]);
  });

  it('silo run and silo eval load a few files, not one for each import() on their way', async () => {
    // Node's ES module loader costs ~0.5 ms of the main thread for each file it loads. With
    // esbuild's own chunks (one for each set of import()s reaching a module) an eval loaded 69 and
    // a run 60; the build puts modules that the same steps load in one chunk
    // (scripts/lib/chunk-groups.mjs): 25 and 20.
    const run = await graph(['run', 'fixtures/bench/tasks.mjs', '-t', 'bench/calls-0', '--agent', 'fixtures/agents/bench-caller.mjs', '--out', out.dir]);
    const evaluated = await graph(['eval', 'fixtures/bench/tasks.mjs', '-t', 'bench/calls-0', '--agent', 'fixtures/agents/bench-caller.mjs', '--out', out.dir]);
    const version = await graph(['--version']);
    expect([run.code, evaluated.code, version.code]).toEqual([0, 0, 0]);
    expect(run.files.length, run.files.join('\n')).toBeLessThanOrEqual(24);
    expect(evaluated.files.length, evaluated.files.join('\n')).toBeLessThanOrEqual(30);
    expect(version.files.length, version.files.join('\n')).toBeLessThanOrEqual(5);
  });
});
