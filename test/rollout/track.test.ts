import { describe, expect, it } from 'vitest';
import { applyChanges, diffWorld } from '../../src/rollout/diff.js';
import { seededRandom } from '../../src/rollout/state.js';
import { analyzeWorld } from '../../src/rollout/plain.js';
import { WriteTracker } from '../../src/rollout/track.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Container = Json[] | { [key: string]: Json };

/** The changes as state-diff.json holds them. */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

function randomWorld(random: () => number, depth = 0): Container {
  const pick = (n: number) => Math.floor(random() * n);
  const leaf = (): Json => [null, true, false, pick(100), `s${pick(50)}`][pick(5)] ?? null;
  const value = (d: number): Json => (d < 4 && random() < 0.45 ? randomWorld(random, d) : leaf());
  if (depth > 0 && random() < 0.4) return Array.from({ length: pick(5) }, () => value(depth + 1));
  const object: Record<string, Json> = {};
  for (let i = pick(6) + (depth === 0 ? 3 : 0); i > 0; i--) object[`k${pick(9)}`] = value(depth + 1);
  return object;
}

/** The containers of a world (through the view, so that writes to them are tracked). */
function containers(view: Container): Container[] {
  const found: Container[] = [];
  const visit = (value: Json): void => {
    if (typeof value !== 'object' || value === null) return;
    found.push(value);
    for (const child of Object.values(value)) visit(child);
  };
  visit(view);
  return found;
}

/** One random edit made through the tracker's view, as a tool would make it. */
function randomEdit(view: Container, random: () => number): void {
  const pick = (n: number) => Math.floor(random() * n);
  const all = containers(view);
  const target = all[pick(all.length)] as Container;
  const other = all[pick(all.length)] as Container;
  const fresh = (): Json => (random() < 0.5 ? pick(1000) : { n: pick(9), list: [pick(9), `x${pick(9)}`] });
  if (Array.isArray(target)) {
    switch (pick(7)) {
      case 0: target.push(fresh()); break;
      case 1: target.pop(); break;
      case 2: target.shift(); break;
      case 3: target.splice(pick(target.length + 1), pick(2), fresh()); break;
      case 4: if (target.length > 0) target[pick(target.length)] = fresh(); break;
      case 5: target.reverse(); break;
      default: target.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    }
    return;
  }
  const keys = Object.keys(target);
  const key = keys[pick(keys.length)];
  switch (pick(5)) {
    case 0: target[`k${pick(12)}`] = fresh(); break;
    case 1: if (key !== undefined) delete target[key]; break;
    case 2: {
      // Moves an object: out of one place, into a new object in another (a re-parenting).
      if (key === undefined || other === target) break;
      const moved = target[key] as Json;
      delete target[key];
      if (!Array.isArray(other) && !containers(moved as Container).includes(other)) other[`m${pick(9)}`] = { wrapped: moved };
      break;
    }
    case 3: if (key !== undefined) target[key] = { ...(target[key] as object), extra: pick(9) } as Json; break;
    default: if (key !== undefined && typeof target[key] !== 'object') target[key] = fresh();
  }
}

