/**
 * TypeScript agents are compiled on the host, once per file version, into one ES module: a
 * narrowed worker can neither start esbuild (a child process) nor write tsx's cache. Relative
 * imports are bundled in, and so are the packages it imports where that is safe: a worker then
 * reads and compiles one file instead of resolving, reading and compiling the hundreds of files of
 * an SDK (each fresh worker pays that again). A package that cannot work bundled stays an import,
 * pinned to the absolute path the host resolved, so the compiled file can live outside the
 * agent's folder: one with a native addon or WebAssembly, one that finds files next to its own
 * with `__dirname`/`__filename`/`require.resolve`, or that requires or imports a name it computes
 * (see UNBUNDLABLE). Everything bundled is a file the agent's worker may read anyway (the confine
 * plugin). Workers then load plain JavaScript (and no longer pay ~100 ms to register a TypeScript
 * loader).
 *
 * The compiled module still reads as the agent's own files: `import.meta.url`, `.filename` and
 * `.dirname` in each of its modules name that module's source file (an agent finds the files next
 * to it, a prompt say), and the host maps the stack traces it records back to the TypeScript with
 * the compiler's source map (source-map.ts).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync, statSync, utimesSync } from 'node:fs';
import { isBuiltin, type SourceMapPayload } from 'node:module';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Script } from 'node:vm';
import { SiloError } from '../errors.js';
import { PACKAGE_ROOT, SILO_VERSION } from '../paths.js';
import { isCommonJs, isTypeScript } from '../typescript.js';
import { allowsRead, readableFor } from './permissions.js';
import { privateFolder, stamp, stamps, unchanged, writeAtomically, type Stamp } from './private-folder.js';
import { StackMapper, type Shift } from './source-map.js';

/** A compiled agent: the module to load, and the package folders it imports from. */
export interface CompiledAgent {
  file: string;
  /**
   * The module is a script (CommonJS wrapped in a function, `.cjs`), loaded with vm.Script and the
   * V8 code cache the host made next to it (`<file>.cache`); otherwise an ES module (`.mjs`).
   */
  script: boolean;
  /** Folders of the packages it imports, as resolved (for the worker's read permissions). */
  packages: string[];
  /** Maps the compiled module's positions in stack traces to the agent's own files. */
  stacks: StackMapper;
}

/** Compiled agents of this process, by versionKey: being compiled, or compiled. */
const compiled = new Map<string, Promise<CompiledAgent>>();
/** Those of `compiled` that are done. */
const finished = new Map<string, CompiledAgent>();

/** A version of the agent file at `path`: its path, size and modification time. */
function versionKey(path: string): string {
  const stat = statSync(path);
  return `${path}\u0000${stat.size}\u0000${stat.mtimeMs}`;
}

/**
 * The agent as compiled before, in this process or by an earlier one, if none of its inputs
 * changed since; undefined otherwise (nothing is compiled here, and nothing waited for: a
 * compile still running in this process counts as none).
 */
function compiledBefore(path: string): CompiledAgent | undefined {
  let key: string;
  try {
    key = versionKey(path);
  } catch {
    return undefined; // the worker's load says what is wrong
  }
  const done = finished.get(key);
  if (done) return done;
  if (compiled.has(key)) return undefined;
  const found = stored(path, key);
  if (found) {
    finished.set(key, found);
    compiled.set(key, Promise.resolve(found));
  }
  return found;
}

/**
 * Compiles a TypeScript agent: once per version of its code and of the packages bundled in. In
 * this process, by path, size and modification time; across processes, a compiled agent whose
 * every input (each file bundled, the entry, the package.json of each package it imports) has
 * the size and modification time it had is used again (its manifest in the private folder), so
 * a fresh `silo run` does not bundle an SDK again.
 */
export function compileAgent(path: string): Promise<CompiledAgent> {
  const key = versionKey(path);
  let job = compiled.get(key);
  if (!job) {
    job = Promise.resolve().then(() => stored(path, key) ?? build(path, key));
    compiled.set(key, job);
    job.then(
      (agent) => finished.set(key, agent),
      () => compiled.delete(key),
    );
  }
  return job;
}

