/**
 * A compiled agent carries the packages it imports where that is safe (src/pool/compile.ts): a
 * fresh worker then loads one file instead of a package's hundreds. Packages that cannot work
 * bundled (a native addon, WebAssembly, files found next to their own with __dirname, a module
 * name computed at run time) are detected and stay imports; and a compiled agent is used again by
 * the next process while none of its inputs changed.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { COMPILE_FOR_ROLLOUTS, codeCacheFile, compileAgent, PreparedAgents, prepareAgent } from '../../src/pool/compile.js';
import { codeCacheTaken, loadScript } from '../../src/pool/script.js';
import { runRollout } from '../../src/index.js';
import type { Task } from '../../src/types.js';
import { tempDir } from '../helpers.js';

const home = tempDir('silo-bundle-');
afterAll(() => home.remove());

/** An agent folder with these packages in its node_modules (name → files), and an agent importing `imports`. */
function agentWith(name: string, packages: Record<string, Record<string, string>>, body: string): string {
  const dir = join(home.dir, name);
  mkdirSync(dir, { recursive: true });
  for (const [pkg, files] of Object.entries(packages)) {
    mkdirSync(join(dir, 'node_modules', pkg), { recursive: true });
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(join(dir, 'node_modules', pkg, file, '..'), { recursive: true });
      writeFileSync(join(dir, 'node_modules', pkg, file), text);
    }
  }
  writeFileSync(join(dir, 'agent.ts'), body);
  return join(dir, 'agent.ts');
}

const esm = (main: string, code: string): Record<string, string> => ({ 'package.json': JSON.stringify({ name: 'x', type: 'module', main }), [main]: code });
const cjs = (main: string, code: string): Record<string, string> => ({ 'package.json': JSON.stringify({ name: 'x', main }), [main]: code });

const PACKAGES = {
  plain: esm('index.js', 'export const answer = () => "plain";\n'),
  'uses-dirname': cjs('index.js', 'const { join } = require("node:path");\nexports.answer = () => "dirname:" + join(__dirname, "data.txt").endsWith("data.txt");\n'),
  addon: cjs('index.js', 'let addon = null;\ntry { addon = require("./build/native.node"); } catch { addon = null; }\nexports.answer = () => "addon:" + (addon === null);\n'),
  'with-wasm': esm('index.js', 'export const answer = () => "wasm:" + new URL("./lib.wasm", import.meta.url).pathname.endsWith("lib.wasm");\n'),
  dynamic: cjs('index.js', 'exports.answer = (name) => { try { return require(name); } catch { return "dynamic"; } };\n'),
  // Compiled from ESM: Node's default import is module.exports, esbuild's would be exports.default
  // for an importer it does not take for Node's ES module (a .ts file in a folder of no type).
  'es-module-flag': cjs('index.js', 'Object.defineProperty(exports, "__esModule", { value: true });\nexports.default = () => "flagged";\nexports.answer = () => "flag";\n'),
  // The same, left an import (it finds a file next to its own).
  'es-module-flag-dirname': cjs('index.js', 'Object.defineProperty(exports, "__esModule", { value: true });\nexports.default = () => "flagged";\nexports.answer = () => "flag:" + (typeof __dirname);\n'),
  // CommonJS, which esbuild wraps in a function of its own; a comment that is not ASCII, in an
  // expression (where esbuild keeps comments).
  'cjs-plain': cjs('index.js', '"use strict";\nconst label = "cjs-plain-answer";\nexports.answer = () => (\n  // A comment \u2014 not ASCII.\n  label + ":" + "\u00e9"\n);\n'),
  // An ES module package importing the flagged one by default.
  'imports-flagged': { ...esm('index.js', 'import flagged from "es-module-flag";\nexport const answer = () => typeof flagged + ":" + flagged.answer();\n'), 'node_modules/es-module-flag/package.json': JSON.stringify({ name: 'es-module-flag', main: 'index.js' }), 'node_modules/es-module-flag/index.js': 'Object.defineProperty(exports, "__esModule", { value: true });\nexports.default = () => "flagged";\nexports.answer = () => "inner";\n' },
};

