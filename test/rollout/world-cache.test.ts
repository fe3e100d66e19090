import { describe, it, expect } from 'vitest';
import { buildWorld, hashWorld } from '../../src/rollout/state.js';
import { sketchWorld, worldCacheStats } from '../../src/rollout/world-cache.js';
import type { Environment } from '../../src/types.js';
import { environment } from '../builders.js';

type Records = { records: Record<string, { id: string; n: number; tags: string[] }> };

function records(count: number): Records {
  const out: Records = { records: {} };
  for (let i = 0; i < count; i++) out.records[`r${i}`] = { id: `r${i}`, n: i, tags: ['a', i % 2 ? 'odd' : 'even'] };
  return out;
}

/** How many worlds buildWorld reused and computed while `fn` ran. */
async function counted(fn: () => Promise<unknown>): Promise<{ reused: number; computed: number }> {
  const before = { ...worldCacheStats };
  await fn();
  return { reused: worldCacheStats.reused - before.reused, computed: worldCacheStats.computed - before.computed };
}

describe('the world cache (a hash and verdict per environment and seed)', () => {
  it('reuses the hash of the same environment and seed, and the hash is the full one', async () => {
    const seed = records(50);
    const env = environment(seed);
    const first = await buildWorld(env, 1);
    const again = await counted(async () => {
      const second = await buildWorld(env, 1);
      expect(second.worldHash).toBe(first.worldHash);
      expect(second.worldHash).toBe(hashWorld(seed));
      expect(second.tracking).toEqual({ mode: 'writes' });
    });
    expect(again).toEqual({ reused: 1, computed: 0 });
  });

  it('reuses it across seeds when createState does not use the seed, but not when it does', async () => {
    const plain = environment(records(10));
    await buildWorld(plain, 1);
    expect(await counted(() => buildWorld(plain, 2))).toEqual({ reused: 1, computed: 0 });

    const seeded: Environment = { name: 'seeded', createState: (ctx) => ({ roll: ctx.random(), ...records(5) }), tools: [] };
    const a = await buildWorld(seeded, 1);
    let b: Awaited<ReturnType<typeof buildWorld>> | undefined;
    expect(await counted(async () => (b = await buildWorld(seeded, 2)))).toEqual({ reused: 0, computed: 1 });
    expect(b!.worldHash).not.toBe(a.worldHash);
    expect(b!.worldHash).toBe(hashWorld(b!.state));
    expect(await counted(() => buildWorld(seeded, 1))).toEqual({ reused: 1, computed: 0 });

    // Reading ctx.seed counts as using it.
    const reads: Environment = { name: 'reads', createState: (ctx) => ({ seed: ctx.seed }), tools: [] };
    await buildWorld(reads, 1);
    const other = await buildWorld(reads, 2);
    expect(other.worldHash).toBe(hashWorld({ seed: 2 }));
  });

  it('computes a world again when its environment builds another one (data changed), near the root or deep', async () => {
    let data = records(3000);
    const env: Environment = { name: 'changing', createState: () => structuredClone(data), tools: [] };
    await buildWorld(env, 1);
    expect(await counted(() => buildWorld(env, 1))).toEqual({ reused: 1, computed: 0 });
    // One more record: the record count shows in the sketch.
    data = records(3001);
    const grown = await buildWorld(env, 1);
    expect(grown.worldHash).toBe(hashWorld(data));
    // A value changed in every record (deep, past the breadth-first part of the sketch).
    data = structuredClone(data);
    for (const r of Object.values(data.records)) r.tags.push('new');
    let changed: Awaited<ReturnType<typeof buildWorld>> | undefined;
    expect(await counted(async () => (changed = await buildWorld(env, 1)))).toEqual({ reused: 0, computed: 1 });
    expect(changed!.worldHash).toBe(hashWorld(data));
  });

  it('never reuses anything of an environment that builds a different world each time', async () => {
    let calls = 0;
    const env: Environment = { name: 'drifting', createState: () => ({ n: calls++, ...records(5) }), tools: [] };
    await buildWorld(env, 1);
    for (let i = 0; i < 3; i++) {
      let world: Awaited<ReturnType<typeof buildWorld>> | undefined;
      expect(await counted(async () => (world = await buildWorld(env, 1)))).toEqual({ reused: 0, computed: 1 });
      expect(world!.worldHash).toBe(hashWorld(world!.state));
    }
  });

  it('does not take a world sharing an object an earlier rollout wrote (a shallow copy) for a fresh one', async () => {
    // Big enough that the record changed is not in the world's sketch: the written object tells.
    const seed = records(3000);
    // A shallow copy: every rollout gets the same records object.
    const env: Environment<Records> = { name: 'shallow', createState: () => ({ ...seed }), tools: [] };
    await buildWorld(env, 1);
    const first = await buildWorld(env, 1);
    const view = first.view;
    view.records.r3!.n = 99; // through the tools' view: the seed's own record changes
    expect(first.diff()).toHaveLength(1);
    let next: Awaited<ReturnType<typeof buildWorld>> | undefined;
    expect(await counted(async () => (next = await buildWorld(env, 1)))).toEqual({ reused: 0, computed: 1 });
    expect(next!.worldHash).toBe(hashWorld(next!.state));
    expect(next!.worldHash).not.toBe(first.worldHash);
  });

  it('keys worlds by the clock start too, and leaves snapshotted worlds to a full hash', async () => {
    const env = environment(records(5));
    await buildWorld(env, 1);
    env.clockStart = '2031-01-01T00:00:00.000Z';
    expect(await counted(() => buildWorld(env, 1))).toEqual({ reused: 0, computed: 1 });

    const snapshot: Environment = { ...environment(records(5)), trackChanges: false };
    await buildWorld(snapshot, 1);
    const second = await counted(async () => {
      const world = await buildWorld(snapshot, 1);
      expect(world.tracking).toEqual({ mode: 'snapshot', reason: 'trackChanges is false' });
    });
    expect(second).toEqual({ reused: 0, computed: 0 });
  });

  it('sketches worlds that differ in kind, size, value or sharing apart', () => {
    const base = { a: { b: [1, 2, 3] }, c: 'x' };
    const same = sketchWorld(structuredClone(base));
    expect(sketchWorld(structuredClone(base))).toBe(same);
    expect(sketchWorld({ a: { b: [1, 2, 4] }, c: 'x' })).not.toBe(same);
    expect(sketchWorld({ a: { b: [1, 2, 3, 4] }, c: 'x' })).not.toBe(same);
    expect(sketchWorld({ a: { b: [1, 2, 3] }, c: 'y' })).not.toBe(same);
    expect(sketchWorld({ a: Object.freeze({ b: [1, 2, 3] }), c: 'x' })).not.toBe(same);
    expect(sketchWorld({ a: new Map(), c: 'x' })).not.toBe(sketchWorld({ a: {}, c: 'x' }));
    const shared = { b: [1] };
    expect(sketchWorld({ a: shared, c: shared })).not.toBe(sketchWorld({ a: { b: [1] }, c: { b: [1] } }));
  });

  it('walks paths to leaves only in a world too big for its breadth-first part', () => {
    const walks = (world: object): number => sketchWorld(world).split('\u0000').filter((part) => part === '/').length;
    // Seen whole (every entry): a path would pass nothing new.
    expect(walks({ a: { b: [1, 2, 3] }, c: 'x' })).toBe(0);
    expect(walks({ rows: Array.from({ length: 2_000 }, (_, i) => i) })).toBe(0);
    // Past the breadth-first part: the paths reach what it did not.
    const big = { rows: Array.from({ length: 3_000 }, (_, i) => ({ id: i, deep: { value: i } })) };
    expect(walks(big)).toBeGreaterThan(0);
    const changed = structuredClone(big);
    for (const row of changed.rows) row.deep.value = -1;
    expect(sketchWorld(changed)).not.toBe(sketchWorld(big));
  });
});

describe('sketchWorld on arrays', () => {
  it('reads a big array by index and tells arrays that differ deep inside apart', () => {
    const list = Array.from({ length: 200_000 }, (_, i) => ({ id: i, tags: ['x'] }));
    const a = sketchWorld({ list });
    expect(sketchWorld({ list: structuredClone(list) })).toBe(a);
    const changed = structuredClone(list);
    for (const item of changed) item.tags.push('y');
    expect(sketchWorld({ list: changed })).not.toBe(a);
  });
});
