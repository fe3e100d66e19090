/** Reading runs back from disk: find a run folder, load its artifacts, list recent runs. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SiloError } from '../errors.js';
import type { Change } from '../rollout/diff.js';
import type { ResultRecord, RunRecord, TraceEvent } from '../types.js';
import { readModelLines, type ModelLine } from './conversation.js';

/** Everything a run folder holds. `result` and `diff` are null while the run is still going. */
export interface LoadedRun {
  dir: string;
  run: RunRecord;
  result: ResultRecord | null;
  trace: TraceEvent[];
  diff: Change[] | null;
  /** The lines of models.jsonl: the bodies of the run's model calls (none without the gateway). */
  models?: ModelLine[];
}

/** Finds a run by folder path, by runId, or by a unique prefix of a runId. */
export function resolveRunDir(ref: string, outDir: string): string {
  if (existsSync(join(ref, 'run.json'))) return resolve(ref);
  const runsDir = join(outDir, 'runs');
  const ids = listRunIds(runsDir);
  const matches = ids.filter((id) => id === ref.toUpperCase() || id.startsWith(ref.toUpperCase()));
  if (matches.length === 1) return join(runsDir, matches[0]!);
  if (matches.length > 1) {
    throw new SiloError('SILO_RUN_NOT_FOUND', `${ref} matches ${matches.length} runs; give more of the runId`);
  }
  throw new SiloError('SILO_RUN_NOT_FOUND', `no run ${ref} in ${runsDir}; give a runId (see \`silo ls\`) or a run folder`);
}

/** The runIds in a runs folder, newest first (ULIDs sort by time). */
export function listRunIds(runsDir: string): string[] {
  if (!existsSync(runsDir)) return [];
  return readdirSync(runsDir)
    .filter((name) => existsSync(join(runsDir, name, 'run.json')))
    .sort()
    .reverse();
}

/** Loads a run folder. A missing or unreadable run.json is a SiloError. */
export function loadRun(dir: string): LoadedRun {
  const run = readJson<RunRecord>(join(dir, 'run.json'));
  if (!run) throw new SiloError('SILO_RUN_NOT_FOUND', `${dir} has no readable run.json`);
  return {
    dir,
    run,
    result: readJson<ResultRecord>(join(dir, 'result.json')),
    trace: readTrace(join(dir, 'trace.jsonl')),
    diff: readJson<Change[]>(join(dir, 'state-diff.json')),
    models: readModelLines(join(dir, 'models.jsonl')),
  };
}

/** Reads JSON, or null when the file is missing or unreadable. */
export function readJson<T>(file: string): T | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}

/** Reads trace.jsonl; a torn last line (the host died mid-write) is skipped. */
export function readTrace(file: string): TraceEvent[] {
  if (!existsSync(file)) return [];
  const events: TraceEvent[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      events.push(JSON.parse(line) as TraceEvent);
    } catch {
      // a partial line from a crash
    }
  }
  return events;
}

/** The evals in an out folder, newest first. */
export function listEvalIds(outDir: string): string[] {
  const evalsDir = join(outDir, 'evals');
  if (!existsSync(evalsDir)) return [];
  return readdirSync(evalsDir)
    .filter((name) => statSync(join(evalsDir, name)).isDirectory())
    .sort()
    .reverse();
}