/**
 * Where `import.meta.url`, `.filename` and `.dirname` of an agent's module are found once compiled:
 * names of the build's own (from its cache key, so the output stays the same for the same file),
 * which no agent's code declares.
 */
function metaNames(key: string): { url: string; filename: string; dirname: string; start: string; end: string } {
  const tag = createHash('sha256').update(key).digest('hex').slice(0, 12);
  return { url: `__siloMetaUrl_${tag}`, filename: `__siloMetaFilename_${tag}`, dirname: `__siloMetaDirname_${tag}`, start: `__siloStart_${tag}_`, end: `__siloEnd_${tag}_` };
}

/** esbuild's loader for an agent's own module, by extension (modules it does not name load as usual). */
const LOADERS: Record<string, 'ts' | 'tsx' | 'js' | 'jsx'> = { '.ts': 'ts', '.mts': 'ts', '.cts': 'ts', '.tsx': 'tsx', '.js': 'js', '.mjs': 'js', '.cjs': 'js', '.jsx': 'jsx' };

/**
 * Why an agent's compiled code may not contain `file` (or, for a package, import it), or null when
 * it may: bundling reads only what the agent's worker may read (its folder and the node_modules
 * folders the permission model grants), so an import cannot carry the task files, their data or
 * anything else of the host into the compiled module.
 */
function refusal(agentPath: string, readable: readonly string[], file: string): string | null {
  if (allowsRead(readable, file)) return null;
  return (
    `the agent imports ${file}, which is outside its folder (${dirname(agentPath)}) and its node_modules; ` +
    `its worker may not read that file, so its compiled code may not contain it either: move the file into the agent's folder (or into a package)`
  );
}

/**
 * What in a package's code means it cannot be bundled: it finds files next to its own through
 * CommonJS's `__dirname`/`__filename` or `require.resolve` (they would name the compiled file's
 * folder, or nothing), it loads a native addon or WebAssembly, or it requires or imports a module
 * whose name it computes (the bundler cannot follow it). CommonJS marked `__esModule` is bundled:
 * its default import is made Node's (`module.exports`, see nodeDefaults). `import.meta.url` is
 * fine: each bundled module keeps its own file's (see silo-import-meta).
 */
const UNBUNDLABLE = /\b__dirname\b|\b__filename\b|\brequire\.resolve\b|\brequire\(\s*[^'"`\s)]|\bimport\(\s*[^'"`\s)]|\.node['"`]|\.wasm\b|\bnode-gyp-build\b|\brequire\(\s*['"]bindings['"]\s*\)/;

/** A dynamic import of a name computed at run time (not a quoted one). */
const COMPUTED_IMPORT = /\bimport\(\s*[^'"`\s)]/;

/** Files a package holds that no bundle can carry (a native addon, WebAssembly). */
const BINARY = /\.(node|wasm)$/;

async function build(path: string, key: string): Promise<CompiledAgent> {
  // The first pass bundles every package and notes those that cannot be bundled; if there are
  // some, a second pass leaves them as imports. Both try the script form first (scriptProblem).
  const first = await buildEither(path, key, new Set());
  const done = first.found.size === 0 ? first : await buildEither(path, key, first.found);
  store(path, key, done);
  return done.compiled;
}

/**
 * The agent compiled as a script where it can be, else as an ES module. A script is what V8 can
 * keep a code cache for (Node 20 has none for ES modules): each fresh worker then skips parsing
 * and compiling the code the host compiled for it (a large SDK: ~0.65× the time to load it).
 */
async function buildEither(path: string, key: string, unbundlable: ReadonlySet<string>): Promise<Built> {
  try {
    const script = await buildOnce(path, key, unbundlable, 'cjs');
    if (script !== null) return script;
  } catch {
    // Whatever the script form trips on, the ES module form says it (or works).
  }
  return (await buildOnce(path, key, unbundlable, 'esm'))!;
}

