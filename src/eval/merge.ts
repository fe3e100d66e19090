/**
 * `silo merge`: the shards of one eval (`silo eval --shard i/n`, one output folder each, say from
 * the machines of a CI matrix) combined into one eval. The statistics are recomputed from the
 * shards' run lines with the same Tally as a local eval, so the merged summary is the summary
 * an unsharded eval of the same runs would have written; the run folders are copied along.
 */
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { newId } from '../ids.js';
import { SiloError } from '../errors.js';
import { DEFAULT_OUT_DIR } from '../options.js';
import type { EvalOptionsRecord, EvalRunLine, EvalSummary } from '../types.js';
import { asCounted } from './counted.js';
import { checkEvalId, EvalStore } from './store.js';
import { Tally } from './tally.js';
import { outDirAccess } from '../out-dir.js';

/** Options of mergeEvals. */
export interface MergeOptions {
  /** Shard output folders (each holding one eval under `evals/`), or the shards' eval folders. */
  dirs: string[];
  /** Where the merged eval goes: `<outDir>/evals/<evalId>/`, runs under `<outDir>/runs/`. Default `.silo`. */
  outDir?: string;
  /** The merged evalId. Default: the shards' evalId when they share one, else a fresh ULID. */
  evalId?: string;
}

/** One shard as found on disk. */
interface ShardEval {
  dir: string;
  /** The shard's --out folder. */
  outDir: string;
  runsDir: string;
  summary: EvalSummary;
  lines: EvalRunLine[];
}

/** Merges the shards into one eval and returns its summary. */
export async function mergeEvals(options: MergeOptions): Promise<EvalSummary> {
  if (options.dirs.length === 0) throw new SiloError('SILO_USAGE', 'give the output folders of the shards, e.g. `silo merge shard-1 shard-2 shard-3`');
  const shards = options.dirs.map(findShard);
  const first = checkShards(shards);
  const outDir = resolve(options.outDir ?? DEFAULT_OUT_DIR);
  const ids = new Set(shards.map((s) => s.summary.evalId));
  const evalId = options.evalId !== undefined ? checkEvalId(options.evalId) : (ids.size === 1 ? first.summary.evalId : newId());
  const store = new EvalStore(outDir, evalId);
  if (existsSync(store.summaryFile)) {
    throw new SiloError('SILO_USAGE', `an eval ${evalId} already exists in ${outDir}; merge into another --out folder, or give --eval-id`);
  }

  const tally = new Tally(first.summary.tasks.map((t) => t.taskId));
  const counted = new Map<string, string>();
  const lines: { line: EvalRunLine; runsDir: string }[] = [];
  for (const shard of shards) {
    for (const line of asCounted(shard.lines)) {
      const key = `${line.trial}\u0000${line.taskId}`;
      if (!line.retried && line.termination !== 'cancelled') {
        const other = counted.get(key);
        if (other !== undefined) {
          throw new SiloError('SILO_USAGE', `${line.taskId} trial ${line.trial} has a run in both ${other} and ${shard.dir}; merge shards of one eval, each once`);
        }
        counted.set(key, shard.dir);
      }
      tally.add(line);
      lines.push({ line, runsDir: shard.runsDir });
    }
  }

  const startedAt = Math.min(...shards.map((s) => Date.parse(s.summary.startedAt)));
  const finishedAt = Math.max(...shards.map((s) => Date.parse(s.summary.finishedAt ?? s.summary.startedAt)));
  const { shard: _shard, ...options_ } = first.summary.options;
  const summary: EvalSummary = {
    version: 1,
    evalId,
    status: 'completed',
    startedAt: new Date(startedAt).toISOString(),
    finishedAt: new Date(finishedAt).toISOString(),
    // Shards run side by side: the merged eval took from the first start to the last finish.
    durationMs: finishedAt - startedAt,
    agent: first.summary.agent,
    trials: first.summary.trials,
    options: options_,
    ...tally.stats(first.summary.trials),
  };

  await outDirAccess(outDir, async () => {
    await store.open();
    try {
      for (const { line, runsDir } of lines) {
        const from = join(runsDir, line.runId);
        const to = join(outDir, 'runs', line.runId);
        if (existsSync(from) && !existsSync(to)) cpSync(from, to, { recursive: true });
        store.append(line);
      }
    } finally {
      await store.close();
    }
    await store.writeSummary(summary);
  });
  return summary;
}

