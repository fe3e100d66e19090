/** Reading runs back from disk: find a run folder, load its artifacts, list recent runs. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SiloError } from '../errors.js';
import type { Change } from '../rollout/diff.js';
import type { EvalSummary, ResultRecord, RunRecord, TraceEvent } from '../types.js';
import { ownerGone } from '../owner.js';

/** Everything a run folder holds. `result` and `diff` are null while the run is still going. */
export interface LoadedRun {
  dir: string;
  /** As reported (see reportedRun): a run whose process died before finishing it is crashed. */
  run: RunRecord;
  /** Set when run.json says `running` but the process running it is gone: why the run is crashed. */
  abandoned?: string;
  result: ResultRecord | null;
  trace: TraceEvent[];
  diff: Change[] | null;
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
  const recorded = readJson<RunRecord>(join(dir, 'run.json'));
  if (!recorded) throw new SiloError('SILO_RUN_NOT_FOUND', `${dir} has no readable run.json`);
  const run = reportedRun(recorded);
  return {
    dir,
    run,
    ...(run === recorded ? {} : { abandoned: abandonedBecause(recorded) }),
    result: readJson<ResultRecord>(join(dir, 'result.json')),
    trace: readTrace(join(dir, 'trace.jsonl')),
    diff: readJson<Change[]>(join(dir, 'state-diff.json')),
  };
}

/**
 * run.json as readers report it: a run still `running` whose process is gone (killed, out of
 * memory, its machine rebooted) never finishes, so it is reported as it ended: status `error`,
 * termination `crashed`. Its files stay as the process left them.
 */
export function reportedRun(run: RunRecord): RunRecord {
  if (run.status !== 'running' || !ownerGone(run.owner)) return run;
  return { ...run, status: 'error', termination: 'crashed' };
}

/** Why a run left `running` is crashed, in words. */
export function abandonedBecause(run: Pick<RunRecord, 'owner'>): string {
  const owner = run.owner;
  return `the process running it${owner ? ` (pid ${owner.pid} on ${owner.host})` : ''} ended before it finished`;
}

/** An eval summary's status as readers report it: `crashed` when left `running` by a process that is gone. */
export function reportedEvalStatus(summary: Pick<EvalSummary, 'status' | 'owner'>): EvalSummary['status'] | 'crashed' {
  return summary.status === 'running' && ownerGone(summary.owner) ? 'crashed' : summary.status;
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
