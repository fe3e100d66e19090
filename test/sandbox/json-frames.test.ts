/**
 * Messages through the sealed link (src/sandbox/link.ts), to a worker or between host and sandbox
 * (a run's task, a rollout's exit), go as JSON text when JSON carries them exactly (jsonExact),
 * else in V8's serialization: either way what arrives is what structured clone would give.
 */
import { describe, expect, it } from 'vitest';
import type { Socket } from 'node:net';
import { FrameReader, FrameWriter, jsonExact, newKey, TO_SANDBOX, type Incoming } from '../../src/sandbox/link.js';

/** What a message sent with toWorker (or, `how` 'message', with message) arrives as, and the bytes of its frame. */
function through(message: unknown, how: 'toWorker' | 'message' = 'toWorker'): { arrived: unknown; bytes: number } {
  const key = newKey();
  const wire: Buffer[] = [];
  const socket = { destroyed: false, cork: () => {}, uncork: () => {}, write: (b: Buffer) => wire.push(Buffer.from(b)) } as unknown as Socket;
  const got: Incoming[] = [];
  const broken: string[] = [];
  const writer = new FrameWriter(socket, key, TO_SANDBOX);
  if (how === 'message') writer.message(message);
  else writer.toWorker(3, message);
  new FrameReader(key, TO_SANDBOX, () => true, (f) => got.push(f), (r) => broken.push(r)).push(Buffer.concat(wire));
  expect(broken).toEqual([]);
  expect(got).toHaveLength(1);
  expect(got[0]).toMatchObject(how === 'message' ? { kind: 'message' } : { kind: 'to', id: 3 });
  return { arrived: (got[0] as { message: unknown }).message, bytes: Buffer.concat(wire).length };
}

/** The bytes of a frame carrying `message` as JSON text: length, kind (and a rollout id, toWorker), text, tag. */
const jsonFrameBytes = (message: unknown, how: 'toWorker' | 'message'): number => 4 + (how === 'message' ? 1 : 5) + Buffer.byteLength(JSON.stringify(message)) + 16;

const result = (value: unknown): unknown => ({ brand: 'silo/1', type: 'result', id: 1, result: { ok: true, value } });

describe('messages to a worker through the sealed link', () => {
  it('take JSON for plain data', () => {
    const proto = JSON.parse('{"__proto__":{"x":1},"a":[1,"two",null,true,{"b":-1.5}]}') as unknown;
    for (const value of [null, 0, 'text ☕ \ud800', [1, [2, [3]]], { a: { b: [] } }, proto, Object.assign(Object.create(null) as object, { a: 1 })]) {
      expect(jsonExact(result(value), 10_000)).toBeGreaterThanOrEqual(0);
      const { arrived, bytes } = through(result(value));
      expect(arrived).toStrictEqual(structuredClone(result(value)));
      expect(bytes).toBe(jsonFrameBytes(result(value), 'toWorker'));
    }
    // An own "__proto__" stays an own property, not the prototype.
    const { arrived } = through(result(proto));
    const value = (arrived as { result: { value: Record<string, unknown> } }).result.value;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.hasOwn(value, '__proto__')).toBe(true);
  });

  it('take V8 serialization for whatever JSON would change, and arrive as structured clone gives them', () => {
    const shared = { s: 1 };
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const extra = Object.assign([1, 2], { label: 'x' });
    // eslint-disable-next-line no-sparse-arrays
    const hole = [1, , 3];
    class Point {
      constructor(readonly x = 1) {}
      toJSON(): string {
        return 'a point';
      }
    }
    let deep: unknown = 'bottom';
    for (let i = 0; i < 150; i++) deep = [deep];
    const values: [string, unknown][] = [
      ['a Date', new Date(5)],
      ['a Map', new Map([[1, 2]])],
      ['a BigInt', 12n],
      ['undefined in an object', { u: undefined }],
      ['undefined in an array', [undefined]],
      ['-0', -0],
      ['NaN', NaN],
      ['Infinity', Infinity],
      ['a hole', hole],
      ['an array with a property', extra],
      ['a value reached twice', { a: shared, b: shared }],
      ['a cycle', cycle],
      ['a class instance with toJSON', new Point()],
      ['a typed array', new Uint8Array([1, 2])],
      ['a boxed string', Object('s') as unknown],
      ['nesting past the depth looked at', deep],
      ['more values than looked at', Array.from({ length: 20_000 }, (_, i) => i)],
    ];
    for (const [what, value] of values) {
      expect(jsonExact(result(value), 10_000), what).toBe(-1);
      const { arrived } = through(result(value));
      const expected = structuredClone(result(value)) as { result: { value: unknown } };
      const got = arrived as { result: { value: unknown } };
      expect(got, what).toStrictEqual(expected);
      if (what === '-0') expect(Object.is(got.result.value, -0)).toBe(true);
      if (what === 'a value reached twice') {
        const v = got.result.value as { a: unknown; b: unknown };
        expect(v.a).toBe(v.b);
      }
      if (what === 'a cycle') {
        const v = got.result.value as { self: unknown };
        expect(v.self).toBe(v);
      }
      if (what === 'a hole') expect(1 in (got.result.value as unknown[])).toBe(false);
      if (what === 'an array with a property') expect((got.result.value as { label?: string }).label).toBe('x');
    }
  });

  it('other messages (a run, an exit) take JSON too when it carries them exactly, else V8 serialization', () => {
    const run = { t: 'run', id: 4, task: { instruction: 'café ☕', tools: [{ name: 'get', inputSchema: { type: 'object' } }], limits: { timeoutMs: 1000 } }, memoryMb: 512, env: {}, readable: ['/a/*'] };
    for (const message of [run, { t: 'exit', id: 4, exit: { kind: 'exited', message: 'done' } }, { t: 'ping' }]) {
      const { arrived, bytes } = through(message, 'message');
      expect(arrived).toStrictEqual(structuredClone(message));
      expect(bytes).toBe(jsonFrameBytes(message, 'message'));
    }
    for (const message of [{ t: 'run', task: { options: { when: new Date(5), u: undefined } } }, { t: 'run', task: { options: { n: 12n } } }, { t: 'exit', exit: { message: -0 } }]) {
      expect(jsonExact(message, 10_000)).toBe(-1);
      const { arrived } = through(message, 'message');
      expect(arrived).toStrictEqual(structuredClone(message));
    }
    expect(Object.is((through({ t: 'exit', exit: { message: -0 } }, 'message').arrived as { exit: { message: number } }).exit.message, -0)).toBe(true);
  });

  it('are sealed either way: the text is not on the wire', () => {
    const key = newKey();
    const wire: Buffer[] = [];
    const socket = { destroyed: false, cork: () => {}, uncork: () => {}, write: (b: Buffer) => wire.push(Buffer.from(b)) } as unknown as Socket;
    new FrameWriter(socket, key, TO_SANDBOX).toWorker(1, result('neighbour-secret-4711'));
    expect(Buffer.concat(wire).includes('neighbour-secret')).toBe(false);
  });
});
