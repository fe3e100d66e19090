// Part of `npm run build`, after tsc and bundle-worker.mjs: the `silo` command and the package's
// entry points ('silo', 'silo/agent') bundled together into dist/bundle/, so that a cold command
// reads and compiles a few files instead of the hundreds under dist/src and the small packages it
// uses. One build with code splitting: the command and a task file's `import 'silo'` load the same
// chunks (one SiloError class, one copy of every module's state), and each command's modules stay
// behind the dynamic import()s that load them only when that command runs. The chunks are not
// esbuild's own (one for each set of import()s reaching a module: ~70 files for `silo eval`) but
// groups of the modules that the same steps of the commands load (planChunks() below).
//
// The files Silo starts by path are not part of it: the agent workers' entry
// (dist/workers/agent.cjs), the built-in agents and the do-nothing agent (loaded inside workers)
// stay where tsc wrote them; the sandbox's process is bundled on its own (sandbox-child.cjs,
// below). Packages that are heavy, optional, start workers from their own files or are loaded
// only by some commands stay imports: see EXTERNAL. esbuild's metafile is written next to the
// bundle (meta.json): it says which modules each chunk holds (test/cli/module-graph.test.ts
// and test/package/pack.test.ts read it).
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, resolve } from 'node:path';
import { build } from 'esbuild';
import { groupsPlugin, moduleGraph, planGroups, reachable, withoutPluginModules } from './lib/chunk-groups.mjs';

const root = new URL('..', import.meta.url).pathname;
const outdir = `${root}dist/bundle`;
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));

/**
 * Left as imports. esbuild ships a native binary;
 * tsx registers loader hooks from its own files; the peers are optional and loaded only by the
 * features that use them. ajv, ajv-formats, commander, deep-diff and ulid are bundled: small, pure
 * JavaScript, on the path of every command (commander) or every rollout (the others).
 */
const EXTERNAL = ['esbuild', 'tsx', ...Object.keys(pkg.peerDependencies ?? {})];

const ENTRIES = { bin: 'dist/src/cli/bin.js', index: 'dist/src/index.js', agent: 'dist/src/agent.js' };
const options = {
  absWorkingDir: root,
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: true,
  // The bundled CommonJS packages (ajv) call require(): each chunk gets one of its own.
  banner: { js: "import { createRequire as __siloRequire } from 'node:module'; const require = __siloRequire(import.meta.url);" },
  external: EXTERNAL.flatMap((name) => [name, `${name}/*`]),
  logLevel: 'warning',
  metafile: true,
};

rmSync(outdir, { recursive: true, force: true });
// The chunks are planned on the module graph of the same build without them (not written).
const graph = moduleGraph((await build({ ...options, entryPoints: ENTRIES, write: false })).metafile, root);
const grouping = groupsPlugin({ root, graph, entryPoints: ENTRIES, ...planChunks(graph) });
const result = await build({ ...options, entryPoints: grouping.entryPoints, plugins: [grouping.plugin] });

// The sandbox's own process (src/sandbox/child.ts), started by path for every sandbox: one
// CommonJS file of its own, as the agent workers' entry is (bundle-worker.mjs), so that it starts
// without Node's ES module loader and reads one file instead of a dozen (~30 ms less of a cold
// run's critical path on this machine). `import.meta.url` (paths.ts) becomes the file's URL.
const child = await build({
  absWorkingDir: root,
  entryPoints: ['dist/src/sandbox/child.js'],
  outfile: `${outdir}/sandbox-child.cjs`,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  define: { 'import.meta.url': '__siloModuleUrl' },
  banner: { js: "const __siloModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
  metafile: true,
});

// Only Node's modules and this package's declared dependencies may be imported by the bundle:
// anything else would be missing where the package is installed.
const declared = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);
const builtins = new Set(builtinModules);
const packageOf = (path) => (path.startsWith('@') ? path.split('/').slice(0, 2).join('/') : path.split('/')[0]);
const undeclared = new Set();
for (const output of [...Object.values(result.metafile.outputs), ...Object.values(child.metafile.outputs)]) {
  for (const i of output.imports) {
    if (!i.external) continue;
    if (i.path.startsWith('node:') || builtins.has(i.path)) continue;
    if (!declared.has(packageOf(i.path))) undeclared.add(i.path);
  }
}
if (undeclared.size > 0) {
  throw new Error(`the bundle imports packages that package.json does not declare in dependencies or peerDependencies: ${[...undeclared].join(', ')}`);
}

// Paths in the metafile are relative to the repository; kept so (the tests map chunks to dist/src).
writeFileSync(`${outdir}/meta.json`, JSON.stringify(withoutPluginModules(result.metafile)));

