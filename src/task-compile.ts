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
 *
 * What a single module cannot stand for is left to tsx, as before: code that imports a name it
 * computes (`import(name)`, `require(name)`), `import.meta.resolve`, or a file esbuild refuses
 * (tsx then reports the problem as it always has). compileTaskFile returns null for those.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT, SILO_VERSION } from './paths.js';
import { packageFolder } from './pool/compile.js';
import { privateFolder, stamp, stamps, unchanged, writeAtomically } from './pool/private-folder.js';
import { isTypeScript } from './typescript.js';

/** What a compiled task file's manifest records. */
interface Manifest {
  version: 1;
  key: string;
  file: string;
  /** Every input (and the package.json of every package left an import): path, size, modification time. */
  inputs: [string, number, number][];
}

/** A version of the file at `path`: its path, size and modification time. */
function versionKey(path: string): string {
  const st = statSync(path);
  return `${path}\u0000${st.size}\u0000${st.mtimeMs}`;
}

/** Where the manifest of the task file at `path` is. */
function manifestFile(path: string): string {
  const id = createHash('sha256').update(`tasks\u0000${path}\u0000${SILO_VERSION}\u0000${PACKAGE_ROOT}\u0000${process.version}`).digest('hex').slice(0, 24);
  return join(privateFolder(), `${id}.prepared.json`);
}

/** The module compiled by an earlier command, if none of its inputs changed since. */
function stored(path: string, key: string): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile(path), 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  if (manifest.version !== 1 || manifest.key !== key || stamp(manifest.file) === null || !unchanged(manifest.inputs)) return undefined;
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

/** The package's entry points, built (what its package.json exports). */
const OWN_ENTRIES: Record<string, string> = {
  silo: join(PACKAGE_ROOT, 'dist', 'bundle', 'index.js'),
  'silo/agent': join(PACKAGE_ROOT, 'dist', 'bundle', 'agent.js'),
};

/** What one module cannot stand for: an import of a computed name, or `import.meta.resolve`. */
const NEEDS_A_LOADER = /\bimport\(\s*[^'"`\s)]|\brequire\(\s*[^'"`\s)]|\bimport\.meta\.resolve\b|\brequire\.resolve\b/;

/**
 * The task file at `path` compiled (or as compiled before): the file to import, or null when tsx
 * must load it (see the file comment). Throws only what the private folder throws.
 */
export async function compileTaskFile(path: string): Promise<string | null> {
  const key = versionKey(path);
  const found = stored(path, key);
  if (found !== undefined) return found;
  const esbuild = await import('esbuild');
  const dir = privateFolder();
  const tag = createHash('sha256').update(key).digest('hex').slice(0, 12);
  const META = { url: `__siloTaskUrl_${tag}`, filename: `__siloTaskFilename_${tag}`, dirname: `__siloTaskDirname_${tag}` };
  let refused = false;
  /** Packages left imports (their folders: a new version of one changes its package.json). */
  const packages = new Set<string>();
  let result: Awaited<ReturnType<typeof esbuild.build>>;
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
      conditions: [],
      mainFields: ['main'],
      // require() in the task's code (a CommonJS .ts file, `import x = require()`) loads the pinned files.
      banner: { js: "import { createRequire as __siloCreateRequire } from 'node:module'; const require = __siloCreateRequire(import.meta.url);" },
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
            // Each module of the task's own gets its own file's values, in front of its first line
            // (after a shebang), so no line moves.
            b.onLoad({ filter: /\.[cm]?[jt]sx?$/, namespace: 'file' }, (args) => {
              const loader = LOADERS[extname(args.path)];
              if (!loader) return undefined;
              const source = readFileSync(args.path, 'utf8');
              if (NEEDS_A_LOADER.test(source)) refused = true;
              const meta = `const ${META.url} = ${JSON.stringify(pathToFileURL(args.path).href)}, ${META.filename} = ${JSON.stringify(args.path)}, ${META.dirname} = ${JSON.stringify(dirname(args.path))};`;
              const shebang = source.startsWith('#!') ? source.slice(0, source.indexOf('\n') + 1) : '';
              return { contents: `${shebang}${meta}${source.slice(shebang.length)}`, loader };
            });
            // A bare name stays an import of the file Node would load for it from the importer's
            // folder, unless that file is TypeScript (Node could not load it): then it is compiled in.
            b.onResolve({ filter: /^[^./]/ }, async (args) => {
              if (args.pluginData === 'silo-inner' || args.kind === 'entry-point') return undefined;
              const resolved = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'silo-inner' });
              if (resolved.errors.length > 0 || resolved.external || !resolved.path) return undefined;
              // Silo itself, found in its own sources (tsconfig paths, as in Silo's repository):
              // the built entry this command runs, as Node would resolve the package's name.
              const own = OWN_ENTRIES[args.path];
              const target = own !== undefined && resolved.path.startsWith(`${PACKAGE_ROOT}${sep}`) ? own : resolved.path;
              if (isTypeScript(target)) return undefined;
              packages.add(target.includes(`${sep}node_modules${sep}`) ? packageFolder(target) : dirname(target));
              // (an import takes a URL: a path may hold a '#' or a '%'; require() takes the path)
              return { path: args.kind.startsWith('require') ? target : pathToFileURL(target).href, external: true };
            });
          },
        },
      ],
    });
  } catch {
    return null; // tsx reports what esbuild refused, as it always has
  }
  if (refused) return null;
  // A module left an import (a package, a relative file in node_modules) is pinned by its absolute path.
  const code = result.outputFiles?.find((o) => !o.path.endsWith('.map'))?.text ?? '';
  const name = createHash('sha256').update(key).update(code).digest('hex').slice(0, 24);
  const file = join(dir, `${name}.tasks.mjs`);
  const inputs = new Set(Object.keys(result.metafile?.inputs ?? {}).map((input) => resolve(input)));
  inputs.add(path);
  for (const folder of packages) inputs.add(join(folder, 'package.json'));
  // The settings esbuild read: a changed tsconfig.json (or package `type`) compiles again.
  for (let at = dirname(path); ; at = dirname(at)) {
    inputs.add(join(at, 'tsconfig.json'));
    if (stamp(join(at, 'package.json')) !== null) {
      inputs.add(join(at, 'package.json'));
      break;
    }
    if (dirname(at) === at) break;
  }
  try {
    writeAtomically(file, code);
    // (a tsconfig.json that is not there is not recorded: one that appears later is not noticed)
    const manifest: Manifest = { version: 1, key, file, inputs: stamps(inputs) };
    writeAtomically(manifestFile(path), JSON.stringify(manifest));
  } catch {
    // not kept: compiled again next time (the module, if written, is still loaded)
  }
  return stamp(file) === null ? null : file;
}
