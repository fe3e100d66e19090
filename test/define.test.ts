import { describe, it, expect, expectTypeOf } from 'vitest';
import { check, defineEnvironment, defineTask, defineTool } from '../src/define.js';
import type { FromSchema } from '../src/schema-types.js';
import type { TraceEvent, WorldContext } from '../src/types.js';

describe('defineTool', () => {
  it('types input from an `as const` schema: required keys required, optional keys optional', () => {
    defineTool({
      name: 'deactivate_user',
      description: 'Deactivate a user.',
      inputSchema: {
        type: 'object',
        properties: { user_id: { type: 'string' }, reason: { type: 'string' }, notify: { type: 'boolean' } },
        required: ['user_id'],
      } as const,
      run(_state: object, input) {
        expectTypeOf(input).toEqualTypeOf<{ user_id: string; reason?: string; notify?: boolean }>();
        expectTypeOf(input.user_id).toBeString();
        expectTypeOf(input.reason).toEqualTypeOf<string | undefined>();
        return null;
      },
    });
  });

  it('types enums as unions, arrays as arrays, nested objects, nullable types and integers', () => {
    defineTool({
      name: 'update_ticket',
      description: 'Update a ticket.',
      inputSchema: {
        type: 'object',
        properties: {
          status: { type: 'string', enum: ['open', 'pending', 'closed'] },
          tags: { type: 'array', items: { type: 'string' } },
          ids: { type: 'array', items: { type: 'integer' } },
          assignee_id: { type: ['string', 'null'] },
          where: { type: 'object', properties: { team: { type: 'string' } }, required: ['team'] },
          kind: { const: 'ticket' },
          anything: {},
        },
        required: ['status', 'tags'],
      } as const,
      run(_state: object, input) {
        expectTypeOf(input.status).toEqualTypeOf<'open' | 'pending' | 'closed'>();
        expectTypeOf(input.tags).toEqualTypeOf<string[]>();
        expectTypeOf(input.ids).toEqualTypeOf<number[] | undefined>();
        expectTypeOf(input.assignee_id).toEqualTypeOf<string | null | undefined>();
        expectTypeOf(input.where).toEqualTypeOf<{ team: string } | undefined>();
        expectTypeOf(input.kind).toEqualTypeOf<'ticket' | undefined>();
        expectTypeOf(input.anything).toEqualTypeOf<unknown>();
        return input.tags.length;
      },
    });
  });

  it('types state and ctx, and keeps the tool as written at run time', async () => {
    const tool = defineTool({
      name: 'bump',
      description: 'Bump the counter.',
      inputSchema: { type: 'object', properties: { by: { type: 'number' } } } as const,
      run(state: { count: number }, input, ctx) {
        expectTypeOf(state).toEqualTypeOf<{ count: number }>();
        expectTypeOf(ctx).toEqualTypeOf<WorldContext>();
        state.count += input.by ?? 1;
        return state.count;
      },
    });
    expect(tool.name).toBe('bump');
    expect(await tool.run({ count: 1 }, { by: 2 }, {} as WorldContext)).toBe(3);
  });

  it('types an unconstrained schema as unknown values', () => {
    expectTypeOf<FromSchema<{ type: 'object' }>>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf<FromSchema<{ anyOf: [{ type: 'string' }, { type: 'number' }] }>>().toEqualTypeOf<string | number>();
  });
});

describe('defineEnvironment and defineTask', () => {
  it('are identity functions that type the state through to the verifier', () => {
    const env = defineEnvironment({ name: 'n', createState: () => ({ count: 0 }), tools: [] });
    const task = defineTask({
      id: 't',
      environment: env,
      instruction: 'i',
      verify: ({ initial, final }) => {
        expectTypeOf(final).toEqualTypeOf<{ count: number }>();
        return [check.equal('count', final.count, initial.count + 1)];
      },
    });
    expect(task.environment).toBe(env);
    expect(defineTask(task)).toBe(task);
  });
});

