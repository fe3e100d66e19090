/** The link's key stream and tags (src/sandbox/seal.ts) are Node's AES-256-CTR and HMAC-SHA256, exactly. */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createCipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { COLD_FRAMES, directionKeys, FrameMac, KeyStream, sealingCold } from '../../src/sandbox/seal.js';

// A thread's first frames go through Node's cipher and HMAC, a call each (cheaper until V8 has
// optimized the code here); the later ones through the key stream drawn ahead and one-shot hashes.
// Every check below runs in both ways.
const phases: Array<[string, boolean, () => void]> = [
  ["in a thread's first frames", true, () => {}],
  [
    `past a thread's first ${COLD_FRAMES} frames`,
    false,
    () => {
      const stream = new KeyStream(randomBytes(32));
      const one = Buffer.alloc(1);
      while (sealingCold()) stream.apply(one, Buffer.alloc(1), 0);
    },
  ],
];

for (const [phase, cold, before] of phases) {
  describe(phase, () => {
    beforeAll(before);
    it(cold ? 'is the cold way' : 'is the warm way', () => expect(sealingCold()).toBe(cold));
    describe('the key stream', () => {
      it('is AES-256-CTR from block 0 over the frames in order, whatever their sizes', () => {
        const key = randomBytes(32);
        const stream = new KeyStream(key);
        // Small and odd-sized frames, one past the bytes drawn ahead, long ones that go through the
        // cipher directly (also right after a short one, mid-block), and small ones again.
        const sizes = [1, 15, 16, 17, 150, 5_000, 3, 20_000, 16_384, 7, 100_000, 33, 1, 4_097, 9];
        const frames = sizes.map((size) => randomBytes(size));
        const mine = frames.map((frame) => {
          const out = Buffer.alloc(frame.length + 6, 0xee);
          stream.apply(frame, out, 3);
          // Only the frame's place in `out` is written.
          expect(out.subarray(0, 3)).toEqual(Buffer.alloc(3, 0xee));
          expect(out.subarray(out.length - 3)).toEqual(Buffer.alloc(3, 0xee));
          return out.subarray(3, out.length - 3);
        });
        const node = createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.concat(frames));
        expect(Buffer.concat(mine).equals(node)).toBe(true);
      });

      it('deciphers what it enciphered (a reader with the same key, in the same order)', () => {
        const key = randomBytes(32);
        const writer = new KeyStream(key);
        const reader = new KeyStream(key);
        for (const size of [12, 9_000, 40, 70_000, 5]) {
          const plain = randomBytes(size);
          const sealed = Buffer.alloc(size);
          writer.apply(plain, sealed, 0);
          expect(sealed.equals(plain)).toBe(false);
          const opened = Buffer.alloc(size);
          reader.apply(sealed, opened, 0);
          expect(opened.equals(plain)).toBe(true);
        }
      });
    });

    describe('the tag', () => {
      it('is HMAC-SHA256 of the frame number (8 bytes, big-endian) and the bytes, small frames and large', () => {
        const key = randomBytes(32);
        const mac = new FrameMac(key);
        for (const [number, size] of [[0, 0], [1, 20], [2 ** 32 + 5, 300], [7, 8_192], [8, 8_193], [9, 200_000]] as const) {
          const bytes = randomBytes(size);
          const prefix = Buffer.alloc(8);
          prefix.writeUInt32BE(Math.floor(number / 2 ** 32), 0);
          prefix.writeUInt32BE(number >>> 0, 4);
          const node = createHmac('sha256', key).update(prefix).update(bytes).digest();
          expect(mac.of(number, bytes).equals(node)).toBe(true);
        }
      });
    });

    describe('what is keyed', () => {
      it('stays out of Node\'s shared buffer pool (the pads of the tag key)', () => {
        const key = randomBytes(32);
        const mac = new FrameMac(key);
        const pad = Buffer.alloc(32);
        for (let i = 0; i < 32; i++) pad[i] = key[i]! ^ 0x36;
        for (const size of [10, 200, 2_000]) {
          mac.of(1, randomBytes(size));
          // The pool small allocations come from now (a tag's scratch would be in it).
          const pool = Buffer.from(Buffer.allocUnsafe(1).buffer);
          expect(pool.includes(pad)).toBe(false);
        }
      });
    });
  });
}

