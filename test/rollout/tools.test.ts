import { describe, it, expect, vi } from 'vitest';
import { bindTools, toolSchemas } from '../../src/rollout/tools.js';
import { createContext } from '../../src/rollout/state.js';
import type { ToolResult } from '../../src/types.js';
import { environment, tool } from '../builders.js';

interface World {
  users: Record<string, { name: string; active: boolean }>;
}

const ID = { type: 'object', properties: { user_id: { type: 'string' } }, required: ['user_id'] } as const;

function setup(tools: ReturnType<typeof tool>[]) {
  const state: World = { users: { u1: { name: 'Ada', active: true }, u2: { name: 'Bo', active: true } } };
  const env = environment(state, tools);
  return { state, toolbox: bindTools(env, state, createContext(7, undefined)) };
}

const errorOf = (result: ToolResult) => {
  expect(result.ok).toBe(false);
  return (result as Extract<ToolResult, { ok: false }>).error;
};

describe('bindTools', () => {
  const getUser = tool('get_user', ID, (s: World, input: { user_id: string }) => s.users[input.user_id]);
  const deactivate = tool('deactivate_user', ID, (s: World, input: { user_id: string }) => {
    s.users[input.user_id]!.active = false;
    return 'done';
  });
  const listTickets = tool('list_tickets', { type: 'object', properties: {} }, () => []);

  it('runs a tool on the live world and returns its value', async () => {
    const { state, toolbox } = setup([getUser, deactivate]);
    expect(await toolbox.call('deactivate_user', { user_id: 'u1' })).toEqual({ ok: true, value: 'done' });
    expect(state.users.u1!.active).toBe(false);
    expect(await toolbox.call('get_user', { user_id: 'u1' })).toEqual({ ok: true, value: { name: 'Ada', active: false } });
  });

  it('answers an unknown tool with tool_not_found listing the real names, nearest first', async () => {
    const { toolbox } = setup([listTickets, deactivate, getUser]);
    const error = errorOf(await toolbox.call('get_users', { user_id: 'u1' }));
    expect(error.code).toBe('tool_not_found');
    expect(error.message).toBe("no tool named 'get_users'. Available tools, nearest first: get_user, list_tickets, deactivate_user");
    expect(error.available).toEqual(['get_user', 'list_tickets', 'deactivate_user']);
  });

  it('refuses an invalid input with invalid_input before run is called', async () => {
    const run = vi.fn(() => 'ran');
    const { toolbox } = setup([tool('deactivate_user', ID, run)]);
    const error = errorOf(await toolbox.call('deactivate_user', { userId: 'u1' }));
    expect(error.code).toBe('invalid_input');
    expect(error.message).toContain("unknown parameter 'userId' (did you mean 'user_id'?)");
    expect(error.parameters).toEqual(['user_id']);
    expect(error.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'userId' })]));
    expect(run).not.toHaveBeenCalled();
  });

  it('gives the thrown message as a tool_error', async () => {
    const { toolbox } = setup([
      tool('get_user', ID, () => {
        throw new Error("No user with id 'u9'");
      }),
    ]);
    expect(errorOf(await toolbox.call('get_user', { user_id: 'u9' }))).toEqual({ code: 'tool_error', message: "No user with id 'u9'" });
  });

  it('turns a thrown non-error into a tool_error that names the tool', async () => {
    const { toolbox } = setup([
      tool('get_user', ID, () => {
        throw 'nope';
      }),
    ]);
    expect(errorOf(await toolbox.call('get_user', { user_id: 'u1' })).message).toBe('get_user failed: nope');
  });

  it('returns a clone: mutating the value does not change the world', async () => {
    const { state, toolbox } = setup([getUser]);
    const result = await toolbox.call('get_user', { user_id: 'u1' });
    const value = (result as { value: { name: string; active: boolean } }).value;
    value.name = 'Mallory';
    value.active = false;
    expect(state.users.u1).toEqual({ name: 'Ada', active: true });
  });

  it("gives a typed array's own bytes, not the rest of its buffer (a small Buffer's is Node's shared pool)", async () => {
    const { toolbox } = setup([tool('bytes', { type: 'object' }, () => ({ b: Buffer.from('abc'), f: new Float64Array(new ArrayBuffer(64), 8, 2) }))]);
    const { value } = (await toolbox.call('bytes', {})) as { value: { b: Uint8Array; f: Float64Array } };
    expect(Object.getPrototypeOf(value.b)).toBe(Uint8Array.prototype);
    expect(Buffer.from(value.b.buffer).toString()).toBe('abc');
    expect(value.f).toBeInstanceOf(Float64Array);
    expect(value.f.buffer.byteLength).toBe(16);
  });

  it('gives a tool_error saying so when the value cannot be cloned', async () => {
    const { toolbox } = setup([tool('leaky', { type: 'object' }, () => ({ format: () => 'x' }))]);
    const error = errorOf(await toolbox.call('leaky', {}));
    expect(error.code).toBe('tool_error');
    expect(error.message).toContain('leaky returned a value that cannot be cloned');
    expect(error.message).toContain('tools must return plain data');
  });

  it('refuses a function or a symbol returned bare, and gives strings, numbers, booleans and bigints as they are', async () => {
    const { toolbox } = setup([
      tool('fn', { type: 'object' }, () => () => 1),
      tool('sym', { type: 'object' }, () => Symbol('world')),
      tool('plain', { type: 'object', properties: { v: {} } }, (_s: World, input: { v: number }) => [7, 'seven', true, 7n][input.v]),
    ]);
    expect(errorOf(await toolbox.call('fn', {})).message).toContain('fn returned a value that cannot be cloned');
    expect(errorOf(await toolbox.call('sym', {})).message).toContain('sym returned a value that cannot be cloned');
    const values = [];
    for (let v = 0; v < 4; v++) values.push((await toolbox.call('plain', { v })) as { value: unknown });
    expect(values.map((r) => r.value)).toEqual([7, 'seven', true, 7n]);
  });

  it('turns undefined into null', async () => {
    const { toolbox } = setup([tool('noop', { type: 'object' }, () => undefined)]);
    expect(await toolbox.call('noop', {})).toEqual({ ok: true, value: null });
  });

  it('awaits async tools, their values and their rejections', async () => {
    const { state, toolbox } = setup([
      tool('slow_deactivate', ID, async (s: World, input: { user_id: string }) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        s.users[input.user_id]!.active = false;
        return { deactivated: input.user_id };
      }),
      tool('slow_fail', { type: 'object' }, async () => {
        await Promise.resolve();
        throw new Error('database offline');
      }),
    ]);
    expect(await toolbox.call('slow_deactivate', { user_id: 'u2' })).toEqual({ ok: true, value: { deactivated: 'u2' } });
    expect(state.users.u2!.active).toBe(false);
    expect(errorOf(await toolbox.call('slow_fail', {}))).toEqual({ code: 'tool_error', message: 'database offline' });
  });

  it('answers at once when run returns a value, and awaits a promise or any thenable it returns', async () => {
    const { toolbox } = setup([
      tool('now', { type: 'object' }, () => ({ at: 1 })),
      tool('later', { type: 'object' }, () => Promise.resolve({ at: 2 })),
      // Not a Promise: awaited all the same, as `await` would.
      tool('thenable', { type: 'object' }, () => ({ then: (resolve: (v: unknown) => void) => resolve({ at: 3 }) })),
      tool('thenable_fails', { type: 'object' }, () => ({ then: (_: unknown, reject: (e: unknown) => void) => reject(new Error('no')) })),
      tool('throws_at_once', { type: 'object' }, () => {
        throw new Error('at once');
      }),
    ]);
    const now = toolbox.call('now', {});
    expect(now).not.toBeInstanceOf(Promise);
    expect(now).toEqual({ ok: true, value: { at: 1 } });
    expect(toolbox.call('throws_at_once', {})).toEqual({ ok: false, error: { code: 'tool_error', message: 'at once' } });
    const later = toolbox.call('later', {});
    expect(later).toBeInstanceOf(Promise);
    expect(await later).toEqual({ ok: true, value: { at: 2 } });
    expect(await toolbox.call('thenable', {})).toEqual({ ok: true, value: { at: 3 } });
    expect(errorOf(await toolbox.call('thenable_fails', {}))).toEqual({ code: 'tool_error', message: 'no' });
  });

  it('passes the rollout context to run', async () => {
    const seen = vi.fn();
    const { toolbox } = setup([tool('clock', { type: 'object' }, (_s, _i, ctx) => seen(ctx.seed, ctx.now()))]);
    await toolbox.call('clock', {});
    expect(seen).toHaveBeenCalledWith(7, Date.UTC(2025, 0, 1));
  });
});

describe('toolSchemas', () => {
  it('gives name, description and the enforced (closed) schema, never run', () => {
    const env = environment({}, [tool('get_user', ID)]);
    const [schema] = toolSchemas(env);
    expect(schema).toEqual({ name: 'get_user', description: 'the get_user tool', inputSchema: { ...ID, additionalProperties: false } });
    expect(schema).not.toHaveProperty('run');
    expect(bindTools(env, {}, createContext(1, undefined)).schemas).toEqual([schema]);
  });
});

describe('a tool that throws something that is not an Error', () => {
  it('still answers tool_error, even for a value that cannot be turned into text', async () => {
    const weird = Object.create(null) as object;
    const env = environment({ n: 0 }, [
      tool('weird', { type: 'object', properties: {} }, () => {
        throw weird;
      }),
    ]);
    const box = bindTools(env, { n: 0 }, createContext(1, undefined));
    const result = await box.call('weird', {});
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.code).toBe('tool_error');
    expect(!result.ok && result.error.message).toMatch(/weird failed: .*cannot be turned into text/);
  });
});
