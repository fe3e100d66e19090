import { describe, it, expect } from 'vitest';
import { applyChanges, changePath, diffWorld } from '../../src/rollout/diff.js';
import { seededRandom } from '../../src/rollout/state.js';

/** Diffs initial → final and checks that the recorded changes rebuild final exactly from initial. */
function roundTrip(initial: unknown, final: unknown): void {
  const before = structuredClone(initial);
  const changes = diffWorld(initial, final);
  // What state-diff.json holds: the records as JSON.
  const stored = JSON.parse(JSON.stringify(changes)) as typeof changes;
  expect(applyChanges(initial, stored)).toStrictEqual(final);
  expect(applyChanges(initial, changes)).toStrictEqual(final);
  expect(initial).toStrictEqual(before);
}

/** Applies `edit` to a copy of `initial` and checks the round trip. */
function edited<T>(initial: T, edit: (world: T) => void): void {
  const final = structuredClone(initial);
  edit(final);
  roundTrip(initial, final);
}

describe('diffWorld', () => {
  it('is empty when nothing changed', () => {
    expect(diffWorld({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toEqual([]);
  });

  it('records deep-diff change records with kind and path', () => {
    const changes = diffWorld({ users: { u1: { active: true } } }, { users: { u1: { active: false } } });
    expect(JSON.parse(JSON.stringify(changes))).toEqual([{ kind: 'E', path: ['users', 'u1', 'active'], lhs: true, rhs: false }]);
  });

  it('records an array change with its index and item', () => {
    const changes = diffWorld({ tags: ['a'] }, { tags: ['a', 'b'] });
    expect(JSON.parse(JSON.stringify(changes))).toEqual([{ kind: 'A', path: ['tags'], index: 1, item: { kind: 'N', rhs: 'b' } }]);
    expect(changePath(changes[0]!)).toEqual(['tags', 1]);
  });
});

describe('applyChanges(initial, diffWorld(initial, final)) gives final exactly', () => {
  const world = () => ({
    name: 'helpdesk',
    count: 3,
    open: true,
    users: { u1: { name: 'Ada', active: true, tags: ['admin', 'ops'] }, u2: { name: 'Bo', active: false, tags: [] as string[] } },
    tickets: [
      { id: 't1', status: 'open', comments: [{ by: 'u1', body: 'hi' }] },
      { id: 't2', status: 'closed', comments: [] as { by: string; body: string }[] },
      { id: 't3', status: 'open', comments: [{ by: 'u2', body: 'a' }, { by: 'u1', body: 'b' }] },
    ],
    meta: null as unknown,
    grid: [
      [1, 2, 3],
      [4, 5, 6],
    ],
  });

  it('edited scalars', () => {
    edited(world(), (w) => {
      w.name = 'support';
      w.count = 0;
      w.open = false;
      w.users.u1.name = 'Ada L.';
    });
  });

  it('added and removed keys', () => {
    edited(world(), (w) => {
      (w as Record<string, unknown>).added = { deep: { er: [1] } };
      delete (w as Partial<typeof w>).count;
      delete (w.users as Partial<typeof w.users>).u2;
      (w.users as Record<string, unknown>).u3 = { name: 'Cy', active: true, tags: [] };
    });
  });

  it('nested objects', () => {
    edited(world(), (w) => {
      w.users.u1.active = false;
      (w.users.u1 as Record<string, unknown>).profile = { city: 'Oslo', langs: { en: true } };
      w.tickets[0]!.comments[0]!.body = 'hello';
    });
  });

  it('arrays that grow', () => {
    edited(world(), (w) => {
      w.users.u1.tags.push('billing', 'support', 'sales');
      w.users.u2.tags.push('new');
      w.tickets.push({ id: 't4', status: 'open', comments: [] });
    });
  });

  it('arrays that shrink at the end', () => {
    edited(world(), (w) => {
      w.users.u1.tags.pop();
      w.tickets.length = 1;
    });
  });

  it('arrays that lose elements from the middle', () => {
    edited(world(), (w) => {
      w.tickets.splice(1, 1);
      w.users.u1.tags.splice(0, 1);
    });
    edited({ xs: [1, 2, 3, 4, 5, 6, 7] }, (w) => {
      w.xs = w.xs.filter((x) => x % 3 !== 0);
    });
  });

  it('arrays emptied, and arrays filled from empty', () => {
    edited(world(), (w) => {
      w.users.u1.tags = [];
      w.tickets[1]!.comments.push({ by: 'u2', body: 'x' }, { by: 'u1', body: 'y' });
    });
  });

  it('arrays reversed, shuffled and grown and shrunk at once', () => {
    edited(world(), (w) => {
      w.tickets.reverse();
      w.grid = [[6, 5], [4], [3, 2, 1, 0]];
    });
  });

  it('arrays of objects edited in place', () => {
    edited(world(), (w) => {
      w.tickets[0]!.status = 'closed';
      w.tickets[2]!.comments[1]!.body = 'edited';
      w.tickets[2]!.comments.splice(0, 1);
      (w.tickets[1] as Record<string, unknown>).assignee = 'u1';
    });
  });

  it('a key replaced by an object, and an object replaced by a scalar', () => {
    edited(world(), (w) => {
      (w as Record<string, unknown>).count = { value: 3, unit: 'tickets' };
      (w as Record<string, unknown>).users = 'gone';
    });
  });

  it('null to object and object to null', () => {
    edited(world(), (w) => {
      w.meta = { createdBy: 'agent', at: [2025, 1, 1] };
      (w.tickets[0] as Record<string, unknown>).comments = null;
    });
    edited({ a: { b: 1 } as unknown, c: null as unknown }, (w) => {
      w.a = null;
      w.c = { d: [null] };
    });
  });

  it('type changes: array ↔ object, number ↔ string, boolean ↔ array', () => {
    edited(world(), (w) => {
      (w as Record<string, unknown>).grid = { rows: 2 };
      (w.users as Record<string, unknown>).u1 = ['not', 'an', 'object'];
      (w as Record<string, unknown>).name = 42;
      (w as Record<string, unknown>).count = '3';
      (w as Record<string, unknown>).open = [true];
    });
  });

  it('arrays inside arrays', () => {
    edited(world(), (w) => {
      w.grid[0]!.splice(1, 1);
      w.grid[1]!.push(7, 8);
      w.grid.push([9]);
    });
  });

  it('keys that look like numbers', () => {
    edited({ byId: { '1': { n: 1 }, '2': { n: 2 }, '10': { n: 10 } } as Record<string, { n: number }> }, (w) => {
      delete w.byId['2'];
      w.byId['3'] = { n: 3 };
      w.byId['10']!.n = 11;
    });
  });

  it('a world that holds one object in two places (the snapshot keeps the sharing)', () => {
    const team = { name: 'ops', members: ['u1', 'u2', 'u3', 'u4'] };
    const live = { a: { team }, b: { team } };
    const initial = structuredClone(live);
    team.members.splice(1, 2);
    team.name = 'platform';
    (team as Record<string, unknown>).lead = 'u1';
    roundTrip(initial, live);
  });

  it('200 random worlds mutated at random (seeded)', () => {
    const random = seededRandom(20250101);
    for (let i = 0; i < 200; i++) {
      const initial = randomObject(random, 3);
      const final = structuredClone(initial);
      const edits = 1 + Math.floor(random() * 8);
      for (let e = 0; e < edits; e++) mutate(final, random);
      try {
        roundTrip(initial, final);
      } catch (err) {
        throw new Error(`case ${i}: ${JSON.stringify(initial)} → ${JSON.stringify(final)}\n${(err as Error).message}`);
      }
    }
  });
});

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const pick = <T>(random: () => number, xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;

function randomScalar(random: () => number): Json {
  return pick(random, [null, true, false, 0, 1, -2.5, 'a', 'b', '', Math.floor(random() * 100), `s${Math.floor(random() * 10)}`]);
}

function randomValue(random: () => number, depth: number): Json {
  const r = random();
  if (depth <= 0 || r < 0.5) return randomScalar(random);
  return r < 0.75 ? randomArray(random, depth - 1) : randomObject(random, depth - 1);
}

function randomArray(random: () => number, depth: number): Json[] {
  return Array.from({ length: Math.floor(random() * 5) }, () => randomValue(random, depth));
}

function randomObject(random: () => number, depth: number): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  const n = Math.floor(random() * 5);
  for (let i = 0; i < n; i++) out[pick(random, ['a', 'b', 'c', 'd', 'e', '0', '1'])] = randomValue(random, depth);
  return out;
}

/** Every container in `root`, with the root itself. */
function containers(root: Json): (Json[] | { [key: string]: Json })[] {
  if (root === null || typeof root !== 'object') return [];
  const out: (Json[] | { [key: string]: Json })[] = [root];
  for (const child of Object.values(root)) out.push(...containers(child));
  return out;
}

/** One random edit somewhere in the world: set, add, delete, push, splice, reorder, retype. */
function mutate(root: { [key: string]: Json }, random: () => number): void {
  const target = pick(random, containers(root));
  if (Array.isArray(target)) {
    const op = random();
    const at = Math.floor(random() * (target.length + 1));
    if (op < 0.25) target.push(randomValue(random, 2));
    else if (op < 0.45) target.splice(at, 1 + Math.floor(random() * 2));
    else if (op < 0.6) target.splice(at, 0, randomValue(random, 2));
    else if (op < 0.7) target.reverse();
    else if (op < 0.8) target.length = Math.floor(target.length / 2);
    else if (target.length > 0) target[Math.min(at, target.length - 1)] = randomValue(random, 2);
  } else {
    const keys = Object.keys(target);
    const op = random();
    if (op < 0.3 || keys.length === 0) target[pick(random, ['a', 'b', 'f', 'g', '2'])] = randomValue(random, 2);
    else if (op < 0.55) delete target[pick(random, keys)];
    else target[pick(random, keys)] = randomValue(random, 2);
  }
}

describe('diffWorld matches deep-diff', () => {
  /** A small seeded PRNG so failures replay. */
  function prng(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = Math.imul(a ^ (a >>> 15), a | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function value(rand: () => number, depth: number): unknown {
    const r = rand();
    if (depth > 3 || r < 0.35) {
      const leaves: unknown[] = [0, 1, -1, 2.5, 'a', 'b', '', true, false, null, Number.NaN];
      return leaves[Math.floor(rand() * leaves.length)];
    }
    if (r < 0.65) return Array.from({ length: Math.floor(rand() * 4) }, () => value(rand, depth + 1));
    const out: Record<string, unknown> = {};
    for (let i = Math.floor(rand() * 4); i > 0; i--) out[String.fromCharCode(97 + Math.floor(rand() * 6))] = value(rand, depth + 1);
    return out;
  }

  function mutate(rand: () => number, v: unknown, depth: number): unknown {
    if (rand() < 0.3) return value(rand, depth);
    if (Array.isArray(v)) {
      const copy = v.map((x) => mutate(rand, x, depth + 1));
      if (rand() < 0.3) copy.push(value(rand, depth + 1));
      if (rand() < 0.3) copy.splice(Math.floor(rand() * (copy.length + 1)), 1);
      return copy;
    }
    if (v && typeof v === 'object') {
      const copy: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) if (rand() > 0.15) copy[k] = mutate(rand, x, depth + 1);
      if (rand() < 0.3) copy[String.fromCharCode(97 + Math.floor(rand() * 6))] = value(rand, depth + 1);
      return copy;
    }
    return v;
  }

  it('gives the very records deep-diff gives, in the same order, on 500 random worlds', async () => {
    const { default: deepDiff } = await import('deep-diff');
    const rand = prng(2026);
    for (let i = 0; i < 500; i++) {
      const initial = { world: value(rand, 0) };
      const final = mutate(rand, structuredClone(initial), 0);
      const ours = JSON.parse(JSON.stringify(diffWorld(initial, final)));
      const theirs = JSON.parse(JSON.stringify(deepDiff.diff(initial, final) ?? []));
      expect(ours, `world ${i}`).toEqual(theirs);
    }
  });

  it('handles undefined-valued properties, dates and regexps as deep-diff does', async () => {
    const { default: deepDiff } = await import('deep-diff');
    const cases: [unknown, unknown][] = [
      [{ a: undefined }, {}],
      [{}, { a: undefined }],
      [{ d: new Date(0) }, { d: new Date(1) }],
      [{ d: new Date(5) }, { d: new Date(5) }],
      [{ r: /a/g }, { r: /a/i }],
      // eslint-disable-next-line no-sparse-arrays -- a hole is what this case is about
      [[1, , 3], [1, 2, 3]],
      [{ a: [1, 2, 3] }, { a: [3] }],
    ];
    for (const [a, b] of cases) {
      expect(JSON.parse(JSON.stringify(diffWorld(a, b)))).toEqual(JSON.parse(JSON.stringify(deepDiff.diff(a, b) ?? [])));
    }
  });

  it('gives the very records deep-diff gives when the worlds lie 300 levels down (where the walk leaves recursion)', async () => {
    const { default: deepDiff } = await import('deep-diff');
    const rand = prng(300);
    const bury = (world: unknown): unknown => {
      let node = world;
      for (let level = 0; level < 300; level++) node = level % 2 === 0 ? { n: node } : [node];
      return node;
    };
    for (let i = 0; i < 200; i++) {
      const world = { world: value(rand, 0) };
      const initial = bury(world);
      const final = bury(mutate(rand, structuredClone(world), 0));
      const ours = JSON.parse(JSON.stringify(diffWorld(initial, final)));
      const theirs = JSON.parse(JSON.stringify(deepDiff.diff(initial, final) ?? []));
      expect(ours, `world ${i}`).toEqual(theirs);
    }
  });

  it('walks an object held in two places, 300 levels down, in both (only a cycle stops the walk)', async () => {
    const { default: deepDiff } = await import('deep-diff');
    const shared = { x: 1, list: [1, 2] };
    let initial: unknown = { a: shared, b: { c: shared } };
    for (let level = 0; level < 300; level++) initial = { n: initial };
    const final = structuredClone(initial); // keeps the sharing
    let node = final as { n?: unknown; a?: { x: number; list: number[] } };
    while (node.n) node = node.n as typeof node;
    node.a!.x = 2;
    node.a!.list.push(3);
    const ours = JSON.parse(JSON.stringify(diffWorld(initial, final)));
    expect(ours).toHaveLength(4);
    expect(ours).toEqual(JSON.parse(JSON.stringify(deepDiff.diff(initial, final))));
  });

  it('stops at a cycle 300 levels down, as deep-diff does', async () => {
    const { default: deepDiff } = await import('deep-diff');
    const loop: Record<string, unknown> = { x: 1 };
    loop.self = loop;
    let initial: unknown = { loop };
    for (let level = 0; level < 300; level++) initial = [initial];
    const final = structuredClone(initial); // keeps the cycle
    let node = final as unknown[] | { loop: { x: number } };
    while (Array.isArray(node)) node = node[0] as typeof node;
    node.loop.x = 2;
    const ours = diffWorld(initial, final);
    expect(ours.map((c) => [c.kind, c.path?.slice(300)])).toEqual((deepDiff.diff(initial, final) ?? []).map((c) => [c.kind, c.path?.slice(300)]));
    expect(ours.length).toBeGreaterThan(0);
  });

  it('diffs a world 50,000 levels deep (a snapshot can hold one deeper than the call stack goes)', () => {
    const chain = (end: string): { next?: unknown; end?: string } => {
      let node: { next?: unknown; end?: string } = { end };
      for (let i = 0; i < 50_000; i++) node = { next: node };
      return node;
    };
    const changes = diffWorld(chain('a'), chain('b'));
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ kind: 'E', lhs: 'a', rhs: 'b' });
    expect(changes[0]!.path).toEqual([...Array<string>(50_000).fill('next'), 'end']);
  });

  it('finds the one change in an object with 50,000 keys', () => {
    const wide: Record<string, { n: number }> = {};
    for (let i = 0; i < 50_000; i++) wide[`k${i}`] = { n: i };
    const changed = structuredClone(wide);
    changed.k7!.n = -1;
    // Speed is measured by `npm run bench` (worldScaling), not here.
    expect(diffWorld(wide, changed)).toEqual([{ kind: 'E', path: ['k7', 'n'], lhs: 7, rhs: -1 }]);
  });
});