describe('bundling the packages of a compiled agent', () => {
  it('bundles a plain package into the compiled module: the worker imports no file of it', async () => {
    const agent = agentWith('plain', { plain: PACKAGES.plain }, 'import { answer } from "plain";\nexport default () => answer();\n');
    const compiled = await compileAgent(agent);
    expect(compiled.packages).toEqual([]);
    const code = readFileSync(compiled.file, 'utf8');
    expect(code).toContain('"plain"');
    expect(code).not.toMatch(/from\s+"[^"]*node_modules\/plain/);
  });

  for (const pkg of ['uses-dirname', 'addon', 'with-wasm', 'dynamic', 'es-module-flag-dirname'] as const) {
    it(`leaves ${pkg} an import of its own files, next to a plain package that is bundled`, async () => {
      const files: Record<string, string> = { ...PACKAGES[pkg] };
      if (pkg === 'addon') files['build/native.node'] = 'not really an addon';
      if (pkg === 'with-wasm') files['lib.wasm'] = '\0asm';
      const agent = agentWith(`leaves-${pkg}`, { [pkg]: files, plain: PACKAGES.plain }, `import { answer } from "${pkg}";\nimport { answer as plain } from "plain";\nexport default () => answer("x") + plain();\n`);
      const compiled = await compileAgent(agent);
      expect(compiled.packages).toEqual([join(home.dir, `leaves-${pkg}`, 'node_modules', pkg)]);
      expect(readFileSync(compiled.file, 'utf8')).toContain(join(home.dir, `leaves-${pkg}`, 'node_modules', pkg));
    });
  }

  it('runs an agent whose bundled and imported packages both work in its worker', async () => {
    const agent = agentWith(
      'runs',
      { plain: PACKAGES.plain, 'uses-dirname': PACKAGES['uses-dirname'] },
      'import { answer } from "uses-dirname";\nimport { answer as plain } from "plain";\nexport default () => answer() + " " + plain();\n',
    );
    const task: Task = {
      id: 'bundle/runs',
      instruction: 'answer',
      environment: { name: 'empty', createState: () => ({}), tools: [] },
      verify: ({ output }) => [{ name: 'answered', pass: output === 'dirname:true plain' }],
    };
    const r = await runRollout({ task, agent, outDir: join(home.dir, 'out'), isolation: 'thread' });
    expect(r.error).toBeUndefined();
    expect(r.output).toBe('dirname:true plain');
    expect(r.status).toBe('passed');
  });
});

describe('a compiled agent as a script with its code cache', () => {
  const task = (id: string, expected: string): Task => ({
    id,
    instruction: 'answer',
    environment: { name: 'empty', createState: () => ({}), tools: [] },
    verify: ({ output }) => [{ name: 'answered', pass: output === expected }],
  });

  it('is a script whose code cache V8 takes, and runs in a narrowed worker, in threads and in the sandbox', async () => {
    const agent = agentWith('script', { plain: PACKAGES.plain }, 'import { answer } from "plain";\nexport default () => answer();\n');
    const compiled = await compileAgent(agent);
    expect(compiled.script).toBe(true);
    expect(compiled.file).toMatch(/\.cjs$/);
    expect(existsSync(codeCacheFile(compiled.file))).toBe(true);
    const mod = loadScript(compiled.file) as { default: () => string };
    expect(mod.default()).toBe('plain');
    expect(codeCacheTaken(compiled.file)).toBe(true);
    for (const isolation of ['thread', 'process'] as const) {
      const r = await runRollout({ task: task('bundle/script', 'plain'), agent, outDir: join(home.dir, 'out'), isolation });
      expect(r.error).toBeUndefined();
      expect(r.status).toBe('passed');
    }
  });

  it("imports a CommonJS package left unbundled as Node's import does (module.exports is the default, __esModule or not)", async () => {
    const agent = agentWith(
      'script-flag',
      { 'es-module-flag-dirname': PACKAGES['es-module-flag-dirname'] },
      'import flagged from "es-module-flag-dirname";\nexport default () => typeof flagged + ":" + (flagged as unknown as { answer(): string }).answer();\n',
    );
    const compiled = await compileAgent(agent);
    expect(compiled.script).toBe(true);
    expect(compiled.packages).toHaveLength(1);
    const r = await runRollout({ task: task('bundle/script-flag', 'object:flag:string'), agent, outDir: join(home.dir, 'out'), isolation: 'thread' });
    expect(r.error).toBeUndefined();
    expect(r.output).toBe('object:flag:string');
  });

  it("bundles a CommonJS package marked __esModule, imported as Node's import does, by the agent's own code and by an ES module package", async () => {
    const agent = agentWith(
      'bundled-flag',
      { 'es-module-flag': PACKAGES['es-module-flag'], 'imports-flagged': PACKAGES['imports-flagged'] },
      'import flagged from "es-module-flag";\nimport { answer } from "imports-flagged";\nexport default () => typeof flagged + ":" + (flagged as unknown as { answer(): string }).answer() + " " + answer();\n',
    );
    const compiled = await compileAgent(agent);
    expect(compiled.script).toBe(true);
    expect(compiled.packages).toEqual([]);
    const r = await runRollout({ task: task('bundle/bundled-flag', 'object:flag object:inner'), agent, outDir: join(home.dir, 'out'), isolation: 'thread' });
    expect(r.error).toBeUndefined();
    expect(r.output).toBe('object:flag object:inner');
  });

  it('stays an ES module where a script could not stand for it: top-level await, import.meta.resolve, an ES module package left unbundled, a dynamic import', async () => {
    const awaits = agentWith('esm-await', {}, 'const n = await Promise.resolve(1);\nexport default () => String(n);\n');
    const resolves = agentWith('esm-resolve', {}, 'export default () => import.meta.resolve("./x.js");\n');
    const esmLeft = agentWith('esm-left', { 'with-wasm': PACKAGES['with-wasm'] }, 'import { answer } from "with-wasm";\nexport default () => answer();\n');
    const builtin = agentWith('esm-builtin', {}, 'export default async () => typeof (await import("node:os")).cpus;\n');
    const computed = agentWith('esm-computed', {}, 'export default async (name: string) => import(name);\n');
    // Only looks like one (text in a string): the script form stays.
    const quoted = agentWith('script-quoted', {}, 'export default () => "use import(\'node:buffer\') instead";\n');
    expect((await compileAgent(quoted)).script).toBe(true);
    for (const agent of [awaits, resolves, esmLeft, builtin, computed]) {
      const compiled = await compileAgent(agent);
      expect(compiled.script, agent).toBe(false);
      expect(compiled.file).toMatch(/\.mjs$/);
    }
    const r = await runRollout({ task: task('bundle/esm-left', 'wasm:true'), agent: esmLeft, outDir: join(home.dir, 'out'), isolation: 'thread' });
    expect(r.output).toBe('wasm:true');
  });
});

