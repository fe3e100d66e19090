import { existsSync, readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { runSilo } from './silo.js';

// The check's rollouts write to a temporary folder; this one is the check's os.tmpdir().
const tmp = tempDir('silo-check-cli-');
afterAll(() => tmp.remove());


const silo = (...args: string[]) => runSilo(args, { TMPDIR: tmp.dir });

const DIR = 'fixtures/tasks/check';

describe('silo check', () => {
  it('exits 0 on clean tasks, with a ✓ line per check and the counts', async () => {
    const r = await silo('check', 'fixtures/helpdesk/tasks.ts');
    // Nothing but progress, which a slow (loaded) machine prints every few seconds.
    expect(r.stderr).toMatch(/^(checked \d+\/\d+ tasks · \S+\n)*$/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^✓ fresh worlds +createState shares no object between two calls \(1 environment\)$/m);
    expect(r.stdout).toMatch(/^✓ do-nothing agent +fails all 6 tasks$/m);
    expect(r.stdout).toMatch(/^✓ solutions +6 of 6 pass$/m);
    expect(r.stdout).toMatch(/^6 tasks, 1 environment: 0 errors, 0 warnings \(.+\)$/m);
  });

  it('exits 0 when there are only warnings, and lists them', async () => {
    const r = await silo('check', `${DIR}/lazy-verifier.ts`);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {4}! check\/lazy-verifier {2}passes with an agent that does nothing/m);
    expect(r.stdout).toMatch(/0 errors, 2 warnings/);
  });

  it('exits 1 when a check finds an error, naming each one', async () => {
    const r = await silo('check', `${DIR}/shared-state.ts`, `${DIR}/random-state.ts`, `${DIR}/loose-schema.ts`, `${DIR}/wrong-solution.ts`);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ {4}✗ cached-shelf {2}books is the same object in two worlds/m);
    expect(r.stdout).toMatch(/^ {4}✗ random-loans {2}.*not deterministic for a seed/m);
    expect(r.stdout).toMatch(/^ {4}✗ loose-shelf {2}tool rename_book: ajv strict mode refuses the inputSchema: unknown keyword: "minLenght"$/m);
    expect(r.stdout).toMatch(/^ {4}✗ check\/solution-fails {2}the solution fails/m);
    expect(r.stdout).toMatch(/7 tasks, 4 environments: 7 errors, 0 warnings/);
  });

  it('prints the report as JSON with --json', async () => {
    const r = await silo('check', `${DIR}/lazy-verifier.ts`, `${DIR}/stale-world.ts`, '--json');
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(Object.keys(report).sort()).toEqual(['cancelled', 'checks', 'durationMs', 'environments', 'errors', 'tasks', 'version', 'warnings']);
    expect(report).toMatchObject({ tasks: 4, environments: 2 });
    expect(report.errors).toEqual([expect.objectContaining({ check: 'fresh_state', code: 'shared_state', environment: 'stale-shelf' })]);
    expect(report.warnings.map((w: { code: string }) => w.code)).toEqual(['do_nothing_passes', 'solution_call_threw']);
  });

  it.each([
    [['check'], /missing required argument 'task-files'/],
    [['check', 'missing.ts'], /no such file or folder: .*missing\.ts/],
    [['check', 'fixtures/tasks/broken/duplicate-tools.ts'], /two tools named increment/],
    [['check', 'fixtures/helpdesk/tasks.ts', '--concurrency', '0'], /--concurrency <n>.*expected an integer >= 1/],
  ])('exits 2 with one line for bad usage: %j', async (args, message) => {
    const r = await silo(...args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('explains each check in --help', async () => {
    const r = await silo('check', '--help');
    expect(r.code).toBe(0);
    for (const name of ['fresh worlds', 'deterministic worlds', 'tool schemas', 'do-nothing agent', 'solutions']) {
      expect(r.stdout).toContain(`  ${name}`);
    }
    expect(r.stdout).toMatch(/Exit codes: 0 no errors \(warnings allowed\), 1/);
  });

  it('leaves no artifacts behind', () => {
    const left = existsSync(tmp.dir) ? readdirSync(tmp.dir).filter((name) => name.startsWith('silo-check-')) : [];
    expect(left).toEqual([]);
  });
});