/**
 * Why a script build of an agent cannot stand for its ES module, or null when it can: the script
 * has no top-level await (esbuild refuses it), no `import.meta` beyond `.url`, `.filename` and
 * `.dirname` (which the compiler defines), no dynamic import left in it (of Node's own modules,
 * of a name the agent's code computes: a script has no module loader of its own), and every
 * package left unbundled is CommonJS (so
 * `require()` loads it as Node's `import` would, never through require(esm)).
 */
function scriptProblem(result: import('esbuild').BuildResult): string | null {
  if (result.warnings.some((w) => w.text.includes('import.meta'))) return 'import.meta';
  for (const output of Object.values(result.metafile?.outputs ?? {})) {
    for (const imp of output.imports) {
      if (!imp.external) continue;
      if (imp.kind === 'dynamic-import') return `import() of ${imp.path}`;
      if (imp.path.startsWith('/') && !isCommonJs(imp.path)) return `${imp.path} is an ES module`;
    }
  }
  return null;
}


/** A source map that maps nothing. */
const EMPTY_MAP: SourceMapPayload = { version: 3, sources: [], sourcesContent: [], names: [], mappings: '', file: '', sourceRoot: '' };

/** The wrapper of a script build: what a CommonJS module is given, as Node gives it. */
const SCRIPT_HEAD = '(function (exports, require, module, __filename, __dirname) {';
const SCRIPT_TAIL = '\n})';

/** What a compiled agent's manifest records (see compileAgent). */
interface Manifest {
  version: 8;
  key: string;
  file: string;
  packages: string[];
  /** The compiled module's source map is in `<file>.map` (read when a stack needs it). */
  shifts: [string, Shift][];
  /** Every input: path, size, modification time, inode, change time. */
  inputs: [string, ...Stamp][];
}

/** Where the manifest of the agent at `path` is (one per agent file, Silo and Node version). */
function manifestFile(path: string): string {
  const id = createHash('sha256').update(`${path}\u0000${SILO_VERSION}\u0000${PACKAGE_ROOT}\u0000${process.version}`).digest('hex').slice(0, 24);
  return join(privateFolder(), `${id}.prepared.json`);
}

/** The agent compiled by an earlier process, if none of its inputs changed since. */
function stored(path: string, key: string): CompiledAgent | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile(path), 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  if (manifest.version !== 8 || manifest.key !== key || stamp(manifest.file) === null || !unchanged(manifest.inputs)) return undefined;
  // In use: kept young, as a compile that rewrites it would (pruneCompiledAgents).
  try {
    const now = new Date();
    utimesSync(manifest.file, now, now);
    utimesSync(`${manifest.file}.map`, now, now);
    if (manifest.file.endsWith('.cjs')) utimesSync(codeCacheFile(manifest.file), now, now);
  } catch {
    // best effort
  }
  const map = (): SourceMapPayload => {
    try {
      return JSON.parse(readFileSync(`${manifest.file}.map`, 'utf8')) as SourceMapPayload;
    } catch {
      return EMPTY_MAP;
    }
  };
  return { file: manifest.file, script: manifest.file.endsWith('.cjs'), packages: manifest.packages, stacks: new StackMapper(manifest.file, map, new Map(manifest.shifts)) };
}

/** Records a compiled agent's manifest (best effort: without it, the next process compiles again). */
function store(path: string, key: string, { compiled, inputs, map, shifts }: Built): void {
  const files = new Set([path, ...inputs]);
  // A package upgraded or replaced changes its package.json too.
  for (const file of inputs) if (file.includes(`${sep}node_modules${sep}`)) files.add(join(packageFolder(file), 'package.json'));
  for (const folder of compiled.packages) files.add(join(folder, 'package.json'));
  const manifest: Manifest = { version: 8, key, file: compiled.file, packages: compiled.packages, shifts: [...shifts], inputs: stamps(files) };
  try {
    writeAtomically(`${compiled.file}.map`, JSON.stringify(map));
    writeAtomically(manifestFile(path), JSON.stringify(manifest));
  } catch {
    // not stored: compiled again next time
  }
}

