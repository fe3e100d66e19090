/**
 * What the HTML report embeds, read from an eval's folder: the summary, a small row for every
 * run (task, trial, status, score, duration, termination, diagnosis codes), and the full detail
 * of as many runs as the caps allow, failed and errored runs first. Rows cost about 130 bytes a
 * run; the details stop at `maxDetailRuns` runs or `maxDetailBytes` bytes, whichever comes first.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { reportBaseline, type ReportBaseline } from '../eval/compare.js';
import { asCounted } from '../eval/counted.js';
import { EvalStore } from '../eval/store.js';
import { SILO_VERSION } from '../paths.js';
import type { EvalSummary, ResultRecord, RunStatus, Termination } from '../types.js';
import { runDetail, type DetailCaps, type RunDetail } from './report-detail.js';
import { scriptSafeJson } from './report-page.js';
import { loadRun } from './runs.js';

/** The caps that bound a report's size. */
export interface ReportLimits extends DetailCaps {
  /** Runs whose full detail is embedded (failed and errored runs first). */
  maxDetailRuns: number;
  /** Bytes of embedded run detail, in all. */
  maxDetailBytes: number;
}

export { DEFAULT_REPORT_LIMITS } from '../options.js';

/** One run in the report's list. */
export interface ReportRow {
  runId: string;
  /** Index into `ReportData.tasks`. */
  task: number;
  trial: number;
  status: Exclude<RunStatus, 'running'>;
  score: number | null;
  durationMs: number;
  termination: Termination;
  /** Indexes into `ReportData.codes`, one per distinct diagnosis code of the run. */
  diagnosis: number[];
  /** An infrastructure failure that was run again; not counted in the summary. */
  retried?: true;
  /** Passed, but its answer had nothing behind it (ungrounded_answer). */
  suspicious?: true;
  /** Index into `ReportData.details` when the run's detail is embedded. */
  detail?: number;
}

/** Everything a report page holds. */
export interface ReportData {
  version: 1;
  generatedAt: string;
  silo: string;
  summary: EvalSummary;
  /** Task ids, in the summary's order. */
  tasks: string[];
  /** Diagnosis codes seen in the eval, sorted. */
  codes: string[];
  /** Every run the eval recorded, in the order they ended. */
  runs: ReportRow[];
  details: RunDetail[];
  /** The comparison with the eval's baseline (`silo eval --baseline`), when it has one. */
  baseline?: ReportBaseline;
  /** How the size was bounded. */
  bounds: {
    limits: ReportLimits;
    /** Runs without an embedded detail (left out by the caps, or their folder is gone). */
    omittedDetails: number;
    /** Bytes of the embedded details. */
    detailBytes: number;
  };
}

/** Results read at once while building the rows. */
const READ_BATCH = 64;
/** Runs in a row too large for what is left of the byte budget, after which the search stops. */
const MAX_MISFITS = 32;

/**
 * Reads an eval (its summary, runs.jsonl, and each run's folder under `runsDir`) into report data.
 * Runs whose folder is gone still get a row, without diagnosis or detail.
 */
export async function collectReportData(store: EvalStore, summary: EvalSummary, runsDir: string, limits: ReportLimits): Promise<ReportData> {
  // (a run a resume ran again is a retry, as the summary counted it)
  const lines = asCounted([...store.readLines()]);
  const tasks = summary.tasks.map((t) => t.taskId);
  const taskIndex = new Map(tasks.map((id, i) => [id, i]));
  const codesByRun: string[][] = [];
  for (let i = 0; i < lines.length; i += READ_BATCH) {
    const batch = lines.slice(i, i + READ_BATCH).map((line) => readCodes(join(runsDir, line.runId, 'result.json')));
    codesByRun.push(...(await Promise.all(batch)));
  }
  const codes = [...new Set(codesByRun.flat())].sort();
  const codeIndex = new Map(codes.map((code, i) => [code, i]));

  const runs = lines.map((line, i): ReportRow => {
    let task = taskIndex.get(line.taskId);
    if (task === undefined) {
      task = tasks.push(line.taskId) - 1;
      taskIndex.set(line.taskId, task);
    }
    return {
      runId: line.runId,
      task,
      trial: line.trial,
      status: line.status,
      score: line.score,
      durationMs: Math.round(line.durationMs * 10) / 10,
      termination: line.termination,
      diagnosis: codesByRun[i]!.map((code) => codeIndex.get(code)!),
      ...(line.retried ? { retried: true as const } : {}),
      ...(line.status === 'passed' && line.suspicious !== undefined ? { suspicious: true as const } : {}),
    };
  });

  const details: RunDetail[] = [];
  let detailBytes = 0;
  let misfits = 0;
  for (const row of detailOrder(runs)) {
    if (details.length >= limits.maxDetailRuns || misfits >= MAX_MISFITS) break;
    const detail = readDetail(join(runsDir, row.runId), limits);
    if (!detail) continue;
    const bytes = Buffer.byteLength(scriptSafeJson(detail));
    if (detailBytes + bytes > limits.maxDetailBytes) {
      // A smaller run further down may still fit.
      misfits++;
      continue;
    }
    misfits = 0;
    detailBytes += bytes;
    row.detail = details.push(detail) - 1;
  }

  return {
    version: 1,
    generatedAt: new Date().toISOString(),
    silo: SILO_VERSION,
    summary,
    tasks,
    codes,
    runs,
    details,
    ...(summary.baseline ? { baseline: reportBaseline(summary, dirname(runsDir))! } : {}),
    bounds: { limits: { ...limits }, omittedDetails: runs.length - details.length, detailBytes },
  };
}

/** Failed and errored runs first, then passed ones, then retried ones; each group in run order. */
export function detailOrder(rows: readonly ReportRow[]): ReportRow[] {
  const rank = (row: ReportRow) => (row.retried ? 2 : row.status === 'passed' ? 1 : 0);
  return [0, 1, 2].flatMap((r) => rows.filter((row) => rank(row) === r));
}

/** The distinct diagnosis codes of a run, in order of first appearance. */
async function readCodes(file: string): Promise<string[]> {
  try {
    const result = JSON.parse(await readFile(file, 'utf8')) as Partial<ResultRecord>;
    return [...new Set((result.diagnosis ?? []).map((d) => String(d.code)))];
  } catch {
    return [];
  }
}

function readDetail(dir: string, caps: DetailCaps): RunDetail | null {
  try {
    return runDetail(loadRun(dir), caps);
  } catch {
    // The run's folder is gone or unreadable: it keeps its row.
    return null;
  }
}
