import { describe, expect, it } from 'vitest';
import { findAliasedObjects, findDifferences, findSharedObjects, formatPath } from '../../src/check/walk.js';

const seed = () => ({ users: { u1: { name: 'Ada', tags: ['admin'] }, u2: { name: 'Bo', tags: [] } }, settings: { theme: 'dark' } });

describe('findSharedObjects', () => {
  it('finds nothing between two deep copies', () => {
    const a = seed();
    expect(findSharedObjects(a, structuredClone(a))).toEqual({ total: 0, first: [] });
  });

  it('names the world itself when both calls return one object', () => {
    const a = seed();
    const found = findSharedObjects(a, a);
    expect(found.total).toBe(1);
    expect(formatPath(found.first[0]!.path)).toBe('(the world itself)');
  });

  it('names a nested object both worlds hold, and not the objects below it', () => {
    const cached = { name: 'Ada', tags: ['admin'] };
    const a = { ...seed(), users: { u1: cached, u2: { name: 'Bo', tags: [] } } };
    const b = { ...seed(), users: { u1: cached, u2: { name: 'Bo', tags: [] } } };
    expect(findSharedObjects(a, b)).toEqual({ total: 1, first: [{ path: ['users', 'u1'], pathInFirst: ['users', 'u1'] }] });
  });

  it('finds an array shared at different paths of the two worlds', () => {
    const list = ['x'];
    const found = findSharedObjects({ old: { list } }, { fresh: [{ list }] });
    expect(found.first).toEqual([{ path: ['fresh', 0, 'list'], pathInFirst: ['old', 'list'] }]);
  });

  it('reports shared objects in reading order, counts them all and shows at most `limit`', () => {
    const shared = Array.from({ length: 8 }, (_, i) => ({ i }));
    const a = { items: shared };
    const b = { items: [...shared] };
    const found = findSharedObjects(a, b, 3);
    expect(found.total).toBe(8);
    expect(found.first.map((s) => formatPath(s.path))).toEqual(['items.0', 'items.1', 'items.2']);
  });

  it('walks cyclic worlds without looping', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    const b: Record<string, unknown> = { name: 'b' };
    b.self = b;
    expect(findSharedObjects(a, b).total).toBe(0);
  });

  it('looks inside Maps and Sets', () => {
    const inner = { n: 1 };
    expect(findSharedObjects({ m: new Map([['k', inner]]) }, { m: new Map([['k', inner]]) }).first[0]!.path).toEqual(['m', 'k']);
    expect(findSharedObjects({ s: new Set([inner]) }, { s: new Set([inner]) }).first[0]!.path).toEqual(['s', 0]);
  });
});

describe('findAliasedObjects', () => {
  it('finds nothing in a tree', () => {
    expect(findAliasedObjects(seed()).total).toBe(0);
  });

  it('names an object held at two paths of one world', () => {
    const address = { city: 'Oslo' };
    const found = findAliasedObjects({ users: { u1: { address } }, orders: { o1: { address } } });
    expect(found.total).toBe(1);
    expect(found.first[0]).toEqual({ path: ['orders', 'o1', 'address'], firstPath: ['users', 'u1', 'address'] });
  });

  it('names a cycle', () => {
    const world: Record<string, unknown> = {};
    world.parent = { child: world };
    expect(findAliasedObjects(world).first[0]).toEqual({ path: ['parent', 'child'], firstPath: [] });
  });
});

describe('findDifferences', () => {
  it('finds nothing between equal worlds, whatever the key order', () => {
    expect(findDifferences({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toEqual({ total: 0, first: [] });
  });

  it('names the first differing path and both values', () => {
    const found = findDifferences({ users: { u1: { score: 0.25 } } }, { users: { u1: { score: 0.75 } } });
    expect(found).toEqual({ total: 1, first: [{ path: ['users', 'u1', 'score'], first: 0.25, second: 0.75 }] });
  });

  it('names a key only one world has, and an array element only one has', () => {
    const found = findDifferences({ a: 1, list: [1] }, { b: 1, list: [1, 2] });
    expect(found.first.map((d) => formatPath(d.path))).toEqual(['a', 'list.1', 'b']);
    expect(found.first[0]!.second).toBeUndefined();
  });

  it('tells arrays from objects and null from objects', () => {
    expect(findDifferences({ x: [] }, { x: {} }).total).toBe(1);
    expect(findDifferences({ x: null }, { x: {} }).total).toBe(1);
  });

  it('treats NaN as equal to NaN and compares dates by time', () => {
    expect(findDifferences({ x: NaN }, { x: NaN }).total).toBe(0);
    expect(findDifferences({ at: new Date(0) }, { at: new Date(0) }).total).toBe(0);
    expect(findDifferences({ at: new Date(0) }, { at: new Date(1) }).first[0]!.path).toEqual(['at']);
  });

  it('counts every difference but shows at most `limit`', () => {
    const a = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i]));
    const b = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, -i - 1]));
    const found = findDifferences(a, b, 3);
    expect(found.total).toBe(10);
    expect(found.first).toHaveLength(3);
  });

  it('compares cyclic worlds without looping', () => {
    const a: Record<string, unknown> = { n: 1 };
    a.self = a;
    const b: Record<string, unknown> = { n: 2 };
    b.self = b;
    expect(findDifferences(a, b).first.map((d) => d.path)).toEqual([['n']]);
  });
});
