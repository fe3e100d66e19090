/**
 * TypeScript task files, compiled once per version into one ES module that the command imports.
 *
 * Loading a `.ts` task file through tsx costs ~290 ms of every cold command on this machine: Node
 * 20 runs tsx's module hooks on a thread of their own (~65 ms to start), each module resolved and
 * loaded is a synchronous round trip to it (~140 ms for a task file that imports 'silo'), and
 * esbuild's service transforms each file. Compiled here instead, the task file and the files it
 * imports by relative path (or that a bare name leads to in TypeScript: tsconfig paths, a linked
 * workspace package) become one module in the private folder, with its source map inline; a later
 * command finds it by the file's path, size and modification time and imports it (~a few ms),
 * once it has checked that no input changed.
 *
 * The module still reads as the task file's own:
 * - Packages stay imports, pinned to the files the task file's folder resolves them to (the
 *   compiled module lives elsewhere). So `import 'silo'` is the command's own copy of Silo wherever
 *   Node would have given it, and a package is the one instance the rest of the process shares.
 * - `import.meta.url`, `.filename`, `.dirname` (and `__dirname`, `__filename` in CommonJS code) of
 *   each module name that module's source file: data read next to a task file is found.
 * - Stack traces (a verifier that throws, a file that fails to load) name the TypeScript files and
 *   lines, through Node's source maps, as tsx's did.
 * - Each load is a fresh instance of the module (as tsx's namespaces were).
 * - In CommonJS code (a `.ts` file of a project without `"type": "module"`, as tsx compiles it),
 *   an import of a CommonJS package is a require: its `require` export, `exports.default` for a
 *   default import of one marked `__esModule`, and exports made at run time.
 *
 * What a single module cannot stand for is left to tsx, as before: code that imports or requires
 * anything but a quoted name, `import.meta.resolve` or `require.resolve`, a relative import for
 * its side effects only (`import './setup'`: in one module every package loads before the task's
 * own code runs), or a file esbuild refuses (tsx then reports the problem as it always has).
 * compileTaskFile returns null for those.
 *
 * The module is used again while every input is as it was when the compile read it: each file
 * bundled in, the package.json of each package imported (through the node_modules link that leads
 * to it) and the nearer node_modules folders that had no copy of it, the package.json and
 * tsconfig.json files from each file's folder up to the root (with the tsconfig files they
 * extend), and for each relative import the names tried before the one found (a `.ts` added next
 * to the `.js` an import without an extension found is a change). Each is stamped before it is
 * read (size, modification time, inode, change time; ABSENT for what was not there), so a file
 * edited during a compile is compiled again by the next command. Not noticed: a file that appears
 * ahead of what a tsconfig `paths` alias or `baseUrl` found (an earlier target of the alias, a
 * file of the project's shadowing a package).
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT, SILO_VERSION } from './paths.js';
import { packageFolder } from './pool/compile.js';
import { ABSENT, privateSubfolder, stamp, unchanged, writeAtomically, type Stamp } from './pool/private-folder.js';
import { isTypeScript } from './typescript.js';

/** What a compiled task file's manifest records. */
interface Manifest {
  version: number;
  key: string;
  /** The compiled module, or null: the file loads through tsx (see NEEDS_A_LOADER). */
  file: string | null;
  /** Every input (and the package.json of every package left an import), stamped before it was read. */
  inputs: [string, ...Stamp][];
}

/** A version of the file at `path`: its path, size and modification time. */
function versionKey(path: string): string {
  const st = statSync(path);
  return `${path}\u0000${st.size}\u0000${st.mtimeMs}`;
}

/** Where the manifest of the task file at `path` is. */
function manifestFile(path: string): string {
  const id = createHash('sha256').update(`tasks\u0000${path}\u0000${SILO_VERSION}\u0000${PACKAGE_ROOT}\u0000${process.version}`).digest('hex').slice(0, 24);
  return join(privateSubfolder('tasks'), `${id}.prepared.json`);
}

/**
 * What an earlier command made of the task file, if none of its inputs changed since: the module
 * to import, or null where it was left to tsx (declined: compiling again would decline again).
 */
