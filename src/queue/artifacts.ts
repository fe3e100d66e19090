/**
 * A run's artifacts on their way through Redis: a worker packs the files of its run folder into
 * the job result (within a size cap), the coordinator writes them into its own run folder, the
 * same files a local rollout writes. A run too large to send keeps its grade on record as an
 * error that says where the full artifacts stayed; a run lost with its worker is an error too.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { newId } from '../ids.js';
import { SiloError } from '../errors.js';
import { makeFolder } from '../out-dir.js';
import type { ResultRecord, RunRecord, RunResult } from '../types.js';
import { ARTIFACT_FILES, OPTIONAL_ARTIFACT_FILES, type ArtifactFiles } from './job.js';

const RUN_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** UTF-8 bytes of all the files. */
export function artifactBytes(files: ArtifactFiles): number {
  return [...ARTIFACT_FILES, ...OPTIONAL_ARTIFACT_FILES].reduce((sum, name) => sum + Buffer.byteLength(files[name] ?? ''), 0);
}

/**
 * The files of a finished run folder, ready to send. When they exceed `maxBytes`, the folder is
 * moved to `keepDir/runs/<runId>` on this machine, and what is sent is the run and result
 * records with status `error` (code `artifacts_too_large`, saying where the files are), an empty
 * trace and diff. The returned result says the same.
 */
export function packRun(result: RunResult, maxBytes: number, keepDir: string): { result: Omit<RunResult, 'runDir'>; files: ArtifactFiles } {
  const read = (name: string): string => readFileSync(join(result.runDir, name), 'utf8');
  const files = Object.fromEntries(ARTIFACT_FILES.map((name) => [name, read(name)])) as ArtifactFiles;
  for (const name of OPTIONAL_ARTIFACT_FILES) if (existsSync(join(result.runDir, name))) files[name] = read(name);
  const { runDir, ...rest } = result;
  const bytes = artifactBytes(files);
  if (bytes <= maxBytes) {
    rmSync(runDir, { recursive: true, force: true });
    return { result: rest, files };
  }
  const kept = join(keepDir, 'runs', result.runId);
  makeFolder(join(keepDir, 'runs'));
  renameSync(runDir, kept);
  const error = {
    code: 'artifacts_too_large',
    message:
      `the run's artifacts are ${mib(bytes)}, over the ${mib(maxBytes)} a queue worker sends back (--max-result-mb); ` +
      `they are on ${hostname()} in ${kept}` +
      (result.status === 'error' ? '' : ` (the run was graded ${result.status}, score ${result.score ?? '–'})`),
  };
  const run = JSON.parse(files['run.json']) as RunRecord;
  const record = JSON.parse(files['result.json']) as ResultRecord;
  const checks = record.checks.map((c) => ({ name: c.name, pass: c.pass }));
  return {
    result: { ...rest, status: 'error', score: null, checks, output: null, diagnosis: [], error },
    files: {
      'trace.jsonl': '',
      'state-diff.json': '[]\n',
      'result.json': `${JSON.stringify({ ...record, status: 'error', score: null, checks, output: null, diagnosis: [], error }, null, 2)}\n`,
      'run.json': `${JSON.stringify({ ...run, status: 'error' }, null, 2)}\n`,
    },
  };
}

/** Writes a run's files into `<outDir>/runs/<runId>/` (run.json last, each by rename); returns the folder. */
export function writeRunFiles(outDir: string, runId: string, files: ArtifactFiles): string {
  if (!RUN_ID.test(runId)) throw new SiloError('SILO_USAGE', `a queue worker sent a run with a malformed runId (${JSON.stringify(runId).slice(0, 40)}); is it running another version of Silo?`);
  const dir = join(outDir, 'runs', runId);
  makeFolder(dir);
  for (const name of ARTIFACT_FILES) {
    if (typeof files[name] !== 'string') throw new SiloError('SILO_USAGE', `a queue worker sent run ${runId} without its ${name}; is it running another version of Silo?`);
  }
  // run.json last: once it is there, the rest is.
  const optional = OPTIONAL_ARTIFACT_FILES.filter((name) => typeof files[name] === 'string');
  for (const name of [...optional, ...ARTIFACT_FILES]) {
    const tmp = join(dir, `${name}.${process.pid}.tmp`);
    writeFileSync(tmp, files[name]!);
    renameSync(tmp, join(dir, name));
  }
  return dir;
}

/**
 * A run that never came back: its worker died with it (or the job failed inside BullMQ). It has a
 * line in runs.jsonl but no folder: its artifacts were lost with the worker.
 */
export function lostRun(taskId: string, message: string): RunResult {
  return {
    runId: newId(),
    runDir: '',
    taskId,
    status: 'error',
    score: null,
    termination: 'crashed',
    checks: [],
    output: null,
    diagnosis: [],
    error: { code: 'worker_lost', message },
    durationMs: 0,
    toolCalls: 0,
  };
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(bytes < 1024 * 1024 ? 3 : 1)} MiB`;
}
