/**
 * TypeScript task files are compiled once per version into one module (src/task-compile.ts) and
 * imported, rather than loaded through tsx: each of these runs Node itself on the built files, in
 * a project of its own (vitest would load the modules into a module graph of its own), with a
 * private folder of its own (TMPDIR) where nothing is compiled yet.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ResultRecord } from '../src/types.js';
import { BIN, PLAIN_ENV } from './cli/silo.js';
import { tempDir } from './helpers.js';

const root = tempDir('silo-task-compile-');
afterAll(() => root.remove());
let projects = 0;

/** A project with `files` (path → text), Silo installed (linked), and a private folder of its own. */
function project(type: 'module' | 'commonjs', files: Record<string, string>): { dir: string; tmp: string } {
  const dir = join(root.dir, `p${projects}`);
  // (outside the project, as the system's temporary folder is: nothing there resolves from it)
  const tmp = join(root.dir, `tmp${projects++}`);
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  mkdirSync(tmp);
  symlinkSync(resolve('.'), join(dir, 'node_modules', 'silo'));
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ type })}\n`);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return { dir, tmp };
}

/** Loads the task file with Silo's loadTasks in a new Node process, and returns `expr` (of `tasks`). */
function load(p: { dir: string; tmp: string }, file: string, expr: string): unknown {
  const script = `
    const { loadTasks } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/load.js')).href)});
    const tasks = (await loadTasks([${JSON.stringify(join(p.dir, file))}])).map((l) => l.task);
    console.log(JSON.stringify(${expr}));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: p.dir, encoding: 'utf8', env: { ...PLAIN_ENV, TMPDIR: p.tmp } });
  return JSON.parse(out);
}

/** The compiled task files in the project's private folder. */
function compiledFiles(p: { tmp: string }): string[] {
  const dir = join(p.tmp, `silo-agents-${process.getuid?.() ?? 'user'}`, 'tasks');
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.tasks.mjs')) : [];
}

const ENVIRONMENT = `import { readFileSync } from 'node:fs';
import { defineEnvironment } from 'silo';
import { flavour } from 'dual';

const data = JSON.parse(readFileSync(new URL('./data.json', import.meta.url), 'utf8')) as { count: number };

export const where = { url: import.meta.url, filename: import.meta.filename, dirname: import.meta.dirname, flavour };

export const counter = defineEnvironment({
  name: 'counter',
  createState: () => ({ count: data.count }),
  tools: [{ name: 'read', description: \`Reads the count (\${flavour}).\`, inputSchema: { type: 'object', properties: {} }, run: (s: { count: number }) => s.count }],
});
`;

const TASKS = `import { defineTask, SiloError } from 'silo';
import { counter, where } from './env/environment.ts';

export const shared = SiloError;
export const meta = { where, own: import.meta.url };

export default [
  defineTask({
    id: 'count',
    environment: counter,
    instruction: 'Say the count.',
    verify: ({ output }) => [{ name: 'count', pass: output === String(counter.createState(0 as never).count) }],
  }),
];
`;

/** A package with an ES module and a CommonJS build, and a bundlers' \`module\` field Node ignores. */
const DUAL = {
  'node_modules/dual/package.json': JSON.stringify({ name: 'dual', main: './cjs.cjs', module: './bundler.mjs', exports: { import: './esm.mjs', require: './cjs.cjs' } }),
  'node_modules/dual/esm.mjs': "export const flavour = 'esm';\n",
  'node_modules/dual/cjs.cjs': "exports.flavour = 'cjs';\n",
  'node_modules/dual/bundler.mjs': "export const flavour = 'bundler';\n",
};