function stored(path: string, key: string): string | null | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile(path), 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  if (manifest.version !== COMPILER || manifest.key !== key || (manifest.file !== null && stamp(manifest.file) === null) || !unchanged(manifest.inputs)) return undefined;
  if (manifest.file === null) return null;
  // In use: kept young (files of the private folder not written for a month are removed).
  try {
    const now = new Date();
    utimesSync(manifest.file, now, now);
  } catch {
    return undefined; // removed just now: compiled again
  }
  return manifest.file;
}

/** esbuild's loader for a module of the task file's own, by extension. */
const LOADERS: Record<string, 'ts' | 'tsx' | 'js' | 'jsx'> = { '.ts': 'ts', '.mts': 'ts', '.cts': 'ts', '.tsx': 'tsx', '.js': 'js', '.mjs': 'js', '.cjs': 'js', '.jsx': 'jsx' };

/** What a relative name without an extension is tried with, in order (TypeScript's: .ts before .tsx, as tsx takes it). */
const EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs', '.json'];

/** The package's entry points, built (what its package.json exports). */
const OWN_ENTRIES: Record<string, string> = {
  silo: join(PACKAGE_ROOT, 'dist', 'bundle', 'index.js'),
  'silo/agent': join(PACKAGE_ROOT, 'dist', 'bundle', 'agent.js'),
};

/**
 * A relative module imported for its side effects only (`import './setup'`): a module that sets
 * things up for the packages imported after it. In one module, every package is imported before
 * any of the task's own code runs, so such a file loads through tsx, in Node's order.
 */
const SETS_UP = /^\s*import\s*['"]\.{1,2}\//m;

/**
 * What one module cannot stand for: a dynamic import or a require of anything but a quoted name
 * (esbuild would bundle a template's matches as they are now, or leave a computed name to be
 * resolved from the private folder), `import.meta.resolve`, `require.resolve`.
 */
const NEEDS_A_LOADER = /\bimport\s*\((?!\s*(['"])[^'"`\n]*\1\s*[,)])|\brequire\s*\((?!\s*(['"])[^'"`\n]*\2\s*\))|\bimport\.meta\.resolve\b|\brequire\.resolve\b/;

/** Package scopes' module type, by folder: true where a `.js`/`.ts` file is CommonJS. */
const commonJsScopes = new Map<string, boolean>();

/** Whether Node (and tsx) would load this file as CommonJS: by its extension, else its package's `type`. */
function isCommonJsFile(file: string): boolean {
  if (/\.c[jt]s$/.test(file)) return true;
  if (/\.m[jt]s$/.test(file)) return false;
  const dir = dirname(file);
  let cached = commonJsScopes.get(dir);
  if (cached === undefined) {
    cached = true;
    for (let at = dir; ; at = dirname(at)) {
      try {
        cached = (JSON.parse(readFileSync(join(at, 'package.json'), 'utf8')) as { type?: unknown }).type !== 'module';
        break;
      } catch {
        // no package.json here (or not JSON): the folder above
      }
      if (dirname(at) === at) break;
    }
    commonJsScopes.set(dir, cached);
  }
  return cached;
}

/** The tsconfig.json (or jsconfig.json) files esbuild reads for a file in `dir`, with those they extend. */
function tsconfigsFor(dir: string, into: Set<string>): void {
  // (esbuild looks for the nearest tsconfig.json up to the root, whatever package.json it passes;
  // a package.json says the folder's module `type` and its `imports`: both change the compile)
  for (let at = dir; ; at = dirname(at)) {
    for (const name of ['tsconfig.json', 'jsconfig.json']) addTsconfig(join(at, name), into);
    into.add(join(at, 'package.json'));
    if (dirname(at) === at) return;
  }
}

function addTsconfig(file: string, into: Set<string>): void {
  if (into.has(file)) return;
  into.add(file); // (recorded whether it is there or not: one that appears is a change)
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return;
  }
  // JSON with comments and trailing commas, as tsconfig.json is written: only `extends` is wanted.
  const extended = /"extends"\s*:\s*(\[[^\]]*\]|"[^"]*")/.exec(text)?.[1];
  if (extended === undefined) return;
  for (const [, name] of extended.matchAll(/"([^"]+)"/g)) {
    const candidates = name!.startsWith('.') || name!.startsWith('/') ? [resolve(dirname(file), name!)] : nodeModulesCandidates(dirname(file), name!);
    for (const candidate of candidates) {
      addTsconfig(candidate.endsWith('.json') ? candidate : `${candidate}.json`, into);
      if (!candidate.endsWith('.json')) addTsconfig(join(candidate, 'tsconfig.json'), into);
    }
  }
}

/** Where a package's file could be, from `dir` up (the first that exists is the one: the others, nearer, must stay absent). */
function nodeModulesCandidates(dir: string, specifier: string): string[] {
  const out: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    const candidate = join(at, 'node_modules', specifier);
    out.push(candidate);
    if (stamp(candidate) !== null || stamp(`${candidate}.json`) !== null || dirname(at) === at) return out;
  }
}

