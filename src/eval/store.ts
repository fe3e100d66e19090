/**
 * An eval's folder: `summary.json` (rewritten atomically as the eval goes) and `runs.jsonl` (one
 * line per run that ended, appended), which is what `--resume` and the reporters read back.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from '../ids.js';
import { SiloError } from '../errors.js';
import { AppendFile } from '../rollout/append-file.js';
import { writeJsonAtomic } from '../rollout/artifacts.js';
import { makeFolder } from '../out-dir.js';
import type { EvalRunLine, EvalSummary } from '../types.js';

/** Checks an evalId given by a user (it names a folder): letters, digits, `.`, `_`, `-`. */
export function checkEvalId(id: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(id)) {
    throw new SiloError('SILO_USAGE', `--eval-id takes letters, digits, '.', '_' and '-' (at most 100, starting with a letter or digit); got '${id}'`);
  }
  return id;
}

/** A new eval's id: the one asked for (checked, and not taken), or a fresh ULID. */
export function newEvalId(outDir: string, wanted: string | undefined): string {
  if (wanted === undefined) return newId();
  checkEvalId(wanted);
  if (existsSync(new EvalStore(outDir, wanted).summaryFile)) {
    throw new SiloError('SILO_USAGE', `an eval ${wanted} already exists in ${outDir}; continue it with --resume ${wanted}, or choose another --eval-id`);
  }
  return wanted;
}

export class EvalStore {
  readonly dir: string;
  #lines: AppendFile | undefined;

  constructor(outDir: string, evalId: string) {
    this.dir = join(outDir, 'evals', evalId);
  }

  get summaryFile(): string {
    return join(this.dir, 'summary.json');
  }

  get runsFile(): string {
    return join(this.dir, 'runs.jsonl');
  }

  open(): Promise<void> {
    makeFolder(this.dir);
    this.#lines = new AppendFile(this.runsFile);
    return Promise.resolve();
  }

  append(line: EvalRunLine): void {
    this.#lines?.append(`${JSON.stringify(line)}\n`);
  }

  writeSummary(summary: EvalSummary): Promise<void> {
    return writeJsonAtomic(this.summaryFile, summary);
  }

  async close(): Promise<void> {
    const lines = this.#lines;
    this.#lines = undefined;
    await lines?.close();
  }

  /** Replaces runs.jsonl with `lines` at once (write, then rename), as `regrade` does. */
  rewriteLines(lines: readonly EvalRunLine[]): Promise<void> {
    const tmp = `${this.runsFile}.${process.pid}.tmp`;
    writeFileSync(tmp, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    renameSync(tmp, this.runsFile);
    return Promise.resolve();
  }

  /** The summary of an existing eval, for `--resume`. */
  readSummary(): EvalSummary {
    if (!existsSync(this.summaryFile)) {
      throw new SiloError('SILO_USAGE', `no eval at ${this.dir}; give the evalId of an earlier eval (see \`silo ls\`)`);
    }
    try {
      return JSON.parse(readFileSync(this.summaryFile, 'utf8')) as EvalSummary;
    } catch {
      throw new SiloError('SILO_USAGE', `${this.summaryFile} is not readable JSON; that eval cannot be resumed`);
    }
  }

  /** Every run line written so far (a torn last line from a crash is skipped). */
  *readLines(): Generator<EvalRunLine> {
    if (!existsSync(this.runsFile)) return;
    for (const text of readFileSync(this.runsFile, 'utf8').split('\n')) {
      if (text.trim() === '') continue;
      try {
        yield JSON.parse(text) as EvalRunLine;
      } catch {
        // a partial line
      }
    }
  }
}
