import { describe, expect, it } from 'vitest';
import { turnTaker } from '../src/time.js';

describe('turnTaker', () => {
  it('resumes callers one per turn of the event loop, in the order they asked', async () => {
    const nextTurn = turnTaker();
    const seen: string[] = [];
    const caller = async (name: string): Promise<void> => {
      await nextTurn();
      seen.push(name);
      // Work this turn hands to the event loop is done before the next caller resumes.
      setImmediate(() => seen.push(`${name}'s callback`));
    };
    await Promise.all([caller('a'), caller('b'), caller('c')]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['a', "a's callback", 'b', "b's callback", 'c', "c's callback"]);
  });

  it('lets a caller that comes later, once the others are done, go at the next turn', async () => {
    const nextTurn = turnTaker();
    await nextTurn();
    let resumed = false;
    const later = nextTurn().then(() => (resumed = true));
    expect(resumed).toBe(false);
    await later;
    expect(resumed).toBe(true);
  });
});
