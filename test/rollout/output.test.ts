import { describe, it, expect } from 'vitest';
import { captureOutput, capText } from '../../src/rollout/output.js';

const MB = 1024 * 1024;

describe('captureOutput', () => {
  it('keeps a string as it is', () => {
    expect(captureOutput('3 tickets', MB)).toEqual({ output: '3 tickets', truncated: false });
    expect(captureOutput('', MB)).toEqual({ output: '', truncated: false });
  });

  it('turns undefined into null', () => {
    expect(captureOutput(undefined, MB)).toEqual({ output: null, truncated: false });
  });

  it('writes anything else as JSON', () => {
    expect(captureOutput({ count: 3, ids: ['t1'] }, MB)).toEqual({ output: '{"count":3,"ids":["t1"]}', truncated: false });
    expect(captureOutput(42, MB).output).toBe('42');
    expect(captureOutput(null, MB).output).toBe('null');
    expect(captureOutput(false, MB).output).toBe('false');
    expect(captureOutput([1, 'a'], MB).output).toBe('[1,"a"]');
  });

  it('leaves out what JSON leaves out of an object (a function, an undefined property)', () => {
    expect(captureOutput({ n: 1, f: () => 1, u: undefined }, MB)).toEqual({ output: '{"n":1}', truncated: false });
  });

  it('records a BigInt as null, saying where it is', () => {
    expect(captureOutput({ total: 10n }, MB)).toEqual({ output: null, truncated: false, error: "the agent's output could not be recorded: it holds a BigInt (at .total)" });
    expect(captureOutput(10n, MB).error).toBe("the agent's output could not be recorded: it is a BigInt");
    expect(captureOutput([1, { 'odd key': [2n] }], MB).error).toBe('the agent\'s output could not be recorded: it holds a BigInt (at [1]["odd key"][0])');
  });

  it('records a circular value as null, saying where the circle closes', () => {
    const loop: Record<string, any> = { a: { b: {} } };
    loop.a.b.c = loop.a;
    expect(captureOutput(loop, MB)).toEqual({ output: null, truncated: false, error: "the agent's output could not be recorded: it is circular (at .a.b.c)" });
    // The same object twice, not inside itself, is no circle.
    const shared = { x: 1 };
    expect(captureOutput({ a: shared, b: [shared] }, MB).output).toBe('{"a":{"x":1},"b":[{"x":1}]}');
  });

  it('records a value with no JSON form (a function, a symbol) as null with the reason', () => {
    expect(captureOutput(() => 1, MB)).toEqual({ output: null, truncated: false, error: "the agent's output could not be recorded: a function has no JSON form" });
    expect(captureOutput(Symbol('x'), MB).error).toBe("the agent's output could not be recorded: a symbol has no JSON form");
  });

  it('never throws, even for a value whose toJSON or getter throws, or one too deep to walk', () => {
    const hostile = {
      toJSON() {
        throw new Error('gotcha');
      },
    };
    expect(captureOutput({ list: [hostile] }, MB)).toEqual({ output: null, truncated: false, error: "the agent's output could not be recorded: its toJSON threw (at .list[0]): gotcha" });
    const getter = {
      get secret(): never {
        throw new Error('no');
      },
    };
    expect(captureOutput(getter, MB).error).toBe("the agent's output could not be recorded: reading .secret threw: no");
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 100_000; i++) deep = (deep.n = {}) as Record<string, unknown>;
    expect(captureOutput(root, MB).error).toMatch(/^the agent's output could not be recorded: JSON failed: Maximum call stack size exceeded$/);
  });

  it('truncates JSON output too', () => {
    const captured = captureOutput({ text: 'x'.repeat(100) }, 20);
    expect(captured).toEqual({ output: '{"text":"xxxxxxxxxxx', truncated: true });
  });
});

describe('capText', () => {
  it('keeps text at the limit untouched', () => {
    expect(capText('abcde', 5)).toEqual({ output: 'abcde', truncated: false });
    expect(capText('éé', 4)).toEqual({ output: 'éé', truncated: false });
  });

  it('cuts at the byte limit and says so', () => {
    expect(capText('abcdef', 4)).toEqual({ output: 'abcd', truncated: true });
  });

  it('never splits a multi-byte character', () => {
    // é is 2 bytes, € 3, 😀 4.
    expect(capText('éééé', 5)).toEqual({ output: 'éé', truncated: true });
    expect(capText('a€b', 3)).toEqual({ output: 'a', truncated: true });
    expect(capText('😀😀', 7)).toEqual({ output: '😀', truncated: true });
    expect(capText('😀', 3)).toEqual({ output: '', truncated: true });
  });

  it('gives a prefix that fits, whatever the limit', () => {
    const text = 'aé€😀'.repeat(20);
    for (let max = 0; max <= Buffer.byteLength(text); max++) {
      const { output, truncated } = capText(text, max);
      expect(Buffer.byteLength(output!)).toBeLessThanOrEqual(max);
      expect(text.startsWith(output!)).toBe(true);
      // Nothing more could have fit: the next character would cross the limit.
      if (truncated) {
        const next = String.fromCodePoint(text.codePointAt(output!.length)!);
        expect(Buffer.byteLength(output! + next)).toBeGreaterThan(max);
      }
    }
  });
});
