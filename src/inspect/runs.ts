/** Reading runs back from disk: find a run folder, load its artifacts, list recent runs. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { SiloError } from '../errors.js';
import type { Change } from '../rollout/diff.js';
import type { EvalSummary, ResultRecord, RunRecord, TraceEvent } from '../types.js';
import { ownerGone } from '../owner.js';
import { readModelLines, type ModelLine } from './conversation.js';

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
  /** The lines of models.jsonl: the bodies of the run's model calls (none without the gateway). */
  models?: ModelLine[];
}

/** Finds a run by folder path, by runId, or by a unique prefix or suffix of a runId. */
export function resolveRunDir(ref: string, outDir: string): string {
  if (existsSync(join(ref, 'run.json'))) return resolve(ref);
  const runsDir = join(outDir, 'runs');
  const matches = matchIds(listRunIds(runsDir), ref);
  if (matches.length === 1) return join(runsDir, matches[0]!);
  if (matches.length > 1) {
    throw new SiloError('SILO_RUN_NOT_FOUND', `${ref} matches ${matches.length} runs (${matches.slice(0, 3).join(', ')}${matches.length > 3 ? ', ...' : ''}); give more of the runId`);
  }
  throw new SiloError('SILO_RUN_NOT_FOUND', `no run ${ref} in ${runsDir}; give a runId, a unique prefix or suffix of one (see \`silo ls\`), or a run folder`);
}

/** Finds an eval's id in an out folder by its id, or a unique prefix or suffix of one. */
export function resolveEvalId(ref: string, outDir: string): string {
  const evalsDir = join(outDir, 'evals');
  const ids = listEvalIds(outDir).filter((id) => existsSync(join(evalsDir, id, 'summary.json')));
  const matches = matchIds(ids, ref);
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new SiloError('SILO_USAGE', `${ref} matches ${matches.length} evals (${matches.slice(0, 3).join(', ')}${matches.length > 3 ? ', ...' : ''}); give more of the evalId`);
  }
  throw new SiloError('SILO_USAGE', `${notAnEval(ref, outDir) ?? `no eval ${ref} in ${evalsDir}`}; give an evalId, a unique prefix or suffix of one (see \`silo ls\`), or an eval folder`);
}

/**
 * What `ref` names when it is no eval but a run (its folder, its id, a prefix or suffix of it):
 * `silo compare <evalId> <runId>` is told the id is a run's, and of which eval.
 */
function notAnEval(ref: string, outDir: string): string | undefined {
  const runsDir = join(outDir, 'runs');
  const folder = existsSync(join(ref, 'run.json'));
  const matches = folder ? [] : matchIds(listRunIds(runsDir), ref);
  if (!folder && matches.length === 0) return undefined;
  if (matches.length > 1) return `${ref} matches ${matches.length} runs and no eval`;
  const run = readJson<Pick<RunRecord, 'runId' | 'evalId'>>(join(folder ? ref : join(runsDir, matches[0]!), 'run.json'));
  const of = run?.evalId === undefined ? '' : ` of eval ${run.evalId}`;
  return `${ref} is ${folder ? 'the folder of ' : ''}a run${of}, not an eval`;
}

/**
 * The ids `ref` names: the one equal to it, else those it begins or ends (case-insensitive: runIds
 * are ULIDs, and the report shows their last 10 characters).
 */
export function matchIds(ids: readonly string[], ref: string): string[] {
  const wanted = ref.toUpperCase();
  if (wanted === '') return [];
  const exact = ids.filter((id) => id.toUpperCase() === wanted);
  if (exact.length > 0) return exact.slice(0, 1);
  return ids.filter((id) => id.toUpperCase().startsWith(wanted) || id.toUpperCase().endsWith(wanted));
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
    models: readModelLines(join(dir, 'models.jsonl')),
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

/** An eval summary's status as readers report it: `interrupted` when left `running` by a process that is gone. */
export function reportedEvalStatus(summary: Pick<EvalSummary, 'status' | 'owner'>): EvalSummary['status'] | 'interrupted' {
  return summary.status === 'running' && ownerGone(summary.owner) ? 'interrupted' : summary.status;
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

/** The evals in an out folder, newest first (by the start time their summary records). */
export function listEvalIds(outDir: string): string[] {
  const evalsDir = join(outDir, 'evals');
  if (!existsSync(evalsDir)) return [];
  const started = (id: string): number => {
    const summary = readJson<{ startedAt?: unknown }>(join(evalsDir, id, 'summary.json'));
    const at = typeof summary?.startedAt === 'string' ? Date.parse(summary.startedAt) : Number.NaN;
    return Number.isNaN(at) ? 0 : at;
  };
  // An --eval-id such as ci-42 does not sort by time as a ULID does: the summary says when.
  return readdirSync(evalsDir)
    .filter((name) => statSync(join(evalsDir, name)).isDirectory())
    .map((id) => ({ id, at: started(id) }))
    .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((e) => e.id);
}

/** Finds an eval by folder, by evalId, or by a unique prefix or suffix of one; none given means the latest. */
export function resolveEval(ref: string | undefined, outDir: string): { outDir: string; evalId: string } {
  if (ref !== undefined && existsSync(join(ref, 'summary.json')) && statSync(ref).isDirectory()) {
    // An eval folder: <out>/evals/<evalId>
    const dir = resolve(ref);
    return { outDir: dirname(dirname(dir)), evalId: basename(dir) };
  }
  if (ref === undefined) {
    const latest = listEvalIds(outDir).find((id) => existsSync(join(outDir, 'evals', id, 'summary.json')));
    if (!latest) throw new SiloError('SILO_USAGE', `no evals in ${join(outDir, 'evals')}; run one with \`silo eval <tasks> --agent <file>\``);
    return { outDir, evalId: latest };
  }
  return { outDir, evalId: resolveEvalId(ref, outDir) };
}