/** One pass of the compiler: the agent compiled, what it was made of, and the packages found unbundlable. */
interface Built {
  compiled: CompiledAgent;
  found: Set<string>;
  /** The files bundled (absolute paths). */
  inputs: string[];
  map: SourceMapPayload;
  shifts: Map<string, Shift>;
}

async function buildOnce(path: string, key: string, unbundlable: ReadonlySet<string>, format: 'esm' | 'cjs'): Promise<Built | null> {
  const esbuild = await import('esbuild');
  const dir = privateFolder();
  const packages = new Set<string>();
  const unsafe = new Set<string>();
  const shifts = new Map<string, Shift>();
  const META = metaNames(key);
  /** One of the agent's own files imports a name it computes (see scriptProblem). */
  let computesImports = false;
  /** Modules loaded so far (each one's marks are numbered). */
  let modules = 0;
  const readable = readableFor(path);
  /** The package a file of node_modules belongs to, or null for the agent's own files. */
  const packageOf = (file: string): string | null => (file.includes(`${sep}node_modules${sep}`) ? packageFolder(file) : null);
  let result: Awaited<ReturnType<typeof esbuild.build>>;
  try {
    result = await esbuild.build({
      entryPoints: [path],
      bundle: true,
      write: false,
      // Not written there: what the source map's paths are relative to (made absolute below).
      outfile: join(dir, 'agent.mjs'),
      sourcemap: 'external',
      sourcesContent: false,
      minifyWhitespace: true,
      format,
      platform: 'node',
      target: `node${process.versions.node.split('.')[0]}`,
      // require() (import x = require('pkg'), CommonJS code bundled in) works in the ES module too.
      // A script is a function of what Node gives a CommonJS module (the worker calls it); its
      // code is strict, as the ES module's is.
      ...(format === 'esm'
        ? { banner: { js: "import { createRequire as __siloCreateRequire } from 'node:module'; const require = __siloCreateRequire(import.meta.url);" } }
        : { banner: { js: `${SCRIPT_HEAD}'use strict';` }, footer: { js: SCRIPT_TAIL } }),
      define: { 'import.meta.url': META.url, 'import.meta.filename': META.filename, 'import.meta.dirname': META.dirname },
      logLevel: 'silent',
      metafile: true,
      plugins: [
        {
          name: 'silo-confine',
          setup(b) {
            // First of the plugins: every file that would go into the bundle, of any kind (a module,
            // JSON, text), is checked before anything reads it.
            b.onLoad({ filter: /.*/ }, (args) => {
              const refused = args.namespace === 'file' ? refusal(path, readable, args.path) : `the agent imports ${args.path} (${args.namespace}), which is not a file of its folder`;
              if (refused !== null) return { errors: [{ text: refused }] };
              // An addon or WebAssembly of a package: the package stays an import (next pass).
              const owner = packageOf(args.path);
              if (owner !== null && BINARY.test(args.path)) {
                unsafe.add(owner);
                return { contents: '', loader: 'empty' };
              }
              return undefined;
            });
          },
        },
        {
          name: 'silo-import-meta',
          setup(b) {
            // Every module bundled in gets its own values, in front of its first line (after a
            // shebang), so no line moves; esbuild keeps the names of different modules apart and
            // drops the ones a module does not use. (A module of another kind holds no code.)
            // And marks where its code starts and ends (see eagerFactories).
            b.onLoad({ filter: /\.[cm]?[jt]sx?$/, namespace: 'file' }, (args) => {
              const loader = LOADERS[extname(args.path)];
              if (!loader) return undefined;
              const source = readFileSync(args.path, 'utf8');
              const owner = packageOf(args.path);
              if (owner !== null && UNBUNDLABLE.test(source)) unsafe.add(owner);
              if (owner === null && COMPUTED_IMPORT.test(source)) computesImports = true;
              const meta = `const ${META.url} = ${JSON.stringify(pathToFileURL(args.path).href)}, ${META.filename} = ${JSON.stringify(args.path)}, ${META.dirname} = ${JSON.stringify(dirname(args.path))};`;
              const shebang = source.startsWith('#!') ? source.slice(0, source.indexOf('\n') + 1) : '';
              const id = modules++;
              const start = `0[${JSON.stringify(META.start + id)}];`;
              shifts.set(args.path, { line: shebang === '' ? 0 : 1, chars: start.length + meta.length });
              return { contents: `${shebang}${start}${meta}${source.slice(shebang.length)}\n;0[${JSON.stringify(META.end + id)}];`, loader };
            });
          },
        },
        {
          name: 'silo-packages',
          setup(b) {
            // Packages are bundled, but for those that cannot be: each of them stays an import of
            // the file the host resolved.
            b.onResolve({ filter: /^[^./]/ }, async (args) => {
              if (args.pluginData === 'silo-inner' || args.kind === 'entry-point') return undefined;
              const found = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'silo-inner' });
              if (found.errors.length > 0 || found.external || !found.path) return undefined;
              // A bare name that resolves to the agent's own files (tsconfig paths, a workspace
              // package linked in) is bundled like a relative import.
              if (!found.path.includes(`${sep}node_modules${sep}`)) return undefined;
              // A package the worker could not load (a tsconfig path into another project's
              // node_modules, say) is refused here, not granted to the worker.
              const refused = refusal(path, readable, found.path);
              if (refused !== null) return { errors: [{ text: refused }] };
              const folder = packageFolder(found.path);
              if (!unbundlable.has(folder)) return { path: found.path };
              packages.add(folder);
              return { path: found.path, external: true };
            });
          },
        },
      ],
    });
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors ?? [];
    const first = errors[0];
    const where = first?.location ? ` (${first.location.file}:${first.location.line})` : '';
    // A package the agent imports that is not installed: say how to install it.
    const missing = /^Could not resolve "((?:@[^/"]+\/)?[^./"][^/"]*)[^"]*"$/.exec(first?.text ?? '')?.[1];
    const hint = missing ? `; install the package (npm install ${missing}) or fix the import` : '';
    throw new SiloError('SILO_AGENT_LOAD_FAILED', `cannot compile the agent ${path}: ${first?.text ?? (err as Error).message}${where}${hint}`);
  }
  // A dynamic import of a name the agent's own code computes has no loader in a script either.
  if (format === 'cjs' && (computesImports || scriptProblem(result) !== null)) return null;
  const outputs = result.outputFiles ?? [];
  let code = outputs.find((o) => !o.path.endsWith('.map'))?.text.replace(/\n\/\/# sourceMappingURL=\S*\s*$/, '\n') ?? '';

  code = nodeDefaults(code, META);
  code = unmarked(format === 'cjs' ? eagerFactories(code, META) : code, META);
  const map = JSON.parse(outputs.find((o) => o.path.endsWith('.map'))?.text ?? JSON.stringify(EMPTY_MAP)) as SourceMapPayload;
  // esbuild writes the sources as URLs relative to the output (é and # percent-encoded).
  map.sources = map.sources.map((source) => fileURLToPath(new URL(source, pathToFileURL(`${dir}${sep}`))));
  const name = createHash('sha256').update(key).update(code).digest('hex').slice(0, 24);
  const file = join(dir, `${name}.${format === 'esm' ? 'mjs' : 'cjs'}`);
  writeAtomically(file, code);
  if (format === 'cjs') writeCodeCache(file, code);
  const inputs = Object.keys(result.metafile?.inputs ?? {}).map((input) => resolve(input));
  return { compiled: { file, script: format === 'cjs', packages: [...packages], stacks: new StackMapper(file, map, shifts) }, found: unsafe, inputs, map, shifts };
}

