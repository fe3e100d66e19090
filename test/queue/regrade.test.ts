/**
 * regrade of an eval collected from a queue: `silo worker` ran the rollouts under its own --root
 * (another folder, as on another machine), the coordinator wrote their artifacts back; after a
 * verifier fix the eval regrades to what a fresh local eval of the fixed tasks gives, its runs
 * finding their task in the eval's task files once the worker's copy is gone.
 */
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvalStore } from '../../src/eval/store.js';
import { queueRunner, regrade, runEval } from '../../src/index.js';
import type { EvalSummary, RunRecord } from '../../src/types.js';
import { grades, writeHelpdesk } from '../eval/regrade-tasks.js';
import { statistics } from '../eval/statistics.js';
import { readJson } from '../../src/inspect/runs.js';
import { tempDir } from '../helpers.js';
import { startRedis, startWorker, type TestRedis, type TestWorker } from './redis.js';

const tmp = tempDir('silo-queue-regrade-');
/** The coordinator's folder, and the worker's copy of it. */
const here = join(tmp.dir, 'here');
const there = join(tmp.dir, 'there');

let redis: TestRedis;
let worker: TestWorker;

beforeAll(async () => {
  mkdirSync(join(here, 'agents'), { recursive: true });
  writeFileSync(join(here, 'package.json'), '{ "type": "module" }\n');
  cpSync('fixtures/agents/helpdesk-solver.ts', join(here, 'agents', 'solver.ts'));
  writeHelpdesk(here, 'broken');
  cpSync(here, there, { recursive: true });
  redis = await startRedis();
  worker = startWorker(['--queue', redis.url, '--root', there, '--isolation', 'thread', '--concurrency', '4'], tmp.dir);
  await worker.waitFor(/waiting for jobs/);
}, 60_000);

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await redis?.stop();
  tmp.remove();
});

describe('regrade of an eval collected from the queue', () => {
  let queued: EvalSummary;
  const out = join(tmp.dir, 'out');

  beforeAll(async () => {
    queued = await runEval({ paths: [join(here, 'tasks.ts')], agent: join(here, 'agents', 'solver.ts'), trials: 2, outDir: out, runner: queueRunner({ url: redis.url, root: here }) });
  }, 90_000);

  it('ran on the worker, whose task file was its own copy', () => {
    expect(queued.totals).toMatchObject({ runs: 12, passed: 6, failed: 4, errors: 2 });
    const [line] = new EvalStore(out, queued.evalId).readLines();
    expect(readJson<RunRecord>(join(out, 'runs', line!.runId, 'run.json'))!.taskFile).toBe(join(there, 'tasks.ts'));
  });

  it("after the fix, with the worker's copy gone, equals a fresh local eval of the fixed tasks", async () => {
    writeHelpdesk(here, 'fixed');
    rmSync(there, { recursive: true, force: true });
    const report = await regrade({ target: queued.evalId, outDir: out });
    expect(report.refused).toEqual([]);
    expect(report.changed).toHaveLength(6);
    const fresh = await runEval({ paths: [join(here, 'tasks.ts')], agent: join(here, 'agents', 'solver.ts'), trials: 2, outDir: join(tmp.dir, 'fresh'), isolation: 'thread' });
    expect(statistics(report.evals[0]!)).toEqual(statistics(fresh));
    expect(grades(out, queued.evalId)).toEqual(grades(join(tmp.dir, 'fresh'), fresh.evalId));
  }, 60_000);
});