// The chunks' own package.json: Node looks up the nearest package.json of every .js module it loads
// (to learn whether it is an ES module), from the module's folder up. With one in chunks/, that
// search ends at once for each file a command loads (then ~75); measured on a cold `silo run`,
// 3–6% less wall (farm-bench, 40 pairs each way).
writeFileSync(`${outdir}/chunks/package.json`, `${JSON.stringify({ type: 'module' })}\n`);

/**
 * Which modules share a chunk (see scripts/lib/chunk-groups.mjs). The phases are the steps in which
 * modules load: the command line, each command's definition and its action (the import()s its
 * action makes), the sandbox `silo run` and `silo eval` start first, each function of the API,
 * 'silo' and 'silo/agent'. The scenarios are what a user runs: a command, its `--help`, an
 * `import 'silo'`, a call of the API. Features that only some runs of a command use (the queue,
 * MCP serving, `silo check`, the report writer, the model gateway's server, a `.ts` task file's
 * compiler, ajv's compiler) are not part of any phase: what only they load keeps esbuild's chunks.
 */
function planChunks(graph) {
  const src = (path) => `${root}dist/src/${path}`;
  const name = (module) => basename(module, '.js');
  const LAZY = ['queue/', 'serve/', 'check/', 'inspect/report', 'inspect/compare-page', 'eval/compare-table', 'gateway/gateway', 'gateway/call', 'task-compile'].map(src);
  const lazy = (path) => /\/node_modules\/ajv(-formats)?\//.test(path) || LAZY.some((prefix) => path.startsWith(prefix));
  /** The import()s of `module` that are not of a lazy feature. */
  const eager = (module) => graph.modules.get(module).dynamic.filter((t) => !lazy(t));
  const early = src('cli/run-early.js');
  const commands = eager(src('cli/main.js')).filter((t) => t !== early);
  const api = eager(src('index.js'));
  const phases = {
    agent: [src('agent.js')],
    index: [src('index.js')],
    // (all of `silo --version`: commander)
    cli: [src('cli/main.js')],
    early: [early],
    sandbox: eager(early),
    ...Object.fromEntries(commands.map((c) => [`define ${name(c)}`, [c]])),
    ...Object.fromEntries(commands.map((c) => [`run ${name(c)}`, eager(c)])),
    ...Object.fromEntries(api.map((t) => [`call ${name(t)}`, [t]])),
  };
  const starts = (c) => eager(c).includes(early);
  const scenarios = {
    'silo --version': phases.cli,
    'silo --help': [...phases.cli, ...commands],
    ...Object.fromEntries(commands.filter(starts).map((c) => [`silo ${name(c)} --help`, [...phases.cli, early, c]])),
    ...Object.fromEntries(commands.map((c) => [`silo ${name(c)}`, [...phases.cli, c, ...eager(c), ...(starts(c) ? phases.sandbox : [])]])),
    'the early sandbox': [early, ...phases.sandbox],
    "import 'silo'": phases.index,
    "import 'silo/agent'": phases.agent,
    ...Object.fromEntries(api.map((t) => [`call ${name(t)}`, [...phases.index, t]])),
  };
  const loadedIn = (names) => new Set(names.flatMap((p) => [...reachable(graph, phases[p])]));
  const inPhases = loadedIn(Object.keys(phases));
  const defined = loadedIn(['cli', 'early', 'index', ...commands.map((c) => `define ${name(c)}`)]);
  const imported = new Set([...commands, src('index.js')].flatMap(eager));
  const entries = Object.values(ENTRIES).map((e) => resolve(root, e));
  const groups = planGroups(graph, {
    phases,
    // The entry points and each command's definition keep chunks of their own.
    alone: (m) => entries.includes(m) || commands.includes(m),
    scenarios,
    // (nothing more for `silo --version`, the sandbox started early and an agent's worker)
    fixed: ['silo --version', 'the early sandbox', "import 'silo/agent'"],
    // Nothing gains what only a lazy feature loads; a `--help`, what no definition loads (nothing
    // of what the commands run); `silo run`, what a command's action or the API imports on its own
    // (nothing of an eval: its store, its runner).
    keepOut: (m, scenario) => !inPhases.has(m) || (scenario.endsWith('--help') && !defined.has(m)) || (scenario === 'silo run' && imported.has(m)),
    // 40 KB more for a scenario, at most; a file is worth ~13 KB (~0.5 ms of Node's ES module
    // loader against ~37 µs a KB to compile, on the 2-core VM the benchmarks run on).
    budget: 40_000,
    fileBytes: 13_000,
  });
  // A command's action loads as one module: its import()s but run-early.js's (loaded first).
  const together = new Map(commands.map((c) => [c, eager(c).filter((t) => t !== early)]));
  return { groups, together };
}