/**
 * A CommonJS module imported by ES module code, bundled in or left an import, is imported as
 * Node's `import` would: its `module.exports` is the default export, `__esModule` or not. esbuild
 * does so (its "node mode") only for importers Node would load as ES modules by their extension or
 * package `type`; an agent's own TypeScript in a folder of no `type` would get `exports.default`.
 * So esbuild's helper that every such import goes through (in front of the first module's code)
 * always takes node mode, edited in place: the text keeps its length, and the source map its
 * positions. (A changed helper, in another esbuild, fails the tests of default imports.)
 */
function nodeDefaults(code: string, marks: { start: string }): string {
  const helper = /var __toESM=\(mod,isNodeMode,target\)=>\(target=mod!=null\?__create\(__getProtoOf\(mod\)\):\{\},__copyProps\(isNodeMode\|\|/.exec(code);
  const firstModule = code.indexOf(`0["${marks.start}`);
  if (helper === null || (firstModule >= 0 && helper.index > firstModule)) return code;
  // `isNodeMode||` becomes `!0        ||`.
  const from = helper.index + helper[0].length - 'isNodeMode||'.length;
  return `${code.slice(0, from)}${'!0'.padEnd('isNodeMode'.length, ' ')}${code.slice(from + 'isNodeMode'.length)}`;
}

/**
 * esbuild wraps each CommonJS module it bundles (and each ES module something requires) in a
 * function, which V8 compiles lazily: the code cache the host makes by compiling the script (never
 * running it) would not hold them, and every worker would compile the code of each such module as
 * it loads. V8 compiles a function expression in parentheses with the code around it, so each
 * wrapper, `"path"(exports, module) {...}` in the object esbuild gives `__commonJS` or `__esm`,
 * becomes `"path": (function (exports, module) {...})`: the same function (only esbuild's code
 * calls it), now in the code cache. The marks put around each module's code (silo-import-meta)
 * say where a wrapper's code starts and ends without parsing the bundle: a wrapper whose marks are
 * not exactly where they should be is left as it is. Each edit keeps the text's length, so every
 * position of the source map stays right.
 */
function eagerFactories(code: string, marks: { start: string; end: string }): string {
  const header = new RegExp(`(?<=(?:__commonJS|__esm)\\(\\{)("(?:[^"\\\\\\n]|\\\\.)*")\\(([\\w$,]*)\\)\\{0\\["${marks.start}(\\d+)"\\];`, 'g');
  const parts: string[] = [];
  let at = 0;
  for (const m of code.matchAll(header)) {
    const [whole, name, params, id] = m as unknown as [string, string, string, string];
    const from = m.index!;
    if (from < at) continue;
    const end = `0[${JSON.stringify(marks.end + id)}]`;
    const endAt = code.indexOf(end, from + whole.length);
    // The wrapper's body ends right after its end mark: `}` (a `;` between), then esbuild's `})`.
    const close = endAt < 0 ? null : /^;?\}\}\)/.exec(code.slice(endAt + end.length, endAt + end.length + 4));
    if (close === null) continue;
    const head = `${name}:(function(${params}){`;
    const tail = code.slice(endAt, endAt + end.length + close[0].length - 2);
    parts.push(code.slice(at, from), head.padEnd(whole.length, ' '), code.slice(from + whole.length, endAt), '})'.padStart(tail.length, ' '));
    at = endAt + tail.length;
  }
  parts.push(code.slice(at));
  return parts.join('');
}

