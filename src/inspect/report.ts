/**
 * `writeReport`: an eval as one self-contained HTML file (summary, charts, filterable runs, each
 * run's timeline, changes and checks) that opens from disk with no network.
 */
import { rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SiloError } from '../errors.js';
import { EvalStore } from '../eval/store.js';
import { DEFAULT_OUT_DIR } from '../options.js';
import { collectReportData, DEFAULT_REPORT_LIMITS, type ReportLimits } from './report-data.js';
import { renderReportPage } from './report-page.js';
import { resolveEval } from './runs.js';
import { makeFolder, outDirAccess } from '../out-dir.js';

export { resolveEval };

/** Options of writeReport. */
export interface ReportOptions {
  /** The eval: an evalId, a unique prefix of one, or an eval folder. Default: the latest eval. */
  evalId?: string;
  /** Artifact folder holding `evals/` and `runs/`. Default `.silo`. */
  outDir?: string;
  /** Where to write the page. Default `<outDir>/evals/<evalId>/report.html`. */
  output?: string;
  /** Caps on the embedded run detail (see DEFAULT_REPORT_LIMITS). */
  limits?: Partial<ReportLimits>;
}

/** What writeReport wrote. */
export interface ReportWritten {
  /** Absolute path of the page. */
  file: string;
  evalId: string;
  /** Size of the page, bytes. */
  bytes: number;
  /** Runs listed. */
  runs: number;
  /** Runs whose full detail is in the page. */
  detailed: number;
  /** Time taken to read the eval and write the page, ms. */
  durationMs: number;
}

/** Writes the HTML report of an eval. Throws a SiloError when there is no such eval. */
export async function writeReport(options: ReportOptions = {}): Promise<ReportWritten> {
  const t0 = performance.now();
  const limits = reportLimits(options.limits);
  const { outDir, evalId } = resolveEval(options.evalId, resolve(options.outDir ?? DEFAULT_OUT_DIR));
  const store = new EvalStore(outDir, evalId);
  const summary = store.readSummary();
  const data = await collectReportData(store, summary, join(outDir, 'runs'), limits);
  const html = renderReportPage(data);
  const file = resolve(options.output ?? join(store.dir, 'report.html'));
  await outDirAccess(
    options.output === undefined ? outDir : file,
    async () => {
      makeFolder(dirname(file));
      // Written whole and renamed, so a browser never opens half a report.
      const temp = `${file}.${process.pid}.tmp`;
      await writeFile(temp, html);
      await rename(temp, file);
    },
    options.output === undefined ? '--out' : '--output',
  );
  return {
    file,
    evalId,
    bytes: Buffer.byteLength(html),
    runs: data.runs.length,
    detailed: data.details.length,
    durationMs: performance.now() - t0,
  };
}

/** The defaults overridden by `given`; each cap must be an integer >= 1 (`maxDetailRuns` may be 0). */
export function reportLimits(given: Partial<ReportLimits> = {}): ReportLimits {
  const limits = { ...DEFAULT_REPORT_LIMITS, ...given };
  for (const [name, value] of Object.entries(limits)) {
    const least = name === 'maxDetailRuns' ? 0 : 1;
    if (!Number.isInteger(value) || value < least) throw new SiloError('SILO_USAGE', `report limit ${name} must be an integer >= ${least} (got ${String(value)})`);
  }
  return limits;
}