describe('WriteTracker', () => {
  it('gives, for random edits made through its view, the same changes as a full diff, per call and for the run', () => {
    let calls = 0;
    let lostRuns = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const random = seededRandom(seed);
      const world = randomWorld(random);
      const initial = structuredClone(world);
      const tracker = new WriteTracker(world);
      for (let call = 0; call < 4; call++) {
        const before = structuredClone(world);
        const scope = tracker.beginCall();
        for (let i = Math.floor(random() * 4); i >= 0; i--) randomEdit(tracker.view, random);
        const changes = tracker.endCall(scope);
        if (changes === undefined) {
          expect(tracker.lost).not.toBeNull();
          continue;
        }
        calls++;
        expect(asJson(changes), `seed ${seed} call ${call}`).toEqual(asJson(diffWorld(before, world)));
      }
      if (tracker.lost) lostRuns++;
      expect(asJson(tracker.diff()), `seed ${seed}`).toEqual(asJson(diffWorld(initial, world)));
      expect(applyChanges(initial, asJson(tracker.diff()) as ReturnType<typeof diffWorld>)).toStrictEqual(world);
      expect(tracker.initial()).toStrictEqual(initial);
    }
    // The fuzzer must exercise the tracked path, not only the fallback.
    expect(calls).toBeGreaterThan(800);
    expect(lostRuns).toBeLessThan(30);
  });

  it('records a write to a deep object under its path, and nothing for reads', () => {
    const world = { users: { u1: { name: 'Ada', tags: ['a'] }, u2: { name: 'Bo', tags: [] as string[] } } };
    const tracker = new WriteTracker(world);
    const read = tracker.beginCall();
    expect(Object.values(tracker.view.users).map((u) => u.name)).toEqual(['Ada', 'Bo']);
    expect(tracker.endCall(read)).toEqual([]);
    const write = tracker.beginCall();
    tracker.view.users.u2.tags.push('new');
    expect(asJson(tracker.endCall(write))).toEqual([{ kind: 'A', path: ['users', 'u2', 'tags'], index: 0, item: { kind: 'N', rhs: 'new' } }]);
    expect(world.users.u2.tags).toEqual(['new']);
  });

  it('records writes 900 levels down (past where the diff walk leaves recursion), per call and for the run', () => {
    type Level = { next?: Level; items: number[]; name?: string };
    const build = (): Level => {
      let node: Level = { items: [1, 2] };
      for (let i = 0; i < 900; i++) node = { next: node, items: [] };
      return node;
    };
    const world = { root: build() };
    expect(analyzeWorld(world)).toBeNull();
    const initial = structuredClone(world);
    const tracker = new WriteTracker(world);
    const scope = tracker.beginCall();
    let node = tracker.view.root;
    for (let i = 0; i < 300; i++) node = node.next!;
    node.name = 'three hundred';
    while (node.next) node = node.next;
    node.items.push(3);
    const changes = asJson(tracker.endCall(scope)) as { path: string[] }[];
    expect(changes).toEqual(asJson(diffWorld(initial, world)));
    expect(changes).toHaveLength(2);
    expect(asJson(tracker.diff())).toEqual(asJson(diffWorld(initial, world)));
    expect(tracker.initial()).toStrictEqual(initial);
  });

  it('keeps what a call recorded even when later calls change the same values', () => {
    const world = { n: { v: 1 } };
    const tracker = new WriteTracker(world);
    const first = tracker.beginCall();
    tracker.view.n = { v: 2 };
    const changes = tracker.endCall(first);
    tracker.view.n.v = 3;
    expect(asJson(changes)).toEqual([{ kind: 'E', path: ['n', 'v'], lhs: 1, rhs: 2 }]);
  });

  it('stores world objects inside new values as themselves, never as proxies', () => {
    const world = { users: [{ name: 'Ada' }], log: [] as unknown[] };
    const tracker = new WriteTracker(world);
    const ada = tracker.view.users[0];
    tracker.view.log.push({ who: ada });
    expect(world.log[0]).toEqual({ who: { name: 'Ada' } });
    expect((world.log[0] as { who: unknown }).who).toBe(world.users[0]);
    // The same object in two places: positions can no longer be trusted, the run's diff stays exact.
    expect(tracker.lost).toBeNull();
    expect(asJson(tracker.diff())).toEqual(asJson(diffWorld({ users: [{ name: 'Ada' }], log: [] }, world)));
    expect(tracker.lost).toMatch(/two places/);
  });

  it('lets tools structuredClone world objects and return them (copies, not proxies)', () => {
    const world = { users: { u1: { name: 'Ada', born: 1815 } } };
    const tracker = new WriteTracker(world);
    const copy = structuredClone(tracker.view.users.u1);
    expect(copy).toEqual({ name: 'Ada', born: 1815 });
    copy.name = 'changed';
    expect(world.users.u1.name).toBe('Ada');
    const list = structuredClone(Object.values(tracker.view.users).filter((u) => u.born < 1900));
    expect(list).toEqual([{ name: 'Ada', born: 1815 }]);
    // Values structuredClone never copied still fail as they did.
    expect(() => structuredClone({ f: () => 1 })).toThrow(/could not be cloned/);
    expect(() => structuredClone({ user: tracker.view.users.u1, f: () => 1 })).toThrow(/could not be cloned/);
  });

  it('hands out the same proxy for the same object, so identity checks in tools hold', () => {
    const world = { list: [{ id: 1 }, { id: 2 }] };
    const tracker = new WriteTracker(world);
    const first = tracker.view.list[0];
    expect(tracker.view.list.indexOf(first!)).toBe(0);
    expect(tracker.view.list.find((x) => x.id === 1)).toBe(first);
    expect(Array.isArray(tracker.view.list)).toBe(true);
  });

  it('records a tool that deletes and re-adds keys, and one that empties an array', () => {
    const world: { a: Record<string, number>; b: number[] } = { a: { x: 1, y: 2 }, b: [1, 2, 3] };
    const initial = structuredClone(world);
    const tracker = new WriteTracker(world);
    const scope = tracker.beginCall();
    delete tracker.view.a.x;
    tracker.view.a.x = 5;
    tracker.view.b.length = 0;
    expect(asJson(tracker.endCall(scope))).toEqual(asJson(diffWorld(initial, world)));
  });
});