/** The bundle without the marks eagerFactories did not take out (blanks of the same length). */
function unmarked(code: string, marks: { start: string; end: string }): string {
  const mark = new RegExp(`0\\["(?:${marks.start}|${marks.end})\\d+"\\]`, 'g');
  return code.replace(mark, (text) => ' '.repeat(text.length));
}

/**
 * V8's code cache of a script build, next to it (`<file>.cache`): made here by compiling the code,
 * never by running it (no agent code runs on the host, and no worker writes what other workers
 * load). It holds what V8 compiles ahead (the top level and the functions it expects to run at
 * once). Best effort: a worker without it, or whose V8 refuses it, compiles as usual.
 */
function writeCodeCache(file: string, code: string): void {
  try {
    writeAtomically(codeCacheFile(file), new Script(code, { filename: file }).createCachedData());
  } catch {
    // not written: workers compile the script themselves
  }
}

/** Where the code cache of a compiled script is. */
export function codeCacheFile(file: string): string {
  return `${file}.cache`;
}

/** The folder of the package a resolved file belongs to (the folder under node_modules). */
export function packageFolder(file: string): string {
  const marker = `${join('node_modules')}/`;
  const at = file.lastIndexOf(marker);
  if (at < 0) return dirname(file);
  const rest = file.slice(at + marker.length).split('/');
  const depth = rest[0]?.startsWith('@') ? 2 : 1;
  return file.slice(0, at + marker.length) + rest.slice(0, depth).join('/');
}