/** A package's name from a bare specifier (`@scope/name/sub` → `@scope/name`). */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** A version of this module's logic: a change to what it writes compiles every task file again. */
const COMPILER = 4;

/**
 * The export conditions Node resolves packages with here, besides `import`/`require`, `node` and
 * `default`: `module-sync` where Node can require ES modules (20.19 on), and the user's own
 * (`--conditions`/`-C`, on the command line or in NODE_OPTIONS: a monorepo's "source" condition, say).
 */
function nodeConditions(): string[] {
  const out: string[] = [];
  if ((process.features as { require_module?: boolean }).require_module === true) out.push('module-sync');
  const args = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const inline = /^(?:--conditions|-C)=(.+)$/.exec(arg)?.[1];
    if (inline !== undefined) out.push(inline);
    else if ((arg === '--conditions' || arg === '-C') && args[i + 1] !== undefined) out.push(args[++i]!);
  }
  return [...new Set(out)];
}

/**
 * The task file at `path` compiled (or as compiled before): the file to import, or null when tsx
 * must load it (see the file comment). Throws only what the private folder throws.
 */
export async function compileTaskFile(path: string): Promise<string | null> {
  const conditions = nodeConditions();
  const key = `${versionKey(path)}\u0000${conditions.join(',')}`;
  const found = stored(path, key);
  if (found !== undefined) return found;
  // What the compile reads, each stamped BEFORE it is read: a file edited while the compile runs
  // then looks changed to the next command, which compiles it again.
  const inputs = new Map<string, [string, ...Stamp]>();
  const note = (file: string): void => {
    if (inputs.has(file)) return;
    inputs.set(file, [file, ...(stamp(file) ?? ABSENT)]);
  };
  note(path);
  const configs = new Set<string>();
  const configDirs = new Set<string>();
  const configsFor = (dir: string): void => {
    if (configDirs.has(dir)) return;
    configDirs.add(dir);
    tsconfigsFor(dir, configs);
  };
  configsFor(dirname(path));
  for (const file of configs) note(file);
  const esbuild = await import('esbuild');
  const dir = privateSubfolder('tasks');
  const tag = createHash('sha256').update(key).digest('hex').slice(0, 12);
  const META = { url: `__siloTaskUrl_${tag}`, filename: `__siloTaskFilename_${tag}`, dirname: `__siloTaskDirname_${tag}` };
  let declined = false;
  let result: Awaited<ReturnType<typeof esbuild.build>> | undefined;
  try {
    result = await esbuild.build({
      entryPoints: [path],
      bundle: true,
      write: false,
      // Not written there: what the source map's paths are relative to.
      outfile: join(dir, 'tasks.mjs'),
      sourcemap: 'inline',
      sourcesContent: false,
      format: 'esm',
      platform: 'node',
      target: `node${process.versions.node.split('.')[0]}`,
      // Node's own resolution: no bundler-only `module` condition or field.
      conditions,
      // (TypeScript's order for a name without an extension, as tsx takes it: .ts before .tsx)
      resolveExtensions: EXTENSIONS,
      mainFields: ['main'],
      // require() in the task's code (a CommonJS .ts file, `import x = require()`) loads the pinned
      // files; so do the imports of packages by CommonJS code (silo-require, below).
      banner: { js: "import { createRequire as __siloCreateRequire } from 'node:module'; const require = __siloCreateRequire(import.meta.url), __siloRequire = require;" },
      define: {
        'import.meta.url': META.url,
        'import.meta.filename': META.filename,
        'import.meta.dirname': META.dirname,
        __filename: META.filename,
        __dirname: META.dirname,
      },
      logLevel: 'silent',
      metafile: true,
      plugins: [
        {
          name: 'silo-task-files',
          setup(b) {
            // Every file bundled in (a module, JSON) is stamped before esbuild reads it, with the
            // tsconfig files that apply to it.
            b.onLoad({ filter: /.*/, namespace: 'file' }, (args) => {
              note(args.path);
              const before = configs.size;
              configsFor(dirname(args.path));
              if (configs.size !== before) for (const file of configs) note(file);
              return undefined;
            });
            // Each module of the task's own gets its own file's values, in front of its first line
            // (after a shebang), so no line moves.
            b.onLoad({ filter: /\.[cm]?[jt]sx?$/, namespace: 'file' }, (args) => {
              const loader = LOADERS[extname(args.path)];
              if (!loader) return undefined;
              const source = readFileSync(args.path, 'utf8');
              if (NEEDS_A_LOADER.test(source) || SETS_UP.test(source)) declined = true;
              const meta = `const ${META.url} = ${JSON.stringify(pathToFileURL(args.path).href)}, ${META.filename} = ${JSON.stringify(args.path)}, ${META.dirname} = ${JSON.stringify(dirname(args.path))};`;
              const shebang = source.startsWith('#!') ? source.slice(0, source.indexOf('\n') + 1) : '';
              return { contents: `${shebang}${meta}${source.slice(shebang.length)}`, loader };
            });
            // Silo's own entry, required: the namespace the command's import of it has.
            b.onLoad({ filter: /.*/, namespace: 'silo-own' }, (args) => ({ contents: `export * from ${JSON.stringify(pathToFileURL(args.path).href)};`, loader: 'js' }));
            b.onResolve({ filter: /^file:/ }, (args) => ({ path: args.path, external: true }));
            // A package CommonJS code imports, as CommonJS code gets it: required.
            b.onLoad({ filter: /.*/, namespace: 'silo-require' }, (args) => ({ contents: `module.exports = __siloRequire(${JSON.stringify(args.path)});`, loader: 'js' }));
            // A bare name stays an import of the file Node would load for it from the importer's
            // folder, unless that file is TypeScript (Node could not load it) or JSON (an import of
            // it needs an attribute esbuild does not keep): then it is compiled in.
            // A relative import: a `.js` name stands for the TypeScript file next to it first (as
            // tsx reads it); the path as written (through any link) is an input too, so a link
            // pointed elsewhere, or a .ts file added next to a .js one, is a change.
            b.onResolve({ filter: /^\.\.?\// }, async (args) => {
              if (args.pluginData === 'silo-inner' || args.namespace !== 'file') return undefined;
              const written = resolve(args.resolveDir, args.path);
              const js = /\.(m|c)?jsx?$/.exec(written);
              if (js) {
                const stem = written.slice(0, -js[0].length);
                const sources = js[1] === 'm' ? ['.mts'] : js[1] === 'c' ? ['.cts'] : ['.ts', '.tsx'];
                for (const ext of sources) {
                  note(stem + ext);
                  if (stamp(stem + ext) !== null) return { path: stem + ext };
                }
              }
              const resolved = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: 'silo-inner' });
              if (resolved.errors.length > 0 || !resolved.path) return undefined;
              note(written);
              if (!js) {
                // The names found before the one taken, recorded ABSENT: one that appears (a .ts
                // next to a .js, an index.ts next to an index.js, lib.ts next to lib/) is a change.
                const taken = resolved.path;
                const ahead = (stem: string): void => {
                  for (const ext of EXTENSIONS) {
                    if (stem + ext === taken) return;
                    note(stem + ext);
                  }
                };
                ahead(written);
                if (taken.startsWith(`${written}${sep}`)) {
                  note(join(written, 'package.json'));
                  ahead(join(written, 'index'));
                }
                note(written + extname(taken));
              }
              return { path: resolved.path, external: resolved.external };
            });
            b.onResolve({ filter: /^[^./]/ }, async (args) => {
              if (args.pluginData === 'silo-inner' || args.kind === 'entry-point') return undefined;
              // CommonJS code (a .ts file of a project without "type": "module") requires what it imports, as tsx compiles it.
              let required = args.kind === 'require-call' || (args.kind === 'import-statement' && isCommonJsFile(args.importer));
              let resolved = await b.resolve(args.path, { kind: required ? 'require-call' : args.kind, resolveDir: args.resolveDir, pluginData: 'silo-inner' });
              if (resolved.errors.length > 0 && required && args.kind !== 'require-call') {
                // (a package that exports only to `import`: imported, never bundled as a second copy)
                required = false;
                resolved = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'silo-inner' });
              }
              // Not found (an optional package, say, required in a try): left to tsx, which finds
              // it from the file's folder once it is installed.
              if (resolved.errors.length > 0 || !resolved.path) {
                declined = true;
                return undefined;
              }
              if (resolved.external) return undefined; // one of Node's own modules
              // The package's manifest, through the link a package manager may have made (a link
              // pointed elsewhere is another package.json) and where it leads, and the nearer
              // folders where a copy of it installed later would be found first.
              for (const candidate of nodeModulesCandidates(args.resolveDir, packageName(args.path))) {
                if (stamp(candidate) === null) note(candidate);
                else note(join(candidate, 'package.json'));
              }
              if (resolved.path.includes(`${sep}node_modules${sep}`)) note(join(packageFolder(resolved.path), 'package.json'));
              // Silo itself, found in its own sources (tsconfig paths, as in Silo's repository):
              // the built entry this command runs, as Node would resolve the package's name.
              const own = OWN_ENTRIES[args.path];
              const target = own !== undefined && resolved.path.startsWith(`${PACKAGE_ROOT}${sep}`) ? own : resolved.path;
              if (target === resolved.path && (isTypeScript(target) || target.endsWith('.json'))) return { path: target };
              // (Silo required: its module namespace, imported; Node 20 before 20.19 cannot require an ES module)
              if (args.kind === 'require-call' && target === own) return { path: own, namespace: 'silo-own' };
              if (args.kind === 'require-call') return { path: target, external: true };
              // (an ES module package stays an import: Node 20 before 20.19 cannot require it; one with
              // side effects then runs before the CommonJS packages imported ahead of it)
              if (required && isCommonJsFile(target)) return { path: target, namespace: 'silo-require' };
              // (an import takes a URL: a path may hold a '#' or a '%')
              return { path: pathToFileURL(target).href, external: true };
            });
          },
        },
      ],
    });
  } catch {
    declined = true; // tsx reports what esbuild refused, as it always has
  }
  if (declined || result === undefined) {
    // Remembered, so that later commands go to tsx at once (until an input changes).
    try {
      writeAtomically(manifestFile(path), JSON.stringify({ version: COMPILER, key, file: null, inputs: [...inputs.values()] } satisfies Manifest));
    } catch {
      // decided again next time
    }
    return null;
  }
  const code = result.outputFiles?.find((o) => !o.path.endsWith('.map'))?.text ?? '';
  const name = createHash('sha256').update(key).update(code).digest('hex').slice(0, 24);
  const file = join(dir, `${name}.tasks.mjs`);
  // (every input esbuild read went through the onLoad above; metafile's list is the same files)
  for (const input of Object.keys(result.metafile?.inputs ?? {})) if (!input.includes(':')) note(resolve(input));
  try {
    writeAtomically(file, code);
    // (a file that was missing, a tsconfig.json say, is recorded ABSENT: one that appears is a change)
    const manifest: Manifest = { version: COMPILER, key, file, inputs: [...inputs.values()] };
    writeAtomically(manifestFile(path), JSON.stringify(manifest));
  } catch {
    // not kept: compiled again next time (the module, if written, is still loaded)
  }
  return stamp(file) === null ? null : file;
}
