/**
 * Narrowed agent workers. Node's permission model applies per thread: an agent's worker starts
 * with permission flags of its own, so it may read only Silo's runtime, the agent's folder and
 * the packages it can import, and may not write, start processes or workers, load addons or use
 * the inspector (none of those is granted). Network access and signals are not covered by the
 * model on Node 20; see SECURITY.md.
 */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { PACKAGE_ROOT } from '../paths.js';

/** The flag that turns the model on: `--permission` from Node 22, experimental before. */
export const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';

/** The worker's execArgv: the model on, reads allowed under `readable` only. */
export function permissionArgs(readable: readonly string[]): string[] {
  // Node 20 aborts on a path given twice.
  const unique = [...new Set(readable)].sort();
  return [PERMISSION_FLAG, ...unique.map((path) => `--allow-fs-read=${path}`), '--disable-warning=ExperimentalWarning'];
}

/** A folder and everything under it, as the flag takes it. */
function folder(path: string): string {
  return `${path.endsWith(sep) ? path.slice(0, -1) : path}${sep}*`;
}

/** The path itself and, when it differs, where its symlinks lead (Node reads modules at their real path). */
function both(path: string): string[] {
  try {
    const real = realpathSync(path);
    return real === path ? [path] : [path, real];
  } catch {
    return [path];
  }
}

/** `dir` and each folder above it. */
function ancestors(dir: string): string[] {
  const out: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    out.push(d);
    if (dirname(d) === d) return out;
  }
}

/**
 * What an agent's worker may read: Silo's built runtime and package.json, the agent's own folder,
 * every node_modules folder above the agent and above Silo (the packages either can import), the
 * package.json files above the agent (Node reads them to tell ES modules from CommonJS), and
 * `extra` (files or folders the caller allows, e.g. the compiled form of a TypeScript agent).
 */
export function readableFor(agentPath: string, extra: readonly string[] = []): string[] {
  const paths: string[] = [];
  for (const p of both(join(PACKAGE_ROOT, 'dist'))) paths.push(folder(p));
  paths.push(...both(join(PACKAGE_ROOT, 'package.json')));
  for (const p of both(dirname(resolve(agentPath)))) paths.push(folder(p));
  for (const base of new Set([...ancestors(dirname(resolve(agentPath))), ...ancestors(PACKAGE_ROOT)])) {
    const modules = join(base, 'node_modules');
    if (existsSync(modules)) for (const p of both(modules)) paths.push(folder(p));
    const manifest = join(base, 'package.json');
    if (existsSync(manifest)) paths.push(manifest);
  }
  for (const path of extra) {
    // A folder given as `dir/*` keeps its wildcard on both forms.
    const wildcard = path.endsWith(`${sep}*`);
    for (const p of both(wildcard ? path.slice(0, -2) : path)) paths.push(wildcard ? folder(p) : p);
  }
  return [...new Set(paths)];
}

/**
 * Whether `path` (absolute) is one the list allows, as the permission model reads the list: a
 * `dir/*` entry allows everything under `dir`, any other entry that path exactly.
 */
export function allowsRead(readable: readonly string[], path: string): boolean {
  for (const entry of readable) {
    if (entry.endsWith(`${sep}*`) ? path.startsWith(entry.slice(0, -1)) : path === entry) return true;
  }
  return false;
}

/**
 * The folders an agent must not be able to read (the task file's, the artifacts'), and why;
 * the worker checks them before loading the agent.
 */
export interface Guard {
  path: string;
  what: string;
}