/** An agent ready for a narrowed worker: the module it loads and what it may read. */
export interface PreparedAgent {
  /** The module the worker imports: the agent itself, or its compiled form. */
  modulePath: string;
  /** The compiled form is a script with a code cache (CompiledAgent.script), not an ES module. */
  script?: boolean;
  /** The module is CommonJS, run as written. */
  commonJs?: boolean;
  /** Read permissions of its worker (see readableFor). */
  readable: string[];
  /** Its stack traces (and messages that quote them) as the user wrote the agent. */
  mapStack: (text: string) => string;
}

/** How an agent is prepared. */
export interface PrepareOptions {
  /**
   * Its workers are reused (`--reuse-workers`): each rollout runs a fresh instance of the agent in
   * a thread that ran others. Every JavaScript agent that is an ES module is then compiled too, so
   * that a fresh instance is the compiled script run again (microseconds), not a new ES module
   * instance (resolved, read, compiled and linked again, ~0.5 ms, and kept by the thread's module
   * loader until the thread ends: a reused worker's memory grew with every rollout).
   */
  reused?: boolean;
  /**
   * Rollouts of the agent the caller is about to run (an eval's tasks × trials). A fresh worker
   * that loads an ES module agent starts Node's ES module loader for it (~4–7 ms of CPU on a
   * 2-core VM); one that loads the agent compiled as a script does not. Compiling costs ~150–200
   * ms, once per version of the agent, so an ES module agent that imports no package is compiled
   * for an eval of at least COMPILE_FOR_ROLLOUTS rollouts, and otherwise only taken compiled when
   * an earlier compile of this version is stored.
   */
  rollouts?: number;
}

/** Rollouts from which an ES module agent that imports no package is compiled (PrepareOptions.rollouts). */
export const COMPILE_FOR_ROLLOUTS = 32;

/** Compiles a TypeScript agent and works out its worker's read permissions. */
export async function prepareAgent(agentPath: string, { reused = false, rollouts = 0 }: PrepareOptions = {}): Promise<PreparedAgent> {
  refuseEscapingLinks(dirname(agentPath));
  const asIs = (): PreparedAgent => ({
    modulePath: agentPath,
    ...(isCommonJs(agentPath) ? { commonJs: true } : {}),
    readable: readableFor(agentPath),
    mapStack: (text) => text,
  });
  let compiled: CompiledAgent;
  if (isTypeScript(agentPath)) compiled = await compileAgent(agentPath);
  else if (!isEsModule(agentPath)) return asIs();
  else if (reused || importsPackages(agentPath)) {
    // A JavaScript agent that imports packages is compiled for the same reason (one file, a code
    // cache), and so is every ES module agent whose workers are reused (see PrepareOptions); one
    // the compiler cannot take runs as written (its worker's permissions are the same).
    try {
      compiled = await compileAgent(agentPath);
    } catch {
      return asIs();
    }
  } else {
    // Fresh workers and no package: only the script form saves them anything (the ES module
    // loader), and only enough rollouts repay a compile (PrepareOptions.rollouts).
    const found = rollouts >= COMPILE_FOR_ROLLOUTS ? await compileAgent(agentPath).catch(() => undefined) : compiledBefore(agentPath);
    if (!found?.script) return asIs();
    compiled = found;
  }
  const { file, script, packages, stacks } = compiled;
  const own = script ? [file, codeCacheFile(file)] : [file];
  return { modulePath: file, ...(script ? { script } : {}), readable: readableFor(agentPath, [...own, ...packages.map((p) => `${p}${sep}*`)]), mapStack: (text) => stacks.map(text) };
}

