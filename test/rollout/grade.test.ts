import { describe, it, expect } from 'vitest';
import { check } from '../../src/define.js';
import { diffWorld } from '../../src/rollout/diff.js';
import { compactCheck, grade } from '../../src/rollout/grade.js';
import { CHECK_VALUE_MAX_CHARS } from '../../src/options.js';
import type { Check, Task, VerifyArgs } from '../../src/types.js';
import { passing, task } from '../builders.js';

const args: VerifyArgs = { initial: { count: 0 }, final: { count: 1 }, output: '1', trace: [], conversation: [] };

const gradeWith = (verify: Task['verify'], extra: Partial<Task> = {}, timeoutMs?: number) =>
  grade(task(verify, extra), args, diffWorld(args.initial, args.final), timeoutMs);

function verifierError(g: Awaited<ReturnType<typeof grade>>): string {
  expect(g.status).toBe('error');
  expect(g.score).toBeNull();
  expect(g.checks).toEqual([]);
  if (g.status !== 'error') throw new Error('unreachable');
  expect(g.error.code).toBe('verifier_error');
  return g.error.message;
}

describe('grade', () => {
  it('passes with score 1 when every check passes', async () => {
    const g = await gradeWith(({ final }) => [check.equal('count', final.count, 1), check.ok('said so', true)]);
    expect(g).toEqual({
      status: 'passed',
      score: 1,
      checks: [
        { name: 'count', pass: true, expected: 1, actual: 1 },
        { name: 'said so', pass: true },
      ],
    });
  });

  it('fails with the share of passed checks as the score', async () => {
    const g = await gradeWith(() => [passing('a'), { name: 'b', pass: false }, { name: 'c', pass: false }, passing('d')]);
    expect(g.status).toBe('failed');
    expect(g.score).toBe(0.5);
  });

  it('gives the verifier the initial and final worlds, the output and the trace', async () => {
    let seen: VerifyArgs | undefined;
    await gradeWith((a) => {
      seen = a;
      return [passing()];
    });
    expect(seen).toBe(args);
  });

  it('awaits an async verifier', async () => {
    const g = await gradeWith(async ({ output }) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return [check.contains('answer', output, 1)];
    });
    expect(g.status).toBe('passed');
  });

  it('makes a verifier that throws a verifier_error with its message', async () => {
    const message = verifierError(
      await gradeWith(() => {
        throw new Error('initial.users is undefined');
      }),
    );
    // Where it threw: the first frame outside Silo, here this test file (as a task file's line).
    expect(message).toMatch(/^the verifier of test\/task threw: initial\.users is undefined \(at .*test\/rollout\/grade\.test\.ts:\d+:\d+\)$/);
  });

  it('makes a verifier that rejects a verifier_error', async () => {
    expect(verifierError(await gradeWith(() => Promise.reject(new Error('nope'))))).toContain('threw: nope');
  });

  it('makes a verifier that returns no array a verifier_error that says what to return', async () => {
    expect(verifierError(await gradeWith(() => ({ name: 'x', pass: true }) as never))).toBe(
      'the verifier of test/task must return an array of checks (got object)',
    );
    expect(verifierError(await gradeWith(() => undefined as never))).toContain('(got undefined)');
    expect(verifierError(await gradeWith(() => null as never))).toContain('(got null)');
  });

  it('makes a malformed check a verifier_error naming its index and the shape of a check', async () => {
    for (const bad of [{ name: 'x' }, { name: 1, pass: true }, { name: 'x', pass: 'yes' }, null, 'check']) {
      const message = verifierError(await gradeWith(() => [passing(), bad as Check]));
      expect(message).toContain('returned a malformed check at index 1');
      expect(message).toContain('{ name: string, pass: boolean, expected?, actual?, message? }');
    }
  });

  it('makes an empty list of checks a verifier_error', async () => {
    expect(verifierError(await gradeWith(() => []))).toBe(
      'the verifier of test/task returned no checks; return at least one, e.g. check.ok(name, condition)',
    );
  });

  it('makes a verifier that hangs a verifier_error after the timeout', async () => {
    const message = verifierError(await gradeWith(() => new Promise<Check[]>(() => {}), {}, 20));
    expect(message).toBe('the verifier of test/task did not finish within 20 ms');
  });

  describe('mayChange', () => {
    it('adds a passing check when every change is allowed', async () => {
      const g = await gradeWith(() => [passing()], { mayChange: ['count'] });
      expect(g.status).toBe('passed');
      expect(g.checks.at(-1)).toEqual({ name: 'mayChange', pass: true, expected: ['count'], gate: true });
    });

    it('adds a failed check naming the change it does not allow', async () => {
      const g = await gradeWith(() => [passing()], { mayChange: ['other'] });
      expect(g.status).toBe('failed');
      expect(g.score).toBe(0.5);
      expect(g.checks.at(-1)).toMatchObject({ name: 'mayChange', pass: false, actual: ['count'], gate: true });
    });

    it('is a gate: respected, it is listed but counts in neither numerator nor denominator of the score', async () => {
      // A do-nothing agent on a write task with one real check: it changed nothing, so mayChange
      // holds, and it must score 0, not 0.50.
      const idle = await grade(task(() => [{ name: 'ticket closed', pass: false }], { mayChange: ['tickets.*.status'] }), args, []);
      expect(idle.status).toBe('failed');
      expect(idle.score).toBe(0);
      expect(idle.checks.map((c) => [c.name, c.pass])).toEqual([
        ['ticket closed', false],
        ['mayChange', true],
      ]);
      const half = await gradeWith(() => [passing('a'), { name: 'b', pass: false }], { mayChange: ['count'] });
      expect(half.score).toBe(0.5);
    });

    it('adds no check when the task has no mayChange', async () => {
      expect((await gradeWith(() => [passing()])).checks).toHaveLength(1);
    });
  });
});