describe('the tag without crypto.hash (Node before 20.12)', () => {
  it('is the same HMAC, from Node\'s Hmac', async () => {
    vi.resetModules();
    vi.doMock('node:crypto', async (original) => ({ ...(await original<typeof import('node:crypto')>()), hash: undefined }));
    try {
      const fresh = await import('../../src/sandbox/seal.js');
      const key = randomBytes(32);
      const bytes = randomBytes(300);
      const prefix = Buffer.from([0, 0, 0, 0, 0, 0, 0, 3]);
      const node = createHmac('sha256', key).update(prefix).update(bytes).digest();
      // In a thread's first frames, and past them (where crypto.hash would be used if it were there).
      expect(fresh.sealingCold()).toBe(true);
      expect(new fresh.FrameMac(key).of(3, bytes).equals(node)).toBe(true);
      const stream = new fresh.KeyStream(randomBytes(32));
      const one = Buffer.alloc(1);
      while (fresh.sealingCold()) stream.apply(one, Buffer.alloc(1), 0);
      expect(new fresh.FrameMac(key).of(3, bytes).equals(node)).toBe(true);
    } finally {
      vi.doUnmock('node:crypto');
      vi.resetModules();
    }
  });
});

describe("a link that runs past a thread's first frames", () => {
  it('goes on with the same key stream and tags, whatever the frames on either side of the change', async () => {
    // A fresh module: this thread's frame count starts again at 0.
    vi.resetModules();
    const fresh = await import('../../src/sandbox/seal.js');
    try {
      expect(fresh.sealingCold()).toBe(true);
      const key = randomBytes(32);
      const stream = new fresh.KeyStream(key);
      const frames: Buffer[] = [];
      const out: Buffer[] = [];
      const sizes = [1, 15, 5_000, 7, 20_000, 33, 16_384, 3];
      // Frames of every size, until the change, and on past it.
      for (let i = 0; fresh.sealingCold() || i < fresh.COLD_FRAMES + sizes.length * 2; i++) {
        const frame = randomBytes(sizes[i % sizes.length]!);
        const sealed = Buffer.alloc(frame.length);
        stream.apply(frame, sealed, 0);
        frames.push(frame);
        out.push(sealed);
      }
      expect(fresh.sealingCold()).toBe(false);
      const node = createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.concat(frames));
      expect(Buffer.concat(out).equals(node)).toBe(true);
      // And a writer and a reader in this thread, through the change: every frame opens, in order.
      vi.resetModules();
      const seal2 = await import('../../src/sandbox/seal.js');
      const link2 = await import('../../src/sandbox/link.js');
      expect(seal2.sealingCold()).toBe(true);
      const linkKey = link2.newKey();
      const wire: Buffer[] = [];
      const socket = { destroyed: false, cork: () => {}, uncork: () => {}, write: (b: Buffer) => wire.push(Buffer.from(b)) };
      const writer = new link2.FrameWriter(socket as never, linkKey, link2.TO_HOST);
      const got: unknown[] = [];
      const broken: string[] = [];
      const reader = new link2.FrameReader(linkKey, link2.TO_HOST, () => true, (f) => got.push(f), (r) => broken.push(r));
      // Each frame is sealed and opened in this thread: two a message, past the change halfway.
      const messages = seal2.COLD_FRAMES;
      for (let i = 0; i < messages; i++) {
        writer.text(i, `message ${i}`);
        reader.push(Buffer.concat(wire.splice(0)));
      }
      expect(seal2.sealingCold()).toBe(false);
      expect(broken).toEqual([]);
      expect(got).toHaveLength(messages);
      expect(got.at(-1)).toEqual({ kind: 'text', id: messages - 1, text: `message ${messages - 1}` });
    } finally {
      vi.resetModules();
    }
  });
});

describe('the keys of a direction', () => {
  it('are HKDF-SHA256 of the link key: the key stream under the first 32 bytes, the tag under the last', () => {
    const key = randomBytes(32);
    const derived = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'silo link 2', 64));
    const { stream, mac } = directionKeys(key, 2);
    const plain = randomBytes(100);
    const out = Buffer.alloc(100);
    stream.apply(plain, out, 0);
    expect(out.equals(createCipheriv('aes-256-ctr', derived.subarray(0, 32), Buffer.alloc(16)).update(plain))).toBe(true);
    expect(mac.of(0, plain).equals(new FrameMac(derived.subarray(32)).of(0, plain))).toBe(true);
    // The other direction has keys of its own.
    const other = directionKeys(key, 1);
    const theirs = Buffer.alloc(100);
    other.stream.apply(plain, theirs, 0);
    expect(theirs.equals(out)).toBe(false);
    expect(other.mac.of(0, plain).equals(mac.of(0, plain))).toBe(false);
  });
});