/** Import specifiers in JavaScript source (static, dynamic, require), quoted plainly. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)(['"])([^'"\s]{1,214})\1/g;

/** Bytes of a JavaScript agent read to find its imports; a larger one runs as written. */
const IMPORT_SCAN_BYTES = 1 << 20;

/**
 * Whether a JavaScript agent is an ES module that imports a package (a name, not a path, and not
 * one of Node's own), so that compiling it saves its workers resolving and compiling the package's
 * files. A CommonJS agent runs as written (its `__dirname` is its own folder's).
 */
function importsPackages(agentPath: string): boolean {
  if (!isEsModule(agentPath)) return false;
  let source: string;
  try {
    if (statSync(agentPath).size > IMPORT_SCAN_BYTES) return false;
    source = readFileSync(agentPath, 'utf8');
  } catch {
    return false;
  }
  for (const [, , name] of source.matchAll(SPECIFIER)) {
    if (!name!.startsWith('.') && !name!.startsWith('/') && !name!.startsWith('file:') && !isBuiltin(name!)) return true;
  }
  return false;
}

/** Whether a JavaScript agent is an ES module (`.mjs`, or `.js` in a package of `type: module`). */
function isEsModule(agentPath: string): boolean {
  return /\.m?js$/.test(agentPath) && !isCommonJs(agentPath);
}

/**
 * Agents prepared once for many rollouts (an eval's): the folder scan and the compilation happen
 * for the first rollout of each agent, not for all of them. Made per eval, so an agent edited
 * between two evals is prepared again.
 */
export class PreparedAgents {
  readonly #agents = new Map<string, Promise<PreparedAgent>>();
  readonly #rollouts: number;

  /** `rollouts`: how many the eval runs (PrepareOptions.rollouts). */
  constructor({ rollouts = 0 }: { rollouts?: number } = {}) {
    this.#rollouts = rollouts;
  }

  get(agentPath: string, options: Pick<PrepareOptions, 'reused'> = {}): Promise<PreparedAgent> {
    const key = `${options.reused === true ? 'reused' : 'fresh'}\u0000${agentPath}`;
    let prepared = this.#agents.get(key);
    if (!prepared) {
      this.#agents.set(key, (prepared = prepareAgent(agentPath, { ...options, rollouts: this.#rollouts })));
      // A failure may pass (a full disk while compiling): the next rollout tries again.
      prepared.catch(() => this.#agents.delete(key));
    }
    return prepared;
  }
}

/** Entries of an agent's folder looked at for links, at most. */
const LINK_SCAN_LIMIT = 20_000;

/**
 * Node's permission model checks paths, not where symlinks lead: a link in the agent's folder to
 * the task files would let the agent read them. An agent whose folder (outside node_modules and
 * .git) holds a link leading out of it is refused.
 */
function refuseEscapingLinks(folder: string): void {
  let root: string;
  try {
    root = realpathSync(folder);
  } catch {
    return; // the agent's load reports a missing folder
  }
  const pending = [folder];
  let seen = 0;
  while (pending.length > 0 && seen < LINK_SCAN_LIMIT) {
    const dir = pending.pop()!;
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      seen++;
      if (entry.name === 'node_modules' || entry.name === '.git') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) pending.push(path);
      else if (entry.isSymbolicLink()) {
        let target: string;
        try {
          target = realpathSync(path);
        } catch {
          continue; // a dangling link leads nowhere
        }
        if (target !== root && !target.startsWith(`${root}${sep}`)) {
          throw new SiloError(
            'SILO_AGENT_LOAD_FAILED',
            `the agent's folder holds a link that leads out of it (${path} -> ${target}); its worker could read through it (the permission model does not follow links): remove the link or keep the agent elsewhere`,
          );
        }
      }
    }
  }
}
