/** Views handed to an agent's worker hold their own bytes only (src/pool/views.ts). */
import { describe, expect, it } from 'vitest';
import { copyForWorker, exactView, ownBytes } from '../../src/pool/views.js';
import { WriteTracker } from '../../src/rollout/track.js';

/** A Buffer sliced from Node's shared pool, with a secret of the host's in the pool next to it. */
function pooled(text: string): Buffer {
  Buffer.from('host-secret-4711 in the pool');
  const buffer = Buffer.from(text);
  expect(buffer.buffer.byteLength).toBeGreaterThan(buffer.length);
  return buffer;
}

/** A view over exactly its bytes: a buffer of its own, nothing before or after. */
function expectExact(view: ArrayBufferView, bytes: number[] | Uint8Array): void {
  expect(view.byteOffset).toBe(0);
  expect(view.buffer.byteLength).toBe(view.byteLength);
  expect([...new Uint8Array(view.buffer)]).toEqual([...bytes]);
  expect(Buffer.from(view.buffer).includes('host-secret')).toBe(false);
}

/** A view of `type` in the middle of a larger buffer, with its bytes. */
function middle<T extends ArrayBufferView>(make: (buffer: ArrayBuffer, offset: number) => T): { view: T; bytes: Uint8Array } {
  const buffer = new ArrayBuffer(64);
  new Uint8Array(buffer).set(Buffer.from('host-secret-4711'), 0);
  new Uint8Array(buffer).set(Buffer.from('host-secret-4711'), 48);
  for (let i = 16; i < 48; i++) new Uint8Array(buffer)[i] = i;
  const view = make(buffer, 16);
  return { view, bytes: new Uint8Array(buffer, view.byteOffset, view.byteLength).slice() };
}

