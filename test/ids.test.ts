import { describe, expect, it } from 'vitest';
import { decodeTime, isValid } from 'ulid';
import { newId } from '../src/ids.js';

describe('newId', () => {
  it('makes valid ULIDs of the current time', () => {
    const before = Date.now();
    const id = newId();
    expect(isValid(id)).toBe(true);
    expect(decodeTime(id)).toBeGreaterThanOrEqual(before);
    expect(decodeTime(id)).toBeLessThanOrEqual(Date.now());
  });

  it('never repeats, past many refills of its random bytes', () => {
    const ids = Array.from({ length: 5_000 }, () => newId());
    expect(new Set(ids).size).toBe(ids.length);
    // The random part uses the whole alphabet, not a few characters.
    expect(new Set(ids.flatMap((id) => [...id.slice(10)])).size).toBe(32);
  });
});
