/**
 * `silo init`: a working example in the user's project (a world, three tasks, a scripted agent that
 * passes them and an LLM agent), copied from the package's templates. Nothing is overwritten.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { SiloError } from './errors.js';
import { makeFolder, outDirError } from './out-dir.js';
import { PACKAGE_ROOT } from './paths.js';

/** The files `silo init` writes, relative to its folder, from templates/init/ of the package. */
export const INIT_FILES = ['evals/environment.ts', 'evals/tasks.ts', 'evals/agents/solver.ts', 'evals/agents/llm.ts'] as const;

/** What initProject wrote. */
export interface InitResult {
  /** The folder, absolute. */
  dir: string;
  /** The files written, absolute, in INIT_FILES order. */
  files: string[];
}

/**
 * Writes the example into `dir` (made if missing). Refuses, writing nothing, when any of the files
 * exists already.
 */
export function initProject(dir = '.'): InitResult {
  const root = resolve(dir);
  const targets = INIT_FILES.map((file) => join(root, file));
  const existing = targets.filter((file) => existsSync(file));
  if (existing.length > 0) {
    const names = existing.map((file) => relative(process.cwd(), file) || file).join(', ');
    throw new SiloError('SILO_USAGE', `silo init writes nothing over existing files, and ${names} ${existing.length === 1 ? 'exists' : 'exist'}; move ${existing.length === 1 ? 'it' : 'them'} away or run silo init in another folder`);
  }
  for (const [i, file] of INIT_FILES.entries()) {
    const source = join(PACKAGE_ROOT, 'templates', 'init', file.replace(/^evals\//, ''));
    try {
      makeFolder(join(targets[i]!, '..'));
    } catch (err) {
      throw outDirError(err, root, 'silo init') ?? err;
    }
    // `wx`: a file that appeared since the check above is not overwritten either.
    writeFileSync(targets[i]!, readFileSync(source, 'utf8'), { flag: 'wx' });
  }
  return { dir: root, files: targets };
}
