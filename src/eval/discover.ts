/**
 * Which files an eval loads: files as given, and inside folders (recursively, skipping
 * node_modules and dot-folders) those named `tasks.*`, `*.task.*` or `*.tasks.*` (.js .mjs .ts).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SiloError } from '../errors.js';

const TASK_FILE = /(^tasks|\.tasks?)\.(m?js|ts)$/;

export function discoverTaskFiles(paths: readonly string[]): string[] {
  const files: string[] = [];
  for (const p of paths) {
    const abs = resolve(p);
    if (!existsSync(abs)) throw new SiloError('SILO_TASK_FILE_NOT_FOUND', `no such file or folder: ${abs}`);
    if (statSync(abs).isDirectory()) {
      const found = walk(abs);
      if (found.length === 0) {
        throw new SiloError('SILO_TASK_FILE_NOT_FOUND', `no task files in ${abs}; task files are named tasks.ts, *.task.ts or *.tasks.ts (.js, .mjs too)`);
      }
      files.push(...found);
    } else {
      files.push(abs);
    }
  }
  return [...new Set(files)];
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(path));
    else if (entry.isFile() && TASK_FILE.test(entry.name)) out.push(path);
  }
  return out;
}