describe('check', () => {
  it('equal passes on deep equality and records both values', () => {
    expect(check.equal('users', { a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual({
      name: 'users',
      pass: true,
      expected: { a: [1, { b: 2 }] },
      actual: { a: [1, { b: 2 }] },
    });
    expect(check.equal('n', 1, '1').pass).toBe(false);
    expect(check.equal('n', { a: undefined }, {}).pass).toBe(false);
    expect(check.equal('n', [1, 2], [2, 1]).pass).toBe(false);
  });

  it('equal and ok carry a message when given one, and none otherwise', () => {
    expect(check.equal('n', 1, 2, 'count is off')).toMatchObject({ pass: false, message: 'count is off' });
    expect(check.equal('n', 1, 1)).not.toHaveProperty('message');
    expect(check.ok('done', true)).toEqual({ name: 'done', pass: true });
    expect(check.ok('done', 0, 'nothing happened')).toEqual({ name: 'done', pass: false, message: 'nothing happened' });
  });

  it('ok passes on any truthy condition', () => {
    expect(check.ok('a', 'yes').pass).toBe(true);
    expect(check.ok('a', {}).pass).toBe(true);
    expect(check.ok('a', '').pass).toBe(false);
    expect(check.ok('a', null).pass).toBe(false);
  });

  it('contains matches case-insensitively, numbers included, and fails on null output', () => {
    expect(check.contains('answer', 'There are 3 Open tickets', 'open tickets')).toEqual({
      name: 'answer',
      pass: true,
      expected: 'contains "open tickets"',
      actual: 'There are 3 Open tickets',
    });
    expect(check.contains('answer', 'There are 3 tickets', 3).pass).toBe(true);
    expect(check.contains('answer', 'There are 4 tickets', 3).pass).toBe(false);
    expect(check.contains('answer', null, 3)).toMatchObject({ pass: false, actual: null });
  });

  describe('called', () => {
    const trace: TraceEvent[] = [
      { seq: 0, t: 0, type: 'tool_call', callId: 1, name: 'deactivate_user', input: { user_id: 'u9' } },
      { seq: 1, t: 1, type: 'tool_result', callId: 1, durationMs: 1, ok: false, error: { code: 'tool_error', message: 'no user' } },
      { seq: 2, t: 2, type: 'tool_call', callId: 2, name: 'deactivate_user', input: { user_id: 'u3' } },
      { seq: 3, t: 3, type: 'tool_result', callId: 2, durationMs: 1, ok: true, value: null },
    ];

    it('passes when the tool was called successfully', () => {
      expect(check.called('deactivated', trace, 'deactivate_user')).toEqual({
        name: 'deactivated',
        pass: true,
        expected: 'a successful call to deactivate_user',
      });
    });

    it('filters calls with where', () => {
      expect(check.called('u3', trace, 'deactivate_user', (input: { user_id: string }) => input.user_id === 'u3').pass).toBe(true);
    });

    it('does not count a call that failed', () => {
      expect(check.called('u9', trace, 'deactivate_user', (input: { user_id: string }) => input.user_id === 'u9').pass).toBe(false);
    });

    it('fails for a tool that was never called', () => {
      expect(check.called('x', trace, 'get_user').pass).toBe(false);
      expect(check.called('x', [], 'deactivate_user').pass).toBe(false);
    });
  });
});

describe('check.number', () => {
  it('passes only for the number standing on its own', () => {
    expect(check.number('n', 'There are 4 open tickets.', 4).pass).toBe(true);
    expect(check.number('n', 'Four: 4.', 4).pass).toBe(true);
    expect(check.number('n', 'As of 2024 there are 3 open tickets', 4).pass).toBe(false);
    expect(check.number('n', 'There are 14.', 4).pass).toBe(false);
    expect(check.number('n', 'Total 1,000 units', 1000).pass).toBe(true);
    expect(check.number('n', 'It is 2.5 hours', 2.5).pass).toBe(true);
    expect(check.number('n', null, 4).pass).toBe(false);
  });

  it('said passes when an agent message contains the text, case-insensitive, commas ignored; the user\'s messages do not count', () => {
    const conversation = [
      { role: 'user' as const, text: 'My total was 1,234.50?' },
      { role: 'agent' as const, text: 'Your refund of $1,234.50 is on its way.' },
    ];
    expect(check.said('s', conversation, '1234.50').pass).toBe(true);
    // The text looked for may have its commas too: they are ignored on both sides.
    expect(check.said('s', conversation, '1,234.50').pass).toBe(true);
    expect(check.said('s', [{ role: 'agent', text: 'It comes to 1234.50 in all.' }], '$1,234.50').pass).toBe(false);
    expect(check.said('s', [{ role: 'agent', text: 'It comes to 1234.50 in all.' }], '1,234.50').pass).toBe(true);
    expect(check.said('s', conversation, 'REFUND').pass).toBe(true);
    expect(check.said('s', conversation, 'my total').pass).toBe(false);
    expect(check.said('s', [], 'x')).toMatchObject({ pass: false, actual: 'the agent said nothing to the user' });
    expect(check.said('s', undefined, 'x').pass).toBe(false);
  });
});
