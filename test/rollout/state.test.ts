import { describe, it, expect } from 'vitest';
import { buildWorld, createContext, EnvironmentError, hashWorld, seededRandom } from '../../src/rollout/state.js';
import type { Environment } from '../../src/types.js';
import { environment } from '../builders.js';

const seed = { users: { u1: { name: 'Ada', active: true, tags: ['admin'] } } };

async function failure(promise: Promise<unknown>): Promise<EnvironmentError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EnvironmentError);
  expect((err as EnvironmentError).code).toBe('environment_error');
  return err as EnvironmentError;
}

describe('buildWorld', () => {
  it('builds a live world, its snapshot, a context and a hash', async () => {
    const world = await buildWorld(environment(seed), 1);
    expect(world.state).toEqual(seed);
    expect(world.initial).toEqual(seed);
    expect(world.ctx.seed).toBe(1);
    expect(world.worldHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a createState that returns the same cached object twice, and says how to fix it', async () => {
    const cached = { users: {} };
    const err = await failure(buildWorld({ name: 'cachey', createState: () => cached, tools: [] }, 1));
    expect(err.message).toContain('cachey.createState() returned an object it has returned before');
    expect(err.message).toContain('structuredClone');
  });

  it('refuses a world that an earlier rollout already saw', async () => {
    // Fresh on the first two calls (so the probe passes), then the first world again.
    const worlds = [{ n: 0 }, { n: 1 }];
    let calls = 0;
    const env: Environment = { name: 'recycler', createState: () => worlds[calls++ % 2], tools: [] };
    await buildWorld(env, 1);
    const err = await failure(buildWorld(env, 1));
    expect(err.message).toContain('recycler.createState() returned an object it has returned before');
  });

  it('probes createState only on the first rollout of an environment', async () => {
    let calls = 0;
    const env: Environment = { name: 'counted', createState: () => ({ n: calls++ }), tools: [] };
    await buildWorld(env, 1);
    expect(calls).toBe(2);
    await buildWorld(env, 1);
    expect(calls).toBe(3);
  });

  it('turns a createState that throws into an EnvironmentError with its message', async () => {
    const env: Environment = {
      name: 'broken',
      createState: () => {
        throw new Error('seed file missing');
      },
      tools: [],
    };
    const err = await failure(buildWorld(env, 1));
    expect(err.message).toBe('broken.createState() threw: seed file missing');
  });

  it('turns an async createState that rejects into an EnvironmentError', async () => {
    const env: Environment = { name: 'async-broken', createState: () => Promise.reject(new Error('timeout')), tools: [] };
    expect((await failure(buildWorld(env, 1))).message).toContain('timeout');
  });

  it('awaits an async createState', async () => {
    const env: Environment = { name: 'async', createState: async () => structuredClone(seed), tools: [] };
    expect((await buildWorld(env, 1)).state).toEqual(seed);
  });

  it('refuses a world that is not an object', async () => {
    for (const value of [42, 'world', null, undefined]) {
      const err = await failure(buildWorld({ name: 'scalar', createState: () => value, tools: [] }, 1));
      expect(err.message).toContain('scalar.createState() must return an object');
    }
  });

  it('refuses a world that cannot be copied', async () => {
    const env: Environment = { name: 'fn-world', createState: () => ({ f: () => 1 }), tools: [] };
    expect((await failure(buildWorld(env, 1))).message).toContain('cannot be copied');
  });

  it('says a world too deep to copy is too deep, not that it holds functions', async () => {
    const deep = (): object => {
      let node: object = {};
      for (let i = 0; i < 50_000; i++) node = { next: node, at: new Date(0) };
      return node;
    };
    const message = (await failure(buildWorld({ name: 'deep', createState: deep, tools: [] }, 1))).message;
    expect(message).toContain('nested too deeply to copy');
    expect(message).not.toContain('functions');
  });

  it('keeps the initial world apart: changes made through the tools\' view leave it alone', async () => {
    const world = await buildWorld(environment(seed), 1);
    expect(world.tracking).toEqual({ mode: 'writes' });
    const state = world.view as typeof seed;
    state.users.u1.active = false;
    state.users.u1.tags.push('x');
    (state.users as Record<string, unknown>).u2 = { name: 'Bo' };
    expect(world.initial).toEqual(seed);
  });

  it('gives createState a context seeded with the rollout seed', async () => {
    const env: Environment = { name: 'random', createState: (ctx) => ({ roll: ctx.random(), seed: ctx.seed }), tools: [] };
    const a = await buildWorld(env, 5);
    const b = await buildWorld(env, 5);
    const c = await buildWorld(env, 6);
    expect(a.state).toEqual(b.state);
    expect(a.worldHash).toBe(b.worldHash);
    expect(c.state).not.toEqual(a.state);
  });

  it('gives equal worlds equal hashes and different worlds different ones', async () => {
    const a = await buildWorld(environment(seed), 1);
    const b = await buildWorld(environment(seed), 2);
    const c = await buildWorld(environment({ ...seed, extra: true }), 1);
    expect(a.worldHash).toBe(b.worldHash);
    expect(a.worldHash).toBe(hashWorld(seed));
    expect(c.worldHash).not.toBe(a.worldHash);
  });

  it('starts the clock at the environment clockStart', async () => {
    const iso = await buildWorld({ ...environment({}), clockStart: '2030-06-01T12:00:00.000Z' }, 1);
    expect(iso.ctx.now()).toBe(Date.UTC(2030, 5, 1, 12));
    const ms = await buildWorld({ ...environment({}), clockStart: 1_000 }, 1);
    expect(ms.ctx.now()).toBe(1_000);
  });

  it('refuses a clockStart that is not a date', async () => {
    await failure(buildWorld({ ...environment({}), clockStart: 'someday' }, 1));
  });
});

describe('seededRandom', () => {
  const draw = (s: number, n = 20) => {
    const random = seededRandom(s);
    return Array.from({ length: n }, () => random());
  };

  it('gives the same sequence for the same seed', () => {
    expect(draw(42)).toEqual(draw(42));
  });

  it('gives different sequences for different seeds', () => {
    expect(draw(1)).not.toEqual(draw(2));
    expect(draw(0)).not.toEqual(draw(2 ** 31 - 1));
  });

  it('draws numbers in [0, 1) that are spread out', () => {
    const values = draw(3, 1000);
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
    expect(new Set(values).size).toBe(1000);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
  });
});

describe('createContext', () => {
  it('keeps the clock fixed until it is advanced', () => {
    const ctx = createContext(1, undefined);
    const start = ctx.now();
    expect(start).toBe(Date.UTC(2025, 0, 1));
    expect(ctx.now()).toBe(start);
    ctx.advance(60_000);
    expect(ctx.now()).toBe(start + 60_000);
    ctx.advance(0);
    expect(ctx.now()).toBe(start + 60_000);
  });

  it('refuses to move the clock backwards or by a non-number', () => {
    const ctx = createContext(1, undefined);
    expect(() => ctx.advance(-1)).toThrow(RangeError);
    expect(() => ctx.advance(Number.NaN)).toThrow(RangeError);
  });

  it('draws from the seeded PRNG', () => {
    const random = seededRandom(9);
    const ctx = createContext(9, 0);
    expect([ctx.random(), ctx.random()]).toEqual([random(), random()]);
  });
});

describe('buildWorld with a createState that never settles', () => {
  it('gives up after its time limit with an EnvironmentError that says so', async () => {
    const { buildWorld: build, EnvironmentError: EnvError } = await import('../../src/rollout/state.js');
    const env = { name: 'stuck', createState: () => new Promise<never>(() => {}), tools: [] };
    await expect(build(env, 1, 50)).rejects.toThrow(EnvError);
    await expect(build(env, 1, 50)).rejects.toThrow(/did not finish within 50 ms/);
  });
});