describe('a TypeScript task file, compiled', () => {
  it('loads its tasks, with the data its modules read next to them', () => {
    const p = project('module', { 'tasks.ts': TASKS, 'env/environment.ts': ENVIRONMENT, 'env/data.json': '{ "count": 7 }', ...DUAL });
    const got = load(p, 'tasks.ts', '{ ids: tasks.map((t) => t.id), count: tasks[0].environment.createState(0).count }');
    expect(got).toEqual({ ids: ['count'], count: 7 });
    expect(compiledFiles(p)).toHaveLength(1);
  });

  it('gives each module its own import.meta, keeps the package build Node picks, and shares Silo', () => {
    const p = project('module', { 'tasks.ts': TASKS, 'env/environment.ts': ENVIRONMENT, 'env/data.json': '{ "count": 7 }', ...DUAL });
    // The exports of the task file itself, through Silo's own importUserModule.
    const script = `
      const { SiloError } = await import(${JSON.stringify(pathToFileURL(resolve('dist/bundle/index.js')).href)});
      const { importUserModule } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/load.js')).href)});
      const m = await importUserModule(${JSON.stringify(join(p.dir, 'tasks.ts'))});
      const again = await importUserModule(${JSON.stringify(join(p.dir, 'tasks.ts'))});
      console.log(JSON.stringify({ meta: m.meta, own: m.shared === SiloError, fresh: m.meta !== again.meta }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: p.dir, encoding: 'utf8', env: { ...PLAIN_ENV, TMPDIR: p.tmp } })) as {
      meta: { where: Record<string, string>; own: string };
      own: boolean;
      fresh: boolean;
    };
    expect(out.meta.own).toBe(pathToFileURL(join(p.dir, 'tasks.ts')).href);
    expect(out.meta.where).toEqual({
      url: pathToFileURL(join(p.dir, 'env', 'environment.ts')).href,
      filename: join(p.dir, 'env', 'environment.ts'),
      dirname: join(p.dir, 'env'),
      flavour: 'esm',
    });
    expect(out.own).toBe(true);
    expect(out.fresh).toBe(true);
    expect(compiledFiles(p)).toHaveLength(1);
  });

  it('is compiled again when a file it imports changes, and not otherwise', () => {
    const p = project('module', { 'tasks.ts': TASKS, 'env/environment.ts': ENVIRONMENT, 'env/data.json': '{ "count": 7 }', ...DUAL });
    const description = () => (load(p, 'tasks.ts', 'tasks[0].environment.tools.map((t) => t.description)') as string[])[0];
    expect(description()).toBe('Reads the count (esm).');
    expect(description()).toBe('Reads the count (esm).');
    expect(compiledFiles(p)).toHaveLength(1);
    const env = join(p.dir, 'env', 'environment.ts');
    writeFileSync(env, readFileSync(env, 'utf8').replace('Reads the count', 'Counts'));
    // (a later modification time, whatever the clock's resolution)
    utimesSync(env, new Date(Date.now() + 5000), new Date(Date.now() + 5000));
    expect(description()).toBe('Counts (esm).');
    expect(compiledFiles(p)).toHaveLength(2);
    // A package upgraded (its package.json changes): its new build is the one imported.
    const pkg = join(p.dir, 'node_modules', 'dual', 'package.json');
    writeFileSync(pkg, JSON.stringify({ ...JSON.parse(readFileSync(pkg, 'utf8')), exports: { import: './bundler.mjs', require: './cjs.cjs' } }));
    utimesSync(pkg, new Date(Date.now() + 9000), new Date(Date.now() + 9000));
    expect(description()).toBe('Counts (bundler).');
  });

  it("gives CommonJS code of a \"type\": \"commonjs\" project its own __dirname and __filename", () => {
    const p = project('commonjs', {
      'tasks.ts': `import { defineTask } from 'silo';
import { counter } from './env/environment';
const { flavour } = require('dual');
export default defineTask({ id: 'cjs', environment: counter, instruction: __dirname + '|' + __filename + '|' + flavour, verify: () => [] });
`,
      'env/environment.ts': `import { defineEnvironment } from 'silo';
export const counter = defineEnvironment({ name: 'c', createState: () => ({ at: __dirname }), tools: [] });
`,
      ...DUAL,
    });
    const got = load(p, 'tasks.ts', '{ instruction: tasks[0].instruction, at: tasks[0].environment.createState(0).at }') as { instruction: string; at: string };
    expect(got).toEqual({ instruction: `${p.dir}|${join(p.dir, 'tasks.ts')}|cjs`, at: join(p.dir, 'env') });
    expect(compiledFiles(p)).toHaveLength(1);
  });

  it('leaves to tsx what one module cannot stand for: an import of a name the code computes', () => {
    const p = project('module', {
      'tasks.ts': `import { defineTask } from 'silo';
const name = './env/' + 'environment.ts';
const { counter } = (await import(name)) as typeof import('./env/environment.ts');
const again = (await import(\`./env/\${'environment'}.ts\`)) as typeof import('./env/environment.ts');
if (again.counter !== counter) throw new Error('two instances');
export default defineTask({ id: 'computed', environment: counter, instruction: 'x', verify: () => [] });
`,
      'env/environment.ts': ENVIRONMENT,
      'env/data.json': '{ "count": 3 }',
      ...DUAL,
    });
    expect(load(p, 'tasks.ts', 'tasks[0].environment.createState(0).count')).toBe(3);
    expect(compiledFiles(p)).toHaveLength(0);
  });

  it("names the TypeScript file and line when a verifier throws (and silo run loads neither tsx nor, the second time, esbuild)", () => {
    const p = project('module', {
      'tasks.ts': `import { defineTask } from 'silo';
import { counter } from './env/environment.ts';

interface Summary {
  total: number;
}

export default defineTask({
  id: 'throws',
  environment: counter,
  instruction: 'Say anything.',
  verify: () => {
    const summary = undefined as unknown as Summary;
    return [{ name: 'total', pass: summary.total === 1 }];
  },
});
`,
      'env/environment.ts': ENVIRONMENT,
      'env/data.json': '{ "count": 1 }',
      ...DUAL,
    });
    const run = () => {
      const modules = join(p.dir, `modules-${Math.random()}.txt`);
      let stdout = '';
      try {
        execFileSync(process.execPath, ['--import', resolve('test/cli/record-modules.mjs'), resolve(BIN), 'run', 'tasks.ts', '--agent', resolve('fixtures/agents/bench-caller.mjs'), '--json', '--out', join(p.dir, 'out')], {
          cwd: p.dir,
          encoding: 'utf8',
          env: { ...PLAIN_ENV, TMPDIR: p.tmp, SILO_TEST_MODULES: modules },
        });
      } catch (err) {
        stdout = (err as { stdout: string }).stdout; // exit code 1: the run is an error
      }
      const [row] = JSON.parse(stdout) as { runDir: string }[];
      const loaded = readFileSync(modules, 'utf8');
      return { result: JSON.parse(readFileSync(join(row!.runDir, 'result.json'), 'utf8')) as ResultRecord, tsx: loaded.includes('/tsx/'), esbuild: loaded.includes('/esbuild/') };
    };
    const first = run();
    expect(first.result.error?.code).toBe('verifier_error');
    expect(first.result.error?.message).toMatch(/\(at .*\/tasks\.ts:14:\d+\)$/);
    expect(first.result.error?.stack).toMatch(/tasks\.ts:14:\d+/);
    expect(first).toMatchObject({ tsx: false, esbuild: true });
    const second = run();
    expect(second.result.error?.message).toMatch(/\(at .*\/tasks\.ts:14:\d+\)$/);
    expect(second).toMatchObject({ tsx: false, esbuild: false });
  });

  it("is out of reach of agents: one whose folder holds Silo's private folder is not run, whatever the task file (hostile: reads-compiled-tasks)", () => {
    const verify = "verify: ({ output }) => [{ name: 'gold', pass: output === 'gold-answer-4711' }]";
    const p = project('module', {
      'tasks.ts': `import { defineTask } from 'silo';
import { counter } from './env/environment.ts';
export default defineTask({ id: 'secret', environment: counter, instruction: 'Guess.', ${verify} });
`,
      // The same task in JavaScript: nothing compiled for it, but the module compiled for tasks.ts is still kept.
      'plain.tasks.mjs': `import { defineTask, defineEnvironment } from 'silo';
const counter = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'secret', environment: counter, instruction: 'Guess.', ${verify} });
`,
      'env/environment.ts': ENVIRONMENT,
      'env/data.json': '{ "count": 1 }',
      ...DUAL,
    });
    // The private folder under the agent's folder (TMPDIR there), the agent next to it.
    const home = join(p.dir, 'home');
    mkdirSync(home);
    writeFileSync(join(home, 'agent.mjs'), readFileSync('fixtures/agents/hostile/reads-compiled-tasks.mjs'));
    for (const tasks of ['tasks.ts', 'plain.tasks.mjs']) {
      let stdout = '';
      try {
        stdout = execFileSync(process.execPath, [resolve(BIN), 'run', tasks, '--agent', join(home, 'agent.mjs'), '--json', '--out', join(p.dir, 'out')], {
          cwd: p.dir,
          encoding: 'utf8',
          env: { ...PLAIN_ENV, TMPDIR: home },
        });
      } catch (err) {
        stdout = (err as { stdout: string }).stdout;
      }
      const [row] = JSON.parse(stdout) as { runDir: string }[];
      const result = JSON.parse(readFileSync(join(row!.runDir, 'result.json'), 'utf8')) as ResultRecord;
      expect(compiledFiles({ tmp: home }), tasks).toHaveLength(1);
      expect(result.termination, tasks).toBe('load_error');
      expect(result.error?.message, tasks).toMatch(/could read Silo's private folder \(task files compiled\) \(.*silo-agents-.*\).*keep the agent in a folder of its own/);
    }
  });

  it('is compiled again when a tsconfig it extends changes, or a package link is pointed at another version', () => {
    const p = project('module', {
      'tasks.ts': `import { defineTask, defineEnvironment } from 'silo';
import { which } from '@lib/which';
import { version } from 'linked';
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'which', environment: env, instruction: which + ' ' + version, verify: () => [] });
`,
      'tsconfig.json': '{\n  // paths come from the base\n  "extends": "./tsconfig.base.json",\n}\n',
      'tsconfig.base.json': JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { '@lib/*': ['lib-a/*'] } } }),
      'lib-a/which.ts': "export const which = 'A';\n",
      'lib-b/which.ts': "export const which = 'B';\n",
      // Two versions in a store, their package.json alike in size and time (as npm writes them).
      'store/linked@1/package.json': JSON.stringify({ name: 'linked', version: '1.0.0', main: 'index.js' }),
      'store/linked@1/index.js': "exports.version = 'v1';\n",
      'store/linked@2/package.json': JSON.stringify({ name: 'linked', version: '2.0.0', main: 'index.js' }),
      'store/linked@2/index.js': "exports.version = 'v2';\n",
    });
    const same = new Date('1985-10-26T08:15:00Z');
    for (const v of ['1', '2']) utimesSync(join(p.dir, 'store', `linked@${v}`, 'package.json'), same, same);
    symlinkSync(join(p.dir, 'store', 'linked@1'), join(p.dir, 'node_modules', 'linked'));
    const instruction = () => load(p, 'tasks.ts', 'tasks[0].instruction');
    expect(instruction()).toBe('A v1');
    const base = join(p.dir, 'tsconfig.base.json');
    writeFileSync(base, readFileSync(base, 'utf8').replace('lib-a', 'lib-b'));
    utimesSync(base, new Date(Date.now() + 5000), new Date(Date.now() + 5000));
    expect(instruction()).toBe('B v1');
    rmSync(join(p.dir, 'node_modules', 'linked'));
    symlinkSync(join(p.dir, 'store', 'linked@2'), join(p.dir, 'node_modules', 'linked'));
    expect(instruction()).toBe('B v2');
    expect(compiledFiles(p)).toHaveLength(3);
  });

  it('imports packages from CommonJS code as tsx compiles it: required (default imports, dual packages, exports made at run time), JSON too', () => {
    const p = project('commonjs', {
      'tasks.ts': `import { defineTask, defineEnvironment } from 'silo';
import grade from 'marked-esm';
import { flavour } from 'dual';
import { score } from 'lazy';
import data from 'data-pkg/data.json';
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'cjs', environment: env, instruction: [grade(), flavour, score(), data.n].join(' '), verify: () => [] });
`,
      'node_modules/marked-esm/package.json': JSON.stringify({ name: 'marked-esm', main: 'index.js' }),
      'node_modules/marked-esm/index.js': "Object.defineProperty(exports, '__esModule', { value: true });\nexports.default = () => 'default';\n",
      'node_modules/lazy/package.json': JSON.stringify({ name: 'lazy', main: 'index.js' }),
      'node_modules/lazy/index.js': "const make = () => ({ score: () => 'scored' });\nmodule.exports = make();\n",
      'node_modules/data-pkg/package.json': JSON.stringify({ name: 'data-pkg' }),
      'node_modules/data-pkg/data.json': '{ "n": 5 }',
      ...DUAL,
    });
    expect(load(p, 'tasks.ts', 'tasks[0].instruction')).toBe('default cjs scored 5');
    expect(compiledFiles(p)).toHaveLength(1);
    // The same file in an ES module project imports them as Node's import does.
    const m = project('module', {
      'tasks.ts': readFileSync(join(p.dir, 'tasks.ts'), 'utf8').replace("import data from 'data-pkg/data.json';", "import data from 'data-pkg/data.json' with { type: 'json' };").replace('grade()', '(grade as unknown as { default: () => string }).default()')
        // (Node finds no named export in exports made at run time: the default import it is)
        .replace("import { score } from 'lazy';", "import lazy from 'lazy';\nconst { score } = lazy;"),
      ...Object.fromEntries(Object.keys(DUAL).concat(['node_modules/marked-esm/package.json', 'node_modules/marked-esm/index.js', 'node_modules/lazy/package.json', 'node_modules/lazy/index.js', 'node_modules/data-pkg/package.json', 'node_modules/data-pkg/data.json']).map((f) => [f, readFileSync(join(p.dir, f), 'utf8')])),
    });
    expect(load(m, 'tasks.ts', 'tasks[0].instruction')).toBe('default esm scored 5');
    expect(compiledFiles(m)).toHaveLength(1);
  });

  it("is compiled again when what resolves its imports changes: the project's package.json, a nearer copy of a package, a tsconfig.json above it", () => {
    const p = project('module', {
      'proj/package.json': JSON.stringify({ name: 'proj', type: 'module', imports: { '#grade': './grade-v1.ts' } }),
      'proj/tasks.ts': `import { defineTask, defineEnvironment } from 'silo';
import { grade } from '#grade';
import { copy } from 'grader';
import { v } from '@v/which';
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'r', environment: env, instruction: [grade, copy, v].join(' '), verify: () => [] });
`,
      'proj/grade-v1.ts': "export const grade = 'v1';\n",
      'proj/grade-v2.ts': "export const grade = 'v2';\n",
      // A copy hoisted above the project (a workspace's root), and a tsconfig.json above its package.json.
      'node_modules/grader/package.json': JSON.stringify({ name: 'grader', main: 'index.js' }),
      'node_modules/grader/index.js': "exports.copy = 'hoisted';\n",
      'tsconfig.json': JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { '@v/*': ['proj/v1/*'] } } }),
      'proj/v1/which.ts': "export const v = 'paths-1';\n",
      'proj/v2/which.ts': "export const v = 'paths-2';\n",
    });
    mkdirSync(join(p.dir, 'proj', 'node_modules'));
    symlinkSync(resolve('.'), join(p.dir, 'proj', 'node_modules', 'silo'));
    const later = (file: string, text: string) => {
      writeFileSync(file, text);
      utimesSync(file, new Date(Date.now() + 5000), new Date(Date.now() + 5000));
    };
    const instruction = () => load(p, 'proj/tasks.ts', 'tasks[0].instruction');
    expect(instruction()).toBe('v1 hoisted paths-1');
    later(join(p.dir, 'proj', 'package.json'), JSON.stringify({ name: 'proj', type: 'module', imports: { '#grade': './grade-v2.ts' } }));
    expect(instruction()).toBe('v2 hoisted paths-1');
    mkdirSync(join(p.dir, 'proj', 'node_modules', 'grader'));
    writeFileSync(join(p.dir, 'proj', 'node_modules', 'grader', 'package.json'), JSON.stringify({ name: 'grader', main: 'index.js' }));
    writeFileSync(join(p.dir, 'proj', 'node_modules', 'grader', 'index.js'), "exports.copy = 'local';\n");
    expect(instruction()).toBe('v2 local paths-1');
    later(join(p.dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { '@v/*': ['proj/v2/*'] } } }));
    expect(instruction()).toBe('v2 local paths-2');
    expect(compiledFiles(p)).toHaveLength(4);
  });

  it("takes require('silo') as the command's copy, one instance of an import-only package, and leaves a set-up import to tsx", () => {
    const p = project('commonjs', {
      'tasks.cts': `const { defineTask, defineEnvironment, SiloError } = require('silo');
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
module.exports = [defineTask({ id: 'rq', environment: env, instruction: String(SiloError === globalThis.__commandSiloError), verify: () => [] })];
`,
      'state.ts': `import { state } from 'only-import';
import { seen } from './reader.mjs';
state.n = 42;
export const same = seen();
`,
      'reader.mjs': "import { state } from 'only-import';\nexport const seen = () => state.n;\n",
      'only.ts': `import { defineTask, defineEnvironment } from 'silo';
import { same } from './state';
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'one', environment: env, instruction: String(same), verify: () => [] });
`,
      'node_modules/only-import/package.json': JSON.stringify({ name: 'only-import', type: 'module', exports: { import: './index.js' } }),
      'node_modules/only-import/index.js': 'export const state = { n: 0 };\n',
      'setup.ts': `import { defineTask, defineEnvironment } from 'silo';
import './setup-env';
import { key } from 'readsenv';
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'setup', environment: env, instruction: key, verify: () => [] });
`,
      'setup-env.ts': "process.env.SILO_TEST_SETUP = 'from-setup';\n",
      'node_modules/readsenv/package.json': JSON.stringify({ name: 'readsenv', main: 'index.js' }),
      'node_modules/readsenv/index.js': "exports.key = process.env.SILO_TEST_SETUP ?? 'unset';\n",
    });
    const script = (file: string) => `
      const { SiloError } = await import(${JSON.stringify(pathToFileURL(resolve('dist/bundle/index.js')).href)});
      globalThis.__commandSiloError = SiloError;
      const { loadTasks } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/load.js')).href)});
      console.log((await loadTasks([${JSON.stringify(join(p.dir, file))}]))[0].task.instruction);`;
    const run = (file: string) => execFileSync(process.execPath, ['--input-type=module', '-e', script(file)], { cwd: p.dir, encoding: 'utf8', env: { ...PLAIN_ENV, TMPDIR: p.tmp } }).trim();
    expect(run('tasks.cts')).toBe('true');
    expect(run('only.ts')).toBe('42');
    expect(compiledFiles(p)).toHaveLength(2);
    expect(run('setup.ts')).toBe('from-setup');
    expect(compiledFiles(p)).toHaveLength(2);
  });

  it('reads the TypeScript file a .js import names when both are there, and follows links and export conditions as Node does', () => {
    const p = project('module', {
      'evals/tasks.ts': `import { defineTask } from 'silo';
import { env, which } from './environment.js';
import { a } from './lib/a.ts';
import { flavour } from 'conditional';
export default defineTask({ id: 'c', environment: env, instruction: [which, a, flavour].join(' '), verify: () => [] });
`,
      'evals/environment.ts': `import { defineEnvironment } from 'silo';
export const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export const which = 'ts';
`,
      // What tsc leaves next to its source without an outDir: stale.
      'evals/environment.js': "export const env = {}; export const which = 'stale js';\n",
      'lib-v1/a.ts': "export const a = 'a-v1';\n",
      'lib-v2/a.ts': "export const a = 'a-v2';\n",
      'node_modules/conditional/package.json': JSON.stringify({ name: 'conditional', exports: { source: './source.js', default: './built.js' }, type: 'module' }),
      'node_modules/conditional/source.js': "export const flavour = 'source';\n",
      'node_modules/conditional/built.js': "export const flavour = 'built';\n",
    });
    symlinkSync(join(p.dir, 'lib-v1'), join(p.dir, 'evals', 'lib'));
    const instruction = (env: Record<string, string> = {}) =>
      execFileSync(
        process.execPath,
        ['--input-type=module', '-e', `const { loadTasks } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/load.js')).href)}); console.log((await loadTasks([${JSON.stringify(join(p.dir, 'evals', 'tasks.ts'))}]))[0].task.instruction);`],
        { cwd: p.dir, encoding: 'utf8', env: { ...PLAIN_ENV, TMPDIR: p.tmp, ...env } },
      ).trim();
    expect(instruction()).toBe('ts a-v1 built');
    expect(instruction({ NODE_OPTIONS: '--conditions=source' })).toBe('ts a-v1 source');
    expect(instruction()).toBe('ts a-v1 built');
    const env = join(p.dir, 'evals', 'environment.ts');
    writeFileSync(env, readFileSync(env, 'utf8').replace("'ts'", "'ts, edited'"));
    utimesSync(env, new Date(Date.now() + 5000), new Date(Date.now() + 5000));
    expect(instruction()).toBe('ts, edited a-v1 built');
    rmSync(join(p.dir, 'evals', 'lib'));
    symlinkSync(join(p.dir, 'lib-v2'), join(p.dir, 'evals', 'lib'));
    expect(instruction()).toBe('ts, edited a-v2 built');
  });

  it('remembers a file it leaves to tsx (no compile each time), and leaves to tsx an optional package it cannot find', () => {
    const p = project('commonjs', {
      'tasks.ts': `import { defineTask, defineEnvironment } from 'silo';
import './setup';
let extra = 'none';
try {
  extra = require('optional-extra').name;
} catch {
  // not installed
}
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'o', environment: env, instruction: extra, verify: () => [] });
`,
      'setup.ts': 'export {};\n',
    });
    const run = () => {
      const modules = join(p.dir, `modules-${Math.random()}.txt`);
      const out = execFileSync(
        process.execPath,
        ['--import', resolve('test/cli/record-modules.mjs'), '--input-type=module', '-e', `const { loadTasks } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/load.js')).href)}); console.log((await loadTasks([${JSON.stringify(join(p.dir, 'tasks.ts'))}]))[0].task.instruction);`],
        { cwd: p.dir, encoding: 'utf8', env: { ...PLAIN_ENV, TMPDIR: p.tmp, SILO_TEST_MODULES: modules } },
      ).trim();
      return { out, tsx: readFileSync(modules, 'utf8').includes('/tsx/') };
    };
    const manifests = () => {
      const dir = join(p.tmp, `silo-agents-${process.getuid?.() ?? 'user'}`, 'tasks');
      return readdirSync(dir)
        .filter((name) => name.endsWith('.prepared.json'))
        .map((name) => ({ name, written: statSync(join(dir, name)).mtimeMs, file: (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { file: string | null }).file }));
    };
    expect(run().out).toBe('none');
    const first = manifests();
    expect(first).toEqual([expect.objectContaining({ file: null })]);
    // (tsx loads esbuild too: what shows that no compile ran is that nothing was written again)
    expect(run().out).toBe('none');
    expect(manifests()).toEqual(first);
    expect(compiledFiles(p)).toHaveLength(0);
    // Without the set-up import, the optional package still cannot be compiled in: tsx finds it once installed.
    writeFileSync(join(p.dir, 'tasks.ts'), readFileSync(join(p.dir, 'tasks.ts'), 'utf8').replace("import './setup';\n", ''));
    expect(run().out).toBe('none');
    mkdirSync(join(p.dir, 'node_modules', 'optional-extra'));
    writeFileSync(join(p.dir, 'node_modules', 'optional-extra', 'package.json'), JSON.stringify({ name: 'optional-extra', main: 'index.js' }));
    writeFileSync(join(p.dir, 'node_modules', 'optional-extra', 'index.js'), "exports.name = 'here';\n");
    expect(run().out).toBe('here');
  });

  it('is compiled again when a file appears that an import would now find first, or a file is copied over with its times kept', () => {
    const p = project('commonjs', {
      'tasks.ts': `import { defineTask, defineEnvironment } from 'silo';
import { h } from './helpers';
import { l } from './lib';
import { c } from './conf';
const env = defineEnvironment({ name: 'c', createState: () => ({}), tools: [] });
export default defineTask({ id: 'f', environment: env, instruction: [h, l, c].join(' '), verify: () => [] });
`,
      'helpers.js': "exports.h = 'helpers.js';\n",
      'lib/index.js': "exports.l = 'lib/index.js';\n",
      'conf.ts': "export const c = 'conf-1';\n",
      'conf-next.ts': "export const c = 'conf-2';\n",
    });
    const instruction = () => load(p, 'tasks.ts', 'tasks[0].instruction');
    expect(instruction()).toBe('helpers.js lib/index.js conf-1');
    writeFileSync(join(p.dir, 'helpers.ts'), "export const h = 'helpers.ts';\n");
    expect(instruction()).toBe('helpers.ts lib/index.js conf-1');
    writeFileSync(join(p.dir, 'lib', 'index.ts'), "export const l = 'lib/index.ts';\n");
    expect(instruction()).toBe('helpers.ts lib/index.ts conf-1');
    writeFileSync(join(p.dir, 'lib.ts'), "export const l = 'lib.ts';\n");
    expect(instruction()).toBe('helpers.ts lib.ts conf-1');
    // As `cp -p` leaves it: the same size, the same modification time to the nanosecond, the same inode.
    const conf = join(p.dir, 'conf.ts');
    execFileSync('touch', ['-r', conf, join(p.dir, 'times')]);
    writeFileSync(conf, readFileSync(join(p.dir, 'conf-next.ts')));
    execFileSync('touch', ['-r', join(p.dir, 'times'), conf]);
    expect(instruction()).toBe('helpers.ts lib.ts conf-2');
  });
});
