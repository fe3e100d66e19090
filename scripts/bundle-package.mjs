// Part of `npm run build`, after tsc and bundle-worker.mjs: the `silo` command and the package's
// entry points ('silo', 'silo/agent') bundled together into dist/bundle/, so that a cold command
// reads and compiles a few files instead of the hundreds under dist/src and the small packages it
// uses. One build with code splitting: the command and a task file's `import 'silo'` load the same
// chunks (one SiloError class, one copy of every module's state), and each command's modules stay
// behind the dynamic import()s that load them only when that command runs.
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
import { build } from 'esbuild';

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

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { bin: 'dist/src/cli/bin.js', index: 'dist/src/index.js', agent: 'dist/src/agent.js' },
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
});

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
writeFileSync(`${outdir}/meta.json`, JSON.stringify(result.metafile));

// The chunks' own package.json: Node looks up the nearest package.json of every .js module it loads
// (to learn whether it is an ES module), from the module's folder up. With one in chunks/, that
// search ends at once for each of the ~75 files a command loads; measured on a cold `silo run`,
// 3–6% less wall (farm-bench, 40 pairs each way).
writeFileSync(`${outdir}/chunks/package.json`, `${JSON.stringify({ type: 'module' })}\n`);
