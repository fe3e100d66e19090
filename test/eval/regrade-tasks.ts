/**
 * Task files for regrade tests: the helpdesk tasks graded wrongly, then fixed; and the grades of an
 * eval's runs by (task, trial), to compare a regraded eval with a fresh one.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EvalStore } from '../../src/eval/store.js';
import type { ResultRecord } from '../../src/types.js';

const ROOT = resolve('.');

/**
 * The helpdesk tasks as a task file in `dir`, graded wrongly (`broken`) or as they are (`fixed`).
 * Broken: close-ticket's checks are inverted, escalate-priority's verifier throws, and
 * deactivate-inactive allows changes to tickets only (its writes are to users). Every task also
 * records a hash of the final world its verifier got, so a regrade shows whether it rebuilt it.
 */
export function writeHelpdesk(dir: string, version: 'broken' | 'fixed', options: { snapshot?: boolean } = {}): string {
  const file = join(dir, 'tasks.ts');
  writeFileSync(
    file,
    `import { createHash } from 'node:crypto';
import tasks from '${ROOT}/fixtures/helpdesk/tasks.ts';
const broken = ${version === 'broken'};
const environment = ${options.snapshot ? `{ ...tasks[0].environment, trackChanges: false }` : 'tasks[0].environment'};
// Keys sorted: applying a diff keeps an edited object's key order, which a tool that rebuilt the object may have changed.
const sorted = (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v);
const hash = (world) => createHash('sha256').update(JSON.stringify(world, sorted)).digest('hex');
export default tasks.map((t) => {
  let verify = t.verify;
  let mayChange = t.mayChange;
  if (broken && t.id === 'helpdesk/close-ticket') verify = async (args) => (await t.verify(args)).map((c) => ({ ...c, pass: !c.pass }));
  if (broken && t.id === 'helpdesk/escalate-priority') verify = () => { throw new Error('cannot read properties of undefined'); };
  if (broken && t.id === 'helpdesk/deactivate-inactive') mayChange = ['tickets'];
  const withHash = async (args) => [...(await verify(args)), { name: 'final world', pass: true, actual: hash(args.final) }, { name: 'initial world', pass: true, actual: hash(args.initial) }];
  return { ...t, environment, verify: withHash, ...(mayChange ? { mayChange } : {}) };
});
`,
  );
  return file;
}

/** Per (task, trial): the grade and what it rests on, without ids and timings. */
export function grades(out: string, evalId: string): Map<string, unknown> {
  const map = new Map<string, unknown>();
  for (const line of new EvalStore(out, evalId).readLines()) {
    const r = JSON.parse(readFileSync(join(out, 'runs', line.runId, 'result.json'), 'utf8')) as ResultRecord;
    map.set(`${line.taskId}#${line.trial}`, { status: r.status, score: r.score, checks: r.checks, diagnosis: r.diagnosis, error: r.error ?? null, line: { ...line, runId: '', durationMs: 0 } });
  }
  return map;
}