/**
 * Runs each call through a tracker's view and checks it against the truth: a call's changes (when
 * it has them) and the run's equal a full diff, and initial() is the world as it was.
 */
function replay(world: Record<string, unknown>, ...calls: ((view: any) => void)[]): WriteTracker<Record<string, unknown>> {
  const initial = structuredClone(world);
  const tracker = new WriteTracker(world);
  for (const call of calls) {
    const before = structuredClone(world);
    const scope = tracker.beginCall();
    call(tracker.view);
    const changes = tracker.endCall(scope);
    if (changes !== undefined) expect(asJson(changes)).toEqual(asJson(diffWorld(before, world)));
  }
  expect(asJson(tracker.diff())).toEqual(asJson(diffWorld(initial, world)));
  expect(tracker.initial()).toStrictEqual(initial);
  return tracker;
}

describe('WriteTracker in the corners (each found by review)', () => {
  it('finds a write to an object whose parent was detached and put back, and an object left in two places that way', () => {
    let parent: unknown;
    replay(
      { a: { p: { x: { v: 1 } } }, b: null },
      (v) => ((parent = v.a.p), (v.b = v.a.p.x), delete v.a.p),
      (v) => {
        const x = v.b;
        v.a.p = parent;
        delete v.b;
        x.v = 2;
      },
    );
    const twice = replay({ a: { p: { x: { v: 1 } } }, b: null }, (v) => ((parent = v.a.p), (v.b = v.a.p.x), delete v.a.p), (v) => ((v.a.p = parent), (v.b.v = 2)));
    expect(twice.lost).toMatch(/two places/);
  });

  it('reads through a frozen object (its child comes without a proxy) and still diffs the run exactly', () => {
    const tracker = replay({ s: { a: { b: 1 } } }, (v) => Object.freeze(v.s), (v) => expect(v.s.a.b).toBe(1), (v) => (v.s.a.b = 2));
    expect(tracker.lost).toMatch(/frozen/);
    replay({ list: [] as unknown[] }, (v) => v.list.push(Object.freeze({ meta: { n: 1 } })), (v) => expect(JSON.stringify(v.list)).toBe('[{"meta":{"n":1}}]'));
  });

  it('keeps a key named __proto__ as a key in old values and in initial()', () => {
    replay(JSON.parse('{"dict":{"__proto__":{"x":1},"a":1}}') as Record<string, unknown>, (v) => delete v.dict);
  });

  it('survives a frozen or getter-only new value holding a world object, and a Set holding one', () => {
    const tracker = new WriteTracker<Record<string, any>>({ users: [{ n: 1 }], log: [], idx: null });
    let scope = tracker.beginCall();
    tracker.view.log.push(Object.freeze({ who: tracker.view.users[0] }));
    tracker.view.idx = new Set([tracker.view.users[0]]);
    tracker.endCall(scope);
    scope = tracker.beginCall();
    tracker.view.idx = null;
    expect(() => tracker.endCall(scope)).not.toThrow();
    expect(() => tracker.diff()).not.toThrow();
    expect(tracker.lost).toMatch(/frozen or read-only new value/);
  });

  it('lets Object.create(worldObject) take writes itself, as a plain object would', () => {
    const world = { user: { name: 'Ada' } };
    const tracker = new WriteTracker(world);
    const child = Object.create(tracker.view.user) as { name: string };
    child.name = 'X';
    expect(world.user.name).toBe('Ada');
    expect(Object.keys(child)).toEqual(['name']);
    expect(tracker.diff()).toEqual([]);
  });
});

describe('analyzeWorld', () => {
  it('accepts plain data', () => {
    expect(analyzeWorld({ a: [1, { b: null }], c: { d: 'x' } })).toBeNull();
  });

  it('names what keeps a world from being tracked', () => {
    const shared = { id: 1 };
    expect(analyzeWorld({ a: shared, b: [shared] })).toMatch(/same object is in two places \(world\.b\[0\]\)/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(analyzeWorld(cyclic)).toMatch(/two places/);
    expect(analyzeWorld({ when: new Date(0) })).toMatch(/world\.when is a Date/);
    expect(analyzeWorld({ m: new Map() })).toMatch(/Map/);
    expect(analyzeWorld({ f: Object.freeze({}) })).toMatch(/frozen/);
    expect(analyzeWorld({ f: () => 1 })).toMatch(/function/);
    let deep: Record<string, unknown> = {};
    const top = deep;
    for (let i = 0; i < 100_000; i++) deep = (deep.next = {}) as Record<string, unknown>;
    expect(analyzeWorld(top)).toMatch(/nested more than 1000 levels deep/);
  });
});
