/**
 * TypeScript agents are compiled on the host, once per file version, into one ES module: a
 * narrowed worker can neither start esbuild (a child process) nor write tsx's cache. Relative
 * imports are bundled in; packages stay imports, pinned to the absolute path the host resolved,
 * so the compiled file can live outside the agent's folder. Workers then load plain JavaScript
 * (and no longer pay ~100 ms to register a TypeScript loader).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { SiloError } from '../errors.js';
import { isTypeScript } from '../typescript.js';
import { readableFor } from './permissions.js';

/** A compiled agent: the module to load, and the package folders it imports from. */
export interface CompiledAgent {
  file: string;
  /** Folders of the packages it imports, as resolved (for the worker's read permissions). */
  packages: string[];
}

const compiled = new Map<string, Promise<CompiledAgent>>();

/** Compiles a TypeScript agent (cached by path, size and modification time). */
export function compileAgent(path: string): Promise<CompiledAgent> {
  const stat = statSync(path);
  const key = `${path}\u0000${stat.size}\u0000${stat.mtimeMs}`;
  let job = compiled.get(key);
  if (!job) {
    job = build(path, key);
    compiled.set(key, job);
    job.catch(() => compiled.delete(key));
  }
  return job;
}

async function build(path: string, key: string): Promise<CompiledAgent> {
  const esbuild = await import('esbuild');
  const packages = new Set<string>();
  let result: Awaited<ReturnType<typeof esbuild.build>>;
  try {
    result = await esbuild.build({
      entryPoints: [path],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      target: `node${process.versions.node.split('.')[0]}`,
      logLevel: 'silent',
      plugins: [
        {
          name: 'silo-packages',
          setup(b) {
            // Packages are not bundled: each stays an import of the file the host resolved.
            b.onResolve({ filter: /^[^./]/ }, async (args) => {
              if (args.pluginData === 'silo-inner' || args.kind === 'entry-point') return undefined;
              const found = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'silo-inner' });
              if (found.errors.length > 0 || found.external || !found.path) return undefined;
              packages.add(packageFolder(found.path));
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
    throw new SiloError('SILO_AGENT_LOAD_FAILED', `cannot compile the agent ${path}: ${first?.text ?? (err as Error).message}${where}`);
  }
  const code = result.outputFiles?.[0]?.text ?? '';
  const dir = join(tmpdir(), `silo-agents-${process.getuid?.() ?? 'user'}`);
  mkdirSync(dir, { recursive: true });
  const name = createHash('sha256').update(key).update(code).digest('hex').slice(0, 24);
  const file = join(dir, `${name}.mjs`);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, code);
  renameSync(tmp, file);
  return { file, packages: [...packages] };
}

/** The folder of the package a resolved file belongs to (the folder under node_modules). */
function packageFolder(file: string): string {
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
  /** Read permissions of its worker (see readableFor). */
  readable: string[];
}

/** Compiles a TypeScript agent and works out its worker's read permissions. */
export async function prepareAgent(agentPath: string): Promise<PreparedAgent> {
  if (!isTypeScript(agentPath)) return { modulePath: agentPath, readable: readableFor(agentPath) };
  const { file, packages } = await compileAgent(agentPath);
  return { modulePath: file, readable: readableFor(agentPath, [file, ...packages.map((p) => `${p}${sep}*`)]) };
}
