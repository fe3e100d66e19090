import { describe, expect, it } from 'vitest';
import { checkTasks } from '../../src/index.js';
import type { CheckProgress, CheckReport, Finding } from '../../src/index.js';
import { formatReport } from '../../src/check/format.js';
import { createStyle } from '../../src/inspect/style.js';

const DIR = 'fixtures/tasks/check';
const plain = createStyle({ isTTY: false });

/** The findings of a report as `code subject`, errors and warnings apart. */
function summary(report: CheckReport): { errors: string[]; warnings: string[] } {
  const line = (f: Finding) => `${f.code} ${f.taskId ?? f.environment}`;
  return { errors: report.errors.map(line), warnings: report.warnings.map(line) };
}

describe('checkTasks', () => {
  it('finds nothing wrong with the helpdesk tasks', async () => {
    const report = await checkTasks(['fixtures/helpdesk/tasks.ts']);
    expect(summary(report)).toEqual({ errors: [], warnings: [] });
    expect(report).toMatchObject({ version: 1, tasks: 6, environments: 1, cancelled: false });
    expect(report.checks).toEqual([
      { check: 'fresh_state', checked: 1, skipped: 0, errors: 0, warnings: 0 },
      { check: 'deterministic_state', checked: 1, skipped: 0, errors: 0, warnings: 0 },
      { check: 'tool_schemas', checked: 7, skipped: 0, errors: 0, warnings: 0 },
      { check: 'do_nothing_fails', checked: 6, skipped: 0, errors: 0, warnings: 0 },
      { check: 'solution_passes', checked: 6, skipped: 0, errors: 0, warnings: 0 },
    ]);
  });

  it('names a createState that shares a nested object from a module-level cache', async () => {
    const report = await checkTasks([`${DIR}/shared-state.ts`]);
    expect(summary(report).errors).toEqual(['shared_state cached-shelf']);
    expect(report.errors[0]!.message).toMatch(/^books is the same object in two worlds: cached-shelf\.createState\(\) must return a deep copy \(structuredClone\)/);
  });

  it('does not run the tasks of a createState that returns one world every time', async () => {
    const report = await checkTasks([`${DIR}/stale-world.ts`]);
    expect(summary(report)).toEqual({ errors: ['shared_state stale-shelf'], warnings: [] });
    expect(report.checks.find((c) => c.check === 'do_nothing_fails')).toMatchObject({ checked: 0, skipped: 2 });
  });

  it('names a createState that draws from Math.random()', async () => {
    const report = await checkTasks([`${DIR}/random-state.ts`]);
    expect(summary(report).errors).toEqual(['nondeterministic_state random-loans']);
    expect(report.errors[0]!.message).toMatch(/differ at loanCode/);
  });

  it('names a tool whose schema only ajv strict mode refuses', async () => {
    const report = await checkTasks([`${DIR}/loose-schema.ts`]);
    expect(report.errors).toEqual([
      {
        check: 'tool_schemas',
        code: 'schema_not_strict',
        environment: 'loose-shelf',
        message: 'tool rename_book: ajv strict mode refuses the inputSchema: unknown keyword: "minLenght"',
      },
    ]);
  });

  it('warns about a task the do-nothing agent passes and a solution call that throws, with no errors', async () => {
    const report = await checkTasks([`${DIR}/lazy-verifier.ts`]);
    expect(summary(report)).toEqual({
      errors: [],
      warnings: ['do_nothing_passes check/lazy-verifier', 'solution_call_threw check/retrying-solution'],
    });
    expect(report.warnings[0]!.message).toBe('passes with an agent that does nothing: its verifier may not check what the instruction asks');
  });

  it('reports solutions that fail or cannot run, and a verifier that throws on a do-nothing rollout', async () => {
    const report = await checkTasks([`${DIR}/wrong-solution.ts`]);
    expect(summary(report)).toEqual({
      errors: [
        'solution_fails check/solution-fails',
        'solution_call_failed check/solution-unknown-tool',
        'solution_call_failed check/solution-invalid-input',
        'do_nothing_error check/verifier-throws',
      ],
      warnings: [],
    });
    const message = (id: string) => report.errors.find((f) => f.taskId === id)!.message;
    expect(message('check/solution-fails')).toMatch(/fails 2 of 2 checks: b1 is shelved .*; names the book \(the answer does not name Middlemarch\)/);
    expect(message('check/solution-unknown-tool')).toMatch(/^solution\.calls\[1\] \(shelve\) failed \(tool_not_found\)/);
    expect(message('check/verifier-throws')).toMatch(/could not be graded \(verifier_error\): .*cannot read a book id/);
  });

  it('checks several files and folders at once, each environment once', async () => {
    const report = await checkTasks([`${DIR}/lazy-verifier.ts`, 'fixtures/helpdesk']);
    expect(report.tasks).toBe(8);
    expect(report.environments).toBe(2);
    expect(report.checks[0]).toMatchObject({ check: 'fresh_state', checked: 2 });
  });

  it('takes --task and --tag filters', async () => {
    const report = await checkTasks(['fixtures/helpdesk/tasks.ts'], { task: ['helpdesk/close-*'] });
    expect(report.tasks).toBe(1);
    await expect(checkTasks(['fixtures/helpdesk/tasks.ts'], { tag: ['nope'] })).rejects.toThrow(/no task matches --tag nope/);
  });

  it('reports progress up to the last task', async () => {
    const seen: CheckProgress[] = [];
    await checkTasks(['fixtures/helpdesk/tasks.ts'], { onProgress: (p) => seen.push(p), concurrency: 2 });
    expect(seen.at(-1)).toMatchObject({ done: 6, total: 6 });
    expect(seen.map((p) => p.done)).toEqual([...seen.map((p) => p.done)].sort((a, b) => a - b));
  });

  it('stops when its signal fires and says so', async () => {
    const report = await checkTasks(['fixtures/helpdesk/tasks.ts'], { signal: AbortSignal.abort() });
    expect(report.cancelled).toBe(true);
    expect(report.checks.find((c) => c.check === 'do_nothing_fails')!.checked).toBe(0);
  });

  it('throws a set-up error for a file that does not load or a bad option', async () => {
    await expect(checkTasks(['fixtures/tasks/broken/duplicate-tools.ts'])).rejects.toMatchObject({ code: 'SILO_TASK_INVALID' });
    await expect(checkTasks([])).rejects.toMatchObject({ code: 'SILO_USAGE' });
    await expect(checkTasks(['fixtures/helpdesk/tasks.ts'], { concurrency: 0 })).rejects.toMatchObject({ code: 'SILO_USAGE' });
  });
});

describe('formatReport', () => {
  it('prints a ✓ line per clean check, ✗ and ! lines per finding, then the counts', async () => {
    const report = await checkTasks([`${DIR}/lazy-verifier.ts`, `${DIR}/loose-schema.ts`]);
    const text = formatReport({ ...report, durationMs: 1234 }, plain);
    expect(text.split('\n')).toEqual([
      '✓ fresh worlds          createState shares no object between two calls (2 environments)',
      '✓ deterministic worlds  the same seed gives the same world (2 environments)',
      '✗ tool schemas          1 error (5 tools checked)',
      '    ✗ loose-shelf  tool rename_book: ajv strict mode refuses the inputSchema: unknown keyword: "minLenght"',
      '! do-nothing agent      1 warning (3 tasks checked)',
      '    ! check/lazy-verifier  passes with an agent that does nothing: its verifier may not check what the instruction asks',
      '! solutions             1 warning (2 tasks checked, 1 skipped)',
      '    ! check/retrying-solution  solution.calls[0] (shelve_book) failed: Bleak House is already on the shelf; the replay went on',
      '',
      '3 tasks, 2 environments: 1 error, 2 warnings (1.2 s)',
    ]);
  });
});
