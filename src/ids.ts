/**
 * ULIDs for runs and evals. ulid's own random source asks the OS for one byte per character
 * (16 calls per id); this one draws them from a block of random bytes filled a few KB at a time.
 */
import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

const block = new Uint8Array(4096);
let next = block.length;

/** A random number in [0, 1) from the block (ulid uses 5 bits of each). */
function random(): number {
  if (next >= block.length) {
    randomFillSync(block);
    next = 0;
  }
  return block[next++]! / 256;
}

/** A new ULID: time-ordered, 80 random bits. */
export function newId(): string {
  return ulid(undefined, random);
}