/** A shard's eval folder: the folder itself, or the one eval under `<dir>/evals/`. */
function findShard(dir: string): ShardEval {
  const abs = resolve(dir);
  let evalDir = abs;
  if (!existsSync(join(abs, 'summary.json'))) {
    const evals = existsSync(join(abs, 'evals')) ? readdirSync(join(abs, 'evals')).filter((id) => existsSync(join(abs, 'evals', id, 'summary.json'))) : [];
    if (evals.length !== 1) {
      throw new SiloError(
        'SILO_USAGE',
        evals.length === 0
          ? `${abs} holds no eval; give the --out folder of a \`silo eval --shard i/n\` run`
          : `${abs} holds ${evals.length} evals; give the folder of one: ${join(abs, 'evals', evals[0]!)}`,
      );
    }
    evalDir = join(abs, 'evals', evals[0]!);
  }
  const outDir = dirname(dirname(evalDir));
  const store = new EvalStore(outDir, basename(evalDir));
  return { dir: abs, outDir, runsDir: join(outDir, 'runs'), summary: store.readSummary(), lines: [...store.readLines()] };
}

/** The shards must be the finished shards 1..n of one eval; returns shard 1. */
function checkShards(shards: ShardEval[]): ShardEval {
  const describe = (s: ShardEval): string => `${s.dir} (eval ${s.summary.evalId})`;
  const count = shards[0]!.summary.options.shard?.count;
  const byIndex = new Map<number, ShardEval>();
  for (const s of shards) {
    const shard = s.summary.options.shard;
    if (!shard) throw new SiloError('SILO_USAGE', `${describe(s)} is not a shard; merge the outputs of \`silo eval --shard i/n\``);
    if (shard.count !== count) throw new SiloError('SILO_USAGE', `${describe(s)} is shard ${shard.index}/${shard.count}, but ${describe(shards[0]!)} is one of ${count}; merge shards of one split`);
    const twin = byIndex.get(shard.index);
    if (twin) throw new SiloError('SILO_USAGE', `shard ${shard.index}/${count} is given twice: ${describe(twin)} and ${describe(s)}`);
    byIndex.set(shard.index, s);
    if (s.summary.status !== 'completed') {
      throw new SiloError('SILO_USAGE', `shard ${shard.index}/${count} ${describe(s)} is ${s.summary.status}; finish it with \`silo eval --resume ${s.summary.evalId} --out ${s.outDir}\` first`);
    }
  }
  const missing = Array.from({ length: count! }, (_, i) => i + 1).filter((i) => !byIndex.has(i));
  if (missing.length > 0) throw new SiloError('SILO_USAGE', `shard${missing.length > 1 ? 's' : ''} ${missing.map((i) => `${i}/${count}`).join(', ')} missing; give all ${count} shards`);
  const first = byIndex.get(1)!;
  for (const s of shards) {
    const what = differs(first.summary, s.summary);
    if (what) throw new SiloError('SILO_USAGE', `${describe(s)} and ${describe(first)} differ in ${what}; they are not shards of one eval`);
  }
  return first;
}

/** What makes two shards' evals different evals (paths may differ between machines, so only the agent's file name counts). */
function differs(a: EvalSummary, b: EvalSummary): string | undefined {
  const same = (x: unknown, y: unknown): boolean => JSON.stringify(x) === JSON.stringify(y);
  const pick = (o: EvalOptionsRecord) => ({ trials: o.trials, task: o.task, tag: o.tag, limits: o.limits, retries: o.retries, strict: o.strict === true });
  if (!same(a.tasks.map((t) => t.taskId), b.tasks.map((t) => t.taskId))) return 'their tasks';
  if (basename(a.options.agent) !== basename(b.options.agent)) return 'their agent';
  if (!same(pick(a.options), pick(b.options))) return 'their options (trials, filters, limits, retries or --strict)';
  return undefined;
}
