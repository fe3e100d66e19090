/** How the worker encodes a call (src/pool/worker-runtime.ts encodeCall): the input serialised once. */
import { describe, expect, it } from 'vitest';
import { encodeCall } from '../../src/pool/worker-runtime.js';
import { BRAND } from '../../src/protocol.js';

/** The message as the worker built it before: an object whose input is a parse of its own JSON, stringified whole. */
function asBefore(id: number, name: string, input: unknown, maxBytes: number): string {
  const base = { brand: BRAND, type: 'call' as const, id, name };
  let text: string | undefined;
  try {
    text = JSON.stringify(input === undefined ? {} : input);
  } catch (err) {
    return JSON.stringify({ ...base, inputBytes: 0, inputError: { kind: 'unserialisable', message: (err as Error).message } });
  }
  if (text === undefined) return JSON.stringify({ ...base, inputBytes: 0, inputError: { kind: 'unserialisable', message: `a ${typeof input} has no JSON form` } });
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) return JSON.stringify({ ...base, inputBytes: bytes, inputError: { kind: 'too_large', message: `input is ${bytes} bytes` } });
  return JSON.stringify({ ...base, input: JSON.parse(text) as unknown, inputBytes: bytes });
}

describe('encodeCall', () => {
  const proto = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as unknown;
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const inputs: [string, unknown][] = [
    ['an object', { n: 1, s: 'x' }],
    ['no input', undefined],
    ['unicode, escapes and lone surrogates', { s: 'café ☕ "q" \\ \n \u0000 \ud800 \udc00', '😀': 'e\u0301' }],
    ['integer-like keys after others', { b: 1, 2: 'two', a: [1, { 1: 0, x: null }], 1: 'one' }],
    ['an own __proto__ key', proto],
    ['a toJSON', { when: new Date(0), custom: { toJSON: () => 'mine' } }],
    ['numbers', { big: 1e300, small: 5e-324, neg: -0, nan: NaN, inf: -Infinity }],
    ['undefined and functions inside', { u: undefined, f: () => 1, arr: [undefined, () => 1] }],
    ['a name that needs escaping', { n: 1 }],
    ['a BigInt', { n: 1n }],
    ['a cycle', cycle],
    ['a function', () => 1],
    ['a symbol', Symbol('s')],
    ['too large', { s: 'x'.repeat(200) }],
  ];
  for (const [what, input] of inputs) {
    it(`gives the same text as stringifying the whole message: ${what}`, () => {
      const name = what === 'a name that needs escaping' ? 'we"ird\n☕' : 'tool';
      const text = encodeCall(7, name, input, 100);
      expect(text).toBe(asBefore(7, name, input, 100));
      // Which is JSON, and what the host expects of a call.
      expect(JSON.parse(text)).toMatchObject({ brand: BRAND, type: 'call', id: 7, name });
    });
  }

  it('measures the input in UTF-8 bytes and refuses it past the cap', () => {
    expect(JSON.parse(encodeCall(1, 't', { s: 'é' }, 100))).toMatchObject({ input: { s: 'é' }, inputBytes: 10 });
    expect(JSON.parse(encodeCall(1, 't', { s: 'é'.repeat(10) }, 20))).toEqual({
      brand: BRAND,
      type: 'call',
      id: 1,
      name: 't',
      inputBytes: 28,
      inputError: { kind: 'too_large', message: 'input is 28 bytes' },
    });
  });
});
