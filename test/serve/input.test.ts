import { describe, expect, it } from 'vitest';
import { MAX_INPUT_DEPTH } from '../../src/options.js';
import { callMessage } from '../../src/serve/input.js';

describe('callMessage (an MCP call made into a tool-call message)', () => {
  it('carries plain JSON data, a fresh copy of the arguments', () => {
    const args = { ticket_id: 't1', tags: ['a'] };
    const msg = callMessage(3, 'get_ticket', args, 1_000);
    expect(msg).toMatchObject({ id: 3, name: 'get_ticket', input: args, inputBytes: JSON.stringify(args).length });
    expect(msg.input).not.toBe(args);
    expect(callMessage(1, 'ping', undefined, 1_000).input).toEqual({});
  });

  it('refuses an input over maxMessageBytes, measured in UTF-8 bytes', () => {
    const msg = callMessage(1, 'record', { value: 'é'.repeat(600) }, 1_000);
    expect(msg.input).toBeUndefined();
    expect(msg.inputError).toEqual({ kind: 'too_large', message: 'input is 1212 bytes' });
  });

  it('refuses an input nested deeper than MAX_INPUT_DEPTH', () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_INPUT_DEPTH; i++) deep = [deep];
    expect(callMessage(1, 'record', { value: deep }, 1e6).inputError?.kind).toBe('too_deep');
    expect(callMessage(1, 'record', deep, 1e6).inputError).toBeUndefined();
  });

  it('refuses "__proto__" keys and "constructor" keys that hold objects, at any depth', () => {
    const proto = JSON.parse('{"data":{"__proto__":{"polluted":true}}}') as unknown;
    expect(callMessage(1, 'merge', proto, 1e6).inputError).toEqual({ kind: 'forbidden_key', message: '"__proto__" is not allowed as a property name' });
    expect(callMessage(1, 'merge', { data: { constructor: { prototype: {} } } }, 1e6).inputError?.kind).toBe('forbidden_key');
    expect(callMessage(1, 'merge', { data: { constructor: 'text is fine' } }, 1e6).inputError).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('caps a tool name as the host caps a worker\'s, so it names no tool and cannot flood the trace', () => {
    const msg = callMessage(1, 'x'.repeat(1_000_000), {}, 1e6);
    expect(msg.name.length).toBeLessThan(400);
    expect(msg.name).toMatch(/… \(1000000 characters\)$/);
    expect(callMessage(1, 'get_ticket', {}, 1e6).name).toBe('get_ticket');
  });

  it('refuses arguments with no JSON form', () => {
    expect(callMessage(1, 'record', { value: 10n }, 1e6).inputError?.kind).toBe('unserialisable');
  });
});