describe('copyForWorker', () => {
  it("gives a pooled Buffer's bytes and not the pool's, as the Uint8Array structuredClone makes of a Buffer", () => {
    // What it fixes: structuredClone takes the whole 8 KiB pool along.
    expect(structuredClone(pooled('abc')).buffer.byteLength).toBeGreaterThan(3);
    const copy = copyForWorker(pooled('abc'));
    expect(Object.getPrototypeOf(copy)).toBe(Uint8Array.prototype);
    expectExact(copy, [...Buffer.from('abc')]);
  });

  it('keeps each view its type, with exactly its bytes', () => {
    const views: [string, ArrayBufferView, Uint8Array][] = [];
    const types = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
    for (const Type of types) {
      const { view, bytes } = middle((b, o) => new Type(b, o, 16 / Type.BYTES_PER_ELEMENT));
      views.push([Type.name, view, bytes]);
    }
    const dataView = middle((b, o) => new DataView(b, o + 1, 7));
    views.push(['DataView', dataView.view, dataView.bytes]);
    for (const [name, view, bytes] of views) {
      const copy = copyForWorker(view);
      expect(Object.prototype.toString.call(copy), name).toBe(`[object ${name}]`);
      expectExact(copy, bytes);
      if (!(view instanceof DataView)) expect([...(copy as unknown as Iterable<unknown>)], name).toEqual([...(view as unknown as Iterable<unknown>)]);
    }
  });

  it('finds views wherever a clone can hold them: objects, arrays and their other properties, Maps, Sets, an error’s cause', () => {
    const list: unknown[] = [1, pooled('in-array'), { deep: [pooled('deep')] }];
    Object.assign(list, { named: pooled('named') });
    const value = {
      a: pooled('a'),
      list,
      map: new Map<unknown, unknown>([
        ['first', 1],
        [pooled('key'), pooled('value')],
        ['last', { b: pooled('b') }],
      ]),
      set: new Set<unknown>(['x', pooled('member'), 'y']),
      error: new Error('failed', { cause: pooled('cause') }),
    };
    const copy = copyForWorker(value);
    const found: string[] = [];
    const check = (view: unknown, text: string): void => {
      expectExact(view as Uint8Array, [...Buffer.from(text)]);
      found.push(text);
    };
    check(copy.a, 'a');
    check(copy.list[1], 'in-array');
    check((copy.list[2] as { deep: unknown[] }).deep[0], 'deep');
    check((copy.list as unknown as { named: unknown }).named, 'named');
    const entries = [...copy.map];
    // Entries keep their order.
    expect(entries.map(([k]) => (typeof k === 'string' ? k : 'view'))).toEqual(['first', 'view', 'last']);
    check(entries[1]![0], 'key');
    check(entries[1]![1], 'value');
    check((entries[2]![1] as { b: unknown }).b, 'b');
    const members = [...copy.set];
    expect(members[0]).toBe('x');
    expect(members[2]).toBe('y');
    check(members[1], 'member');
    expect(copy.error).toBeInstanceOf(Error);
    check(copy.error.cause, 'cause');
    expect(found).toHaveLength(9);
  });

  it('keeps what structuredClone shares shared: a view reached twice, a cycle, a view of a buffer handed over whole', () => {
    const buffer = pooled('twice');
    const cycle: Record<string, unknown> = { buffer };
    cycle.self = cycle;
    const whole = new ArrayBuffer(16);
    const copy = copyForWorker({ one: buffer, two: buffer, cycle, whole, ofWhole: new Uint8Array(whole, 4, 4) });
    expect(copy.one).toBe(copy.two);
    expect(copy.cycle.buffer).toBe(copy.one);
    expect(copy.cycle.self).toBe(copy.cycle);
    expectExact(copy.one, [...Buffer.from('twice')]);
    // Its whole buffer was handed over anyway: the view stays a view of it, as structuredClone has it.
    expect(copy.ofWhole.buffer).toBe(copy.whole);
    expect(copy.ofWhole.byteOffset).toBe(4);
  });

  it('gives two views of one buffer a buffer each, so neither brings the bytes between them', () => {
    const shared = new Uint8Array(32).fill(7);
    const copy = copyForWorker({ head: shared.subarray(0, 4), tail: shared.subarray(28) });
    expectExact(copy.head, [7, 7, 7, 7]);
    expectExact(copy.tail, [7, 7, 7, 7]);
    expect(copy.head.buffer).not.toBe(copy.tail.buffer);
  });

  it('gives a view of shared memory memory of its own (structuredClone would share it with the worker)', () => {
    const shared = new Int32Array(new SharedArrayBuffer(16), 4, 2);
    shared.set([5, 6]);
    expect(structuredClone(shared).buffer).toBeInstanceOf(SharedArrayBuffer);
    const copy = copyForWorker(shared);
    expect(copy).toBeInstanceOf(Int32Array);
    expect(copy.buffer).toBeInstanceOf(ArrayBuffer);
    expect([...copy]).toEqual([5, 6]);
    expect(copy.buffer.byteLength).toBe(8);
  });

  it('copies through tracking proxies, as structuredClone does for tools', () => {
    const world = { records: { r1: { name: 'Ada', blob: pooled('blob') } } };
    const tracker = new WriteTracker(world);
    const copy = copyForWorker(tracker.view.records);
    expect(copy.r1.name).toBe('Ada');
    expectExact(copy.r1.blob, [...Buffer.from('blob')]);
    // The world's own Buffer is untouched.
    expect(world.records.r1.blob.buffer.byteLength).toBeGreaterThan(4);
  });

  it('gives the same value as structuredClone for data without views', () => {
    const value = { when: new Date(0), re: /x/g, big: 12n, nested: [{ a: 1 }, null, 'text'], map: new Map([[1, { b: 2 }]]), buffer: new ArrayBuffer(3) };
    expect(copyForWorker(value)).toStrictEqual(structuredClone(value));
  });
});

describe('ownBytes', () => {
  it('leaves a value without views as it is, and a primitive too', () => {
    const value = { a: [1, 2, { b: 'c' }], m: new Map([['k', 'v']]) };
    expect(ownBytes(value)).toBe(value);
    expect(ownBytes(value)).toEqual({ a: [1, 2, { b: 'c' }], m: new Map([['k', 'v']]) });
    expect(ownBytes('text')).toBe('text');
    expect(ownBytes(null)).toBe(null);
  });

  it('keeps an own __proto__ key an own property holding the copy, and the prototype as it was', () => {
    const value = JSON.parse('{"__proto__": 1}') as Record<string, unknown>;
    Object.defineProperty(value, '__proto__', { value: pooled('proto'), enumerable: true, writable: true, configurable: true });
    const copy = ownBytes(value);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expectExact(Object.getOwnPropertyDescriptor(copy, '__proto__')!.value as Uint8Array, [...Buffer.from('proto')]);
  });
});

describe('exactView', () => {
  it('keeps a Buffer a Buffer (what V8’s deserializer reads back for one)', () => {
    const copy = exactView(pooled('buffer'));
    expect(Buffer.isBuffer(copy)).toBe(true);
    expect(copy.toString()).toBe('buffer');
    expectExact(copy, [...Buffer.from('buffer')]);
  });
});
