import { describe, it, expect } from 'vitest';
import { SiloError } from '../src/errors.js';
import { DEFAULT_LIMITS, MiB, resolveLimits, resolveSeed } from '../src/options.js';
import type { Limits } from '../src/types.js';

describe('DEFAULT_LIMITS', () => {
  it('holds the documented defaults and cannot be changed', () => {
    expect(DEFAULT_LIMITS).toEqual({
      timeoutMs: 300_000,
      maxToolCalls: 500,
      graceMs: 1_000,
      memoryMb: 512,
      maxOutputBytes: MiB,
      maxMessageBytes: MiB,
      maxModelRequests: 200,
    });
    // maxTokens has no default: no limit unless one is given.
    expect(DEFAULT_LIMITS).not.toHaveProperty('maxTokens');
    expect(Object.isFrozen(DEFAULT_LIMITS)).toBe(true);
  });
});

describe('resolveLimits', () => {
  it('gives the defaults with no sources, as a fresh object', () => {
    const limits = resolveLimits();
    expect(limits).toEqual(DEFAULT_LIMITS);
    expect(limits).not.toBe(DEFAULT_LIMITS);
    limits.timeoutMs = 1;
    expect(DEFAULT_LIMITS.timeoutMs).toBe(300_000);
  });

  it('lets later sources win: defaults, then task limits, then flags', () => {
    const task = { timeoutMs: 60_000, maxToolCalls: 20 };
    const flags = { timeoutMs: 5_000 };
    expect(resolveLimits(task, flags)).toEqual({ ...DEFAULT_LIMITS, timeoutMs: 5_000, maxToolCalls: 20 });
  });

  it('skips undefined sources and undefined values', () => {
    expect(resolveLimits(undefined, { graceMs: 50 }, { graceMs: undefined } as unknown as Partial<Limits>)).toEqual({
      ...DEFAULT_LIMITS,
      graceMs: 50,
    });
  });

  it('ignores keys that are not limits', () => {
    expect(resolveLimits({ retries: 3 } as unknown as Partial<Limits>)).toEqual(DEFAULT_LIMITS);
  });

  it('takes maxTokens when given (none by default), checked like the others', () => {
    expect(resolveLimits({ maxTokens: 5_000 }, { maxModelRequests: 3 })).toEqual({ ...DEFAULT_LIMITS, maxTokens: 5_000, maxModelRequests: 3 });
    expect(() => resolveLimits({ maxTokens: 0 })).toThrow('limit maxTokens must be an integer >= 1 (got 0)');
    expect(() => resolveLimits({ maxTokens: 1.5 })).toThrow('limit maxTokens must be an integer >= 1 (got 1.5)');
  });

  it('allows 0 tool calls, 0 model requests and 0 grace, but not 0 of anything else', () => {
    expect(resolveLimits({ maxToolCalls: 0, graceMs: 0, maxModelRequests: 0 })).toMatchObject({ maxToolCalls: 0, graceMs: 0, maxModelRequests: 0 });
    for (const key of ['timeoutMs', 'maxOutputBytes', 'maxMessageBytes'] as const) {
      expect(() => resolveLimits({ [key]: 0 })).toThrow(`limit ${key} must be an integer >= 1 (got 0)`);
    }
    expect(() => resolveLimits({ memoryMb: 8 })).toThrow('limit memoryMb must be an integer >= 16 (got 8)');
  });

  it('rejects bad values with SILO_USAGE, naming the limit and the value', () => {
    const bad: [Partial<Record<keyof Limits, unknown>>, string][] = [
      [{ timeoutMs: -1 }, 'limit timeoutMs must be an integer >= 1 (got -1)'],
      [{ maxToolCalls: -1 }, 'limit maxToolCalls must be an integer >= 0 (got -1)'],
      [{ maxToolCalls: 1.5 }, 'limit maxToolCalls must be an integer >= 0 (got 1.5)'],
      [{ timeoutMs: Number.NaN }, 'limit timeoutMs must be an integer >= 1 (got NaN)'],
      [{ timeoutMs: Number.POSITIVE_INFINITY }, 'limit timeoutMs must be an integer >= 1 (got Infinity)'],
      [{ memoryMb: '512' }, 'limit memoryMb must be an integer >= 16 (got 512)'],
      [{ graceMs: null }, 'limit graceMs must be an integer >= 0 (got null)'],
    ];
    for (const [source, message] of bad) {
      let caught: unknown;
      try {
        resolveLimits(source as Partial<Limits>);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(SiloError);
      expect(caught).toMatchObject({ code: 'SILO_USAGE', message });
    }
  });
});

describe('resolveSeed', () => {
  it('keeps a 32-bit seed and draws one when none is given', () => {
    expect(resolveSeed(0, () => 9)).toBe(0);
    expect(resolveSeed(2 ** 32 - 1, () => 9)).toBe(2 ** 32 - 1);
    expect(resolveSeed(undefined, () => 9)).toBe(9);
  });

  it('refuses seeds the PRNG would alias (negative, 2^32 and above, fractions)', () => {
    for (const seed of [-1, 2 ** 32, 1.5, Number.NaN]) {
      expect(() => resolveSeed(seed, () => 0)).toThrow(/seed must be an integer from 0 to 4294967295/);
    }
  });
});