describe('strict: the grounded gate', () => {
  const unbacked: VerifyArgs = { initial: {}, final: {}, output: '3', trace: [{ seq: 0, t: 0, type: 'agent_returned', output: '3' }], conversation: [] };
  const backed: VerifyArgs = {
    initial: {},
    final: {},
    output: '3',
    conversation: [],
    trace: [
      { seq: 0, t: 0, type: 'tool_call', callId: 1, name: 'count', input: {} },
      { seq: 1, t: 1, type: 'tool_result', callId: 1, durationMs: 0.1, ok: true, value: 3 },
      { seq: 2, t: 2, type: 'agent_returned', output: '3' },
    ],
  };

  it('fails an answer with no successful tool call behind it, as a failed check named grounded', async () => {
    const g = await grade(task(() => [passing('count')]), unbacked, [], undefined, true);
    expect(g.status).toBe('failed');
    expect(g.score).toBe(0.5);
    expect(g.checks.at(-1)).toEqual({ name: 'grounded', pass: false, gate: true, message: expect.stringMatching(/without a single successful tool call/) });
  });

  it('holds for an answer that was looked up, without changing the score', async () => {
    const g = await grade(task(() => [passing('count'), { name: 'b', pass: false }]), backed, [], undefined, true);
    expect(g.checks.at(-1)).toEqual({ name: 'grounded', pass: true, gate: true });
    expect(g.score).toBe(0.5);
  });

  it('is what strict: true on a task asks for; without it an ungrounded answer passes', async () => {
    expect((await grade(task(() => [passing('count')], { strict: true }), unbacked, [])).status).toBe('failed');
    expect((await grade(task(() => [passing('count')]), unbacked, [])).status).toBe('passed');
  });
});

describe('compactCheck', () => {
  it('keeps small values as they are', () => {
    const c = { name: 'users', pass: false, expected: { u1: [1, 2] }, actual: 'x', message: 'wrong' };
    expect(compactCheck(c)).toEqual(c);
  });

  it('truncates a large expected or actual value to a JSON preview', () => {
    const big = { users: Array.from({ length: 500 }, (_, i) => ({ id: `u${i}`, name: 'someone' })) };
    const c = compactCheck(check.equal('users', big, 'x'.repeat(10_000)));
    for (const value of [c.actual, c.expected]) {
      expect(typeof value).toBe('string');
      expect((value as string).length).toBeLessThan(CHECK_VALUE_MAX_CHARS + 100);
      expect(value).toMatch(/… \(truncated, \d+ chars\)$/);
    }
    expect((c.actual as string).startsWith('{"users":[{"id":"u0"')).toBe(true);
  });

  it('makes values JSON cannot hold safe (undefined, BigInt, cycles, functions)', () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(compactCheck({ name: 'a', pass: true, expected: undefined, actual: 5n })).toEqual({ name: 'a', pass: true, expected: null, actual: '5' });
    expect(compactCheck({ name: 'b', pass: true, actual: loop }).actual).toEqual({ self: '[Circular]' });
    expect(compactCheck({ name: 'c', pass: true, actual: () => 1 }).actual).toBeNull();
  });

  it('drops fields a check does not have', () => {
    expect(compactCheck({ name: 'a', pass: true, extra: 1 } as Check)).toEqual({ name: 'a', pass: true });
  });
});

describe('a verifier that rejects with a value that is not an Error', () => {
  it('is a verifier_error, not an internal error', async () => {
    const g = await grade(task(() => Promise.reject(Object.create(null))), args, []);
    expect(g.status).toBe('error');
    expect(g.status === 'error' && g.error.code).toBe('verifier_error');
  });
});
