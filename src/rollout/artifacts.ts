/**
 * Step 9: the run folder. JSON files are written to a temporary name and renamed, so a crash
 * never leaves a torn file; run.json exists from the start with status "running".
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResultRecord, RunRecord } from '../types.js';
import type { Change } from './diff.js';
import { toJsonLine } from './trace.js';

let tmpCounter = 0;

/** Writes `value` as JSON to `file` atomically (write, then rename). */
export async function writeJsonAtomic(file: string, value: unknown, pretty = true): Promise<void> {
  const tmp = `${file}.${process.pid}.${tmpCounter++}.tmp`;
  await writeFile(tmp, `${toJsonLine(value, pretty ? 2 : undefined)}\n`);
  await rename(tmp, file);
}

/** The files of one run folder. */
export class RunArtifacts {
  readonly dir: string;
  constructor(outDir: string, runId: string) {
    this.dir = join(outDir, 'runs', runId);
  }
  get traceFile(): string {
    return join(this.dir, 'trace.jsonl');
  }
  async create(record: RunRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await this.writeRun(record);
  }
  writeRun(record: RunRecord): Promise<void> {
    return writeJsonAtomic(join(this.dir, 'run.json'), record);
  }
  writeResult(result: ResultRecord): Promise<void> {
    return writeJsonAtomic(join(this.dir, 'result.json'), result);
  }
  writeDiff(changes: readonly Change[]): Promise<void> {
    // Diffs of big worlds can be large: compact JSON.
    return writeJsonAtomic(join(this.dir, 'state-diff.json'), changes, false);
  }
}