describe('the code cache of a compiled agent', () => {
  /**
   * Runs `source` (an ES module) in a fresh Node logging V8's function events: what V8 compiled,
   * and when. The code cache a process makes is only taken by one whose V8 flags are the same, so
   * both sides (the compile and the load) run this way.
   */
  const logged = (log: string, source: string): Promise<string> =>
    new Promise((resolve, reject) =>
      execFile(process.execPath, ['--log-function-events', `--logfile=${log}`, '--no-logfile-per-isolate', '--input-type=module', '-e', source], { timeout: 60_000 }, (err, stdout) =>
        err ? reject(err) : resolve(stdout.trim()),
      ),
    );
  const dist = (file: string): string => JSON.stringify(new URL(`../../dist/src/pool/${file}`, import.meta.url).href);

  it('holds the functions esbuild wraps bundled CommonJS modules in: a worker loading the script does not compile them again', async () => {
    const agent = agentWith('eager', { 'cjs-plain': PACKAGES['cjs-plain'] }, 'import { answer } from "cjs-plain";\nexport default () => answer();\n');
    const log = join(home.dir, 'eager.log');
    const file = await logged(log, `import { compileAgent } from ${dist('compile.js')};\nconsole.log((await compileAgent(${JSON.stringify(agent)})).file);`);
    expect(file).toMatch(/\.cjs$/);
    const taken = await logged(log, `import { loadScript, codeCacheTaken } from ${dist('script.js')};\nconst m = loadScript(${JSON.stringify(file)});\nif (m.default() !== "cjs-plain-answer:\u00e9") throw new Error("wrong answer");\nconsole.log(codeCacheTaken(${JSON.stringify(file)}));`);
    expect(taken).toBe('true');
    // V8's log: `function,<event>,<script>,<start>,<end>,...`; what it compiled as the script ran
    // ("interpreter": bytecode made here, not taken from the cache).
    const lines = readFileSync(log, 'utf8').split('\n');
    const script = lines.filter((l) => l.startsWith('script-details,') && l.includes(file)).at(-1)!.split(',')[1];
    const compiledHere = lines.filter((l) => l.startsWith(`function,interpreter,${script},`)).map((l) => l.split(',').slice(3, 5).map(Number) as [number, number]);
    // The package's module code ran (its answer came back), inside esbuild's wrapper function:
    // no function compiled at load holds it.
    const at = readFileSync(file, 'utf8').indexOf('"cjs-plain-answer"');
    expect(at).toBeGreaterThan(0);
    expect(compiledHere.filter(([start, end]) => start <= at && at < end)).toEqual([]);
  });

  it('is made from plain ASCII text without comments (V8 keeps it as one byte a character)', async () => {
    const agent = agentWith('ascii', { 'cjs-plain': PACKAGES['cjs-plain'] }, '// An agent \u2014 its own comment.\nimport { answer } from "cjs-plain";\nexport default () => answer() + "\u2713";\n');
    const compiled = await compileAgent(agent);
    const code = readFileSync(compiled.file, 'utf8');
    expect([...code].every((c) => c.charCodeAt(0) < 0x80)).toBe(true);
    expect(code).not.toContain('A comment');
    expect((loadScript(compiled.file) as { default: () => string }).default()).toBe('cjs-plain-answer:\u00e9\u2713');
  });

  it("bundles all of the heavy fixture agent's packages (the MCP SDK's client, zod, ajv), leaving no marks of the compiler in it", async () => {
    const compiled = await compileAgent(fileURLToPath(new URL('../../fixtures/agents/heavy-sdk.ts', import.meta.url)));
    expect(compiled.script).toBe(true);
    expect(compiled.packages).toEqual([]);
    const code = readFileSync(compiled.file, 'utf8');
    expect(code).not.toMatch(/__silo(Start|End)_/);
    // Every CommonJS module of it is in a function V8 compiles ahead (JSON modules aside).
    expect(code).toMatch(/__commonJS\(\{"[^"]*node_modules\/ajv\/dist\/ajv\.js":\(function\(/);
    expect((code.match(/__commonJS\(\{"[^"]*"\(/g) ?? []).filter((header) => !header.includes('.json"'))).toEqual([]);
  });
});

describe('a JavaScript agent', () => {
  /** A JavaScript agent file `file` in a folder with the plain package, and its source. */
  const jsAgent = (name: string, file: string, body: string): string => {
    const agent = agentWith(name, { plain: PACKAGES.plain }, '');
    const path = join(agent, '..', file);
    writeFileSync(path, body);
    return path;
  };

  it('that imports a package is compiled (one script with a code cache) and runs as written', async () => {
    const agent = jsAgent('js-imports', 'agent.mjs', 'import { answer } from "plain";\nimport { join } from "node:path";\nexport default () => answer() + ":" + import.meta.url.endsWith("/agent.mjs") + ":" + typeof join;\n');
    const prepared = await prepareAgent(agent);
    expect(prepared.modulePath).toMatch(/\.cjs$/);
    expect(prepared.script).toBe(true);
    const r = await runRollout({
      task: { id: 'bundle/js', instruction: 'answer', environment: { name: 'empty', createState: () => ({}), tools: [] }, verify: ({ output }) => [{ name: 'answered', pass: output === 'plain:true:function' }] },
      agent,
      outDir: join(home.dir, 'out'),
      isolation: 'thread',
    });
    expect(r.error).toBeUndefined();
    expect(r.status).toBe('passed');
  });

  it("that imports no package (for a few rollouts), that is CommonJS, or that the compiler refuses runs as it is (its worker's permissions decide)", async () => {
    const own = jsAgent('js-own', 'agent.mjs', 'import { join } from "node:path";\nexport default () => join("a", "b");\n');
    const common = jsAgent('js-cjs', 'agent.cjs', 'const { answer } = require("plain");\nmodule.exports = () => answer() + __dirname;\n');
    // A file outside its folder: the compiler refuses to carry it; the worker's permissions deny it.
    const outside = jsAgent('js-outside', 'agent.mjs', `import { answer } from "plain";\nimport data from ${JSON.stringify(join(home.dir, 'secret.json'))} with { type: "json" };\nexport default () => answer() + data;\n`);
    writeFileSync(join(home.dir, 'secret.json'), '"secret"');
    for (const agent of [own, common, outside]) expect((await prepareAgent(agent)).modulePath).toBe(agent);
    expect((await prepareAgent(own, { rollouts: COMPILE_FOR_ROLLOUTS - 1 })).modulePath).toBe(own);
    for (const agent of [common, outside]) expect((await prepareAgent(agent, { rollouts: COMPILE_FOR_ROLLOUTS })).modulePath).toBe(agent);
  });

  it('that imports no package is compiled to a script for an eval of many rollouts, and taken compiled by later ones while it is unchanged', async () => {
    const own = jsAgent('js-many', 'agent.mjs', 'import { join } from "node:path";\nexport default () => join("a", "b");\n');
    const many = await prepareAgent(own, { rollouts: COMPILE_FOR_ROLLOUTS });
    expect(many.script).toBe(true);
    expect(many.modulePath).not.toBe(own);
    expect((await new PreparedAgents({ rollouts: COMPILE_FOR_ROLLOUTS }).get(own)).modulePath).toBe(many.modulePath);
    // A single rollout compiles nothing, but takes the compiled version: here and in a fresh process.
    expect((await prepareAgent(own)).modulePath).toBe(many.modulePath);
    const source = `
      import { prepareAgent } from ${JSON.stringify(new URL('../../dist/src/pool/compile.js', import.meta.url).href)};
      console.log((await prepareAgent(${JSON.stringify(own)})).modulePath);`;
    const elsewhere = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--input-type=module', '-e', source], { timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim()))),
    );
    expect(elsewhere).toBe(many.modulePath);
    // Edited: a single rollout runs it as written again.
    writeFileSync(own, 'import { join } from "node:path";\nexport default () => join("a", "c");\n');
    expect((await prepareAgent(own)).modulePath).toBe(own);
    // A compile folder that is not private (another user could have written it): nothing is
    // taken from it or compiled into it; the agent runs as written.
    const shared = join(home.dir, 'shared-tmp');
    mkdirSync(join(shared, `silo-agents-${process.getuid?.() ?? 'user'}`), { recursive: true, mode: 0o777 });
    chmodSync(join(shared, `silo-agents-${process.getuid?.() ?? 'user'}`), 0o777);
    const tmpdirWas = process.env.TMPDIR;
    process.env.TMPDIR = shared;
    try {
      const unshared = jsAgent('js-many-shared', 'agent.mjs', 'export default () => "x";\n');
      expect((await prepareAgent(unshared)).modulePath).toBe(unshared);
      expect((await prepareAgent(unshared, { rollouts: COMPILE_FOR_ROLLOUTS })).modulePath).toBe(unshared);
    } finally {
      if (tmpdirWas === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpdirWas;
    }
    // One the script form cannot stand for (a top-level await) gains nothing compiled: as written.
    const awaits = jsAgent('js-many-await', 'agent.mjs', 'const value = await Promise.resolve("v");\nexport default () => value;\n');
    expect((await prepareAgent(awaits, { rollouts: COMPILE_FOR_ROLLOUTS })).modulePath).toBe(awaits);
  });

  it('whose workers are reused is compiled to a script even if it imports no package (a fresh instance is the script run again), a CommonJS one is not', async () => {
    const own = jsAgent('js-reused', 'agent.mjs', 'import { join } from "node:path";\nlet runs = 0;\nexport default () => join("a", String(++runs));\n');
    const common = jsAgent('js-reused-cjs', 'agent.cjs', 'module.exports = () => __dirname;\n');
    const reused = await prepareAgent(own, { reused: true });
    expect(reused.script).toBe(true);
    expect(reused.modulePath).not.toBe(own);
    // Each load is an instance of its own: module state starts afresh.
    const load = (): (() => string) => (loadScript(reused.modulePath) as { default: () => string }).default;
    expect([load()(), load()()]).toEqual([join('a', '1'), join('a', '1')]);
    expect((await prepareAgent(common, { reused: true })).modulePath).toBe(common);
    // Fresh workers take that compile too (it is stored), as long as the agent is unchanged.
    expect((await prepareAgent(own)).modulePath).toBe(reused.modulePath);
  });
});

describe('a compiled agent across processes', () => {
  /** Compiles `agent` in a fresh process: its file, and whether that process loaded esbuild. */
  const compileElsewhere = (agent: string): Promise<{ file: string; built: boolean }> => {
    const source = `
      import { createRequire } from 'node:module';
      import { compileAgent } from ${JSON.stringify(new URL('../../dist/src/pool/compile.js', import.meta.url).href)};
      const { file } = await compileAgent(${JSON.stringify(agent)});
      const built = Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/node_modules/esbuild/'));
      console.log(JSON.stringify({ file, built }));`;
    return new Promise((resolve, reject) =>
      execFile(process.execPath, ['--input-type=module', '-e', source], { timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout) as { file: string; built: boolean }))),
    );
  };

  it('is used again while none of its inputs changed, and compiled again once a bundled package did', async () => {
    const agent = agentWith('again', { plain: PACKAGES.plain }, 'import { answer } from "plain";\nexport default () => answer();\n');
    const first = await compileElsewhere(agent);
    expect(first.built).toBe(true);
    const second = await compileElsewhere(agent);
    expect(second).toEqual({ file: first.file, built: false });
    // The package changes (an upgrade): the next process bundles it again, with its new code.
    const main = join(home.dir, 'again', 'node_modules', 'plain', 'index.js');
    writeFileSync(main, 'export const answer = () => "upgraded";\n');
    utimesSync(main, new Date(Date.now() + 5_000), new Date(Date.now() + 5_000));
    const third = await compileElsewhere(agent);
    expect(third.built).toBe(true);
    expect(readFileSync(third.file, 'utf8')).toContain('"upgraded"');
  });
});
