import { describe, expect, it } from 'vitest';
import { checkSolution } from '../../src/check/solution.js';
import { check, defineEnvironment, defineTask, defineTool } from '../../src/index.js';
import type { Solution, TraceEvent, VerifyArgs } from '../../src/index.js';
import { shelf, type ShelfState } from '../../fixtures/tasks/check/shelf.js';

function shelveTask(solution: Solution | undefined, verify?: (args: VerifyArgs<ShelfState>) => ReturnType<typeof check.ok>[]) {
  return defineTask<ShelfState>({
    id: 'test/shelve',
    environment: shelf,
    instruction: 'Put Middlemarch back on the shelf.',
    verify: verify ?? (({ final }) => [check.equal('b1 is shelved', final.books.b1?.shelved, true)]),
    ...(solution ? { solution } : {}),
  });
}

describe('checkSolution', () => {
  it('finds nothing when the solution passes, or when there is none', async () => {
    expect(await checkSolution(shelveTask({ calls: [{ name: 'shelve_book', input: { book_id: 'b1' } }] }), 0)).toEqual([]);
    expect(await checkSolution(shelveTask(undefined), 0)).toEqual([]);
  });

  it('names the failed checks of a solution that does not pass', async () => {
    const findings = await checkSolution(shelveTask({ calls: [{ name: 'list_books', input: {} }] }), 0);
    expect(findings).toEqual([
      {
        check: 'solution_passes',
        code: 'solution_fails',
        taskId: 'test/shelve',
        message: 'the solution fails 1 of 1 checks: b1 is shelved (expected true, actual false)',
      },
    ]);
  });

  it('stops at a call to an unknown tool, naming its index and the nearest tools', async () => {
    const findings = await checkSolution(shelveTask({ calls: [{ name: 'list_books', input: {} }, { name: 'shelve', input: { book_id: 'b1' } }] }), 0);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      code: 'solution_call_failed',
      message: expect.stringMatching(/^solution\.calls\[1\] \(shelve\) failed \(tool_not_found\): no tool named 'shelve'\. Available tools, nearest first: shelve_book/),
    });
  });

  it('stops at an input the schema refuses, with the validator message', async () => {
    const findings = await checkSolution(shelveTask({ calls: [{ name: 'shelve_book', input: { id: 'b1' } }] }), 0);
    expect(findings.map((f) => f.code)).toEqual(['solution_call_failed']);
    expect(findings[0]!.message).toMatch(/calls\[0\] \(shelve_book\) failed \(invalid_input\): .*missing required parameter 'book_id'/);
  });

  it('warns about a call whose tool throws and goes on with the replay', async () => {
    const calls = [
      { name: 'shelve_book', input: { book_id: 'b2' } },
      { name: 'shelve_book', input: { book_id: 'b1' } },
    ];
    const findings = await checkSolution(shelveTask({ calls }), 0);
    expect(findings).toEqual([
      expect.objectContaining({ code: 'solution_call_threw', message: 'solution.calls[0] (shelve_book) failed: Bleak House is already on the shelf; the replay went on' }),
    ]);
  });

  it('grades with the output as an agent would give it: strings as-is, other values as JSON', async () => {
    const seen: (string | null)[] = [];
    const task = (output: unknown) =>
      shelveTask({ calls: [], output }, ({ output: o }) => {
        seen.push(o);
        return [check.ok('answered', true)];
      });
    await checkSolution(task('two books'), 0);
    await checkSolution(task({ count: 2 }), 0);
    await checkSolution(task(undefined), 0);
    expect(seen).toEqual(['two books', '{"count":2}', null]);
  });

  it('gives the verifier the initial world, the final world and a trace of the calls', async () => {
    let args: VerifyArgs<ShelfState> | undefined;
    await checkSolution(
      shelveTask({ calls: [{ name: 'shelve_book', input: { book_id: 'b1' } }], output: 'done' }, (a) => {
        args = a;
        return [check.ok('ran', true)];
      }),
      0,
    );
    expect(args!.initial.books.b1!.shelved).toBe(false);
    expect(args!.final.books.b1!.shelved).toBe(true);
    const types = args!.trace.map((e: TraceEvent) => e.type);
    expect(types).toEqual(['run_started', 'tool_call', 'tool_result', 'agent_returned']);
  });

  it('reports a verifier that throws on the solution', async () => {
    const findings = await checkSolution(
      shelveTask({ calls: [] }, () => {
        throw new Error('boom');
      }),
      0,
    );
    expect(findings[0]).toMatchObject({ code: 'solution_error', message: expect.stringMatching(/could not be graded: the verifier of test\/shelve threw: boom/) });
  });

  it('sends inputs as JSON text, so a tool cannot keep the task’s own solution object', async () => {
    const keep = defineTool({
      name: 'keep',
      description: 'Stores its input in the world.',
      inputSchema: { type: 'object', properties: { note: { type: 'object' } } } as const,
      run: (state: { notes: unknown[] }, input) => {
        state.notes.push(input.note);
        return null;
      },
    });
    const environment = defineEnvironment({ name: 'notes', createState: () => ({ notes: [] as unknown[] }), tools: [keep] });
    const note = { text: 'hello' };
    let kept: unknown;
    const task = defineTask({
      id: 'test/keep',
      environment,
      instruction: 'Keep a note.',
      verify: ({ final }) => {
        kept = final.notes[0];
        return [check.ok('kept', true)];
      },
      solution: { calls: [{ name: 'keep', input: { note } }] },
    });
    expect(await checkSolution(task, 0)).toEqual([]);
    expect(kept).toEqual(note);
    expect(kept).not.toBe(note);
  });

  it('reports a solution without a calls array', async () => {
    const findings = await checkSolution(shelveTask({ calls: undefined } as unknown as Solution), 0);
    expect(findings[0]).toMatchObject({ code: 'solution_error', message: expect.stringMatching(/without a calls array/) });
  });
});
