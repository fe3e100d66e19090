/**
 * `compareEvals` and `--baseline`: the comparison of stored evals, found by evalId, unique prefix
 * or folder (the statistics are in compare.ts, which reads no eval itself).
 */
import { resolve } from 'node:path';
import { SiloError } from '../errors.js';
import { DEFAULT_OUT_DIR } from '../options.js';
import { resolveEval } from '../inspect/runs.js';
import type { EvalSummary } from '../types.js';
import { compareSummaries, type CompareStatsOptions, type Comparison } from './compare.js';
import { EvalStore } from './store.js';

/** Options of compareEvals. */
export interface CompareOptions extends CompareStatsOptions {
  /** The baseline: an evalId, a unique prefix or suffix of one, or an eval folder. */
  a: string;
  /** The eval to judge against it. */
  b: string;
  /** Artifact folder holding `evals/`. Default `.silo`. */
  outDir?: string;
}

/** Compares two stored evals (see the module comment). */
export function compareEvals(options: CompareOptions): Comparison {
  const outDir = resolve(options.outDir ?? DEFAULT_OUT_DIR);
  return compareSummaries(readEvalSummary(options.a, outDir), readEvalSummary(options.b, outDir), options);
}

/** An eval's summary by evalId, unique prefix, or folder. */
export function readEvalSummary(ref: string, outDir: string): EvalSummary {
  const found = resolveEval(ref, outDir);
  return new EvalStore(found.outDir, found.evalId).readSummary();
}

/**
 * Checks the baseline of a new eval before it runs (a typo should not cost an eval), and returns
 * how to read it afterwards: the summary as it is when the eval ends.
 */
export function baselineReader(ref: string, outDir: string): () => EvalSummary {
  const found = resolveEval(ref, resolve(outDir));
  const store = new EvalStore(found.outDir, found.evalId);
  const summary = store.readSummary();
  if (summary.status === 'running') {
    throw new SiloError('SILO_USAGE', `the baseline eval ${found.evalId} is still running; compare against a finished eval`);
  }
  return () => store.readSummary();
}

