/**
 * What seals the link's frames (link.ts), one direction at a time: AES-256 in counter mode and
 * HMAC-SHA256, both exactly as Node's own (`createCipheriv('aes-256-ctr')` over all the frames
 * in order, `createHmac('sha256')` over each), made cheap for the small frames a tool call sends.
 *
 * A cipher or an HMAC object per frame costs ~3–10 µs to make and to collect, and a tool call
 * through the sandbox crosses four frames. Once a thread has sealed or opened its first few
 * thousand frames (before, V8 has not optimized the code here yet, and Node's calls cost less:
 * COLD_FRAMES), nothing is made per frame: the key stream is drawn from one cipher 16 KiB at a
 * time, and a small frame's HMAC is two one-shot SHA-256 hashes (RFC 2104: H(K ⊕ opad ‖ H(K ⊕
 * ipad ‖ message))).
 *
 * Nothing keyed goes through Node's shared buffer pool (`Buffer.allocUnsafe` of small sizes):
 * the pads and the hashes' input live in buffers of their own.
 */
import * as crypto from 'node:crypto';
import { createCipheriv, createHmac, createSecretKey, hkdfSync, type Cipher, type KeyObject } from 'node:crypto';

/** The key stream drawn ahead, bytes (a whole number of AES blocks). */
const STREAM_AHEAD_BYTES = 16 * 1024;
const ZEROS = Buffer.alloc(STREAM_AHEAD_BYTES);
/** Past this many bytes, a frame goes through the cipher itself rather than byte by byte here. */
const STREAM_DIRECT_BYTES = 4 * 1024;
/** Up to this many bytes, a frame's HMAC is two one-shot hashes; past it, Node's Hmac (no copy of the frame). */
const MAC_ONE_SHOT_BYTES = 8 * 1024;
/** SHA-256's block, bytes. */
const BLOCK = 64;

/**
 * Frames sealed or opened by this thread so far. The first COLD_FRAMES each go through Node's
 * cipher and HMAC in one call: until V8 has optimized xor() and the pads' copies, the work here
 * costs 2–3× what those calls do (measured on a 2-core VM: a 1.2 KB frame's key stream 25 µs here
 * against 9 µs, its HMAC 15 µs against 9 µs, over a process's first 500–1,000 frames), and an
 * eval's start seals and opens a few frames per rollout at once. Past them, the key stream drawn
 * ahead and the one-shot hashes, which cost less once optimized (small frames: 1.5 µs against 2.5 µs).
 */
let framesSeen = 0;
export const COLD_FRAMES = 4096;

/** Whether this thread is still in its first COLD_FRAMES frames (for tests: both ways are Node's AES-CTR and HMAC). */
export const sealingCold = (): boolean => framesSeen < COLD_FRAMES;

/** Node 20.12 and later: a hash in one call, no object. */
const hashOnce = (crypto as { hash?: (algorithm: string, data: Buffer, encoding: 'buffer') => Buffer }).hash;

/** One direction's two keys, derived from the link's key with HKDF-SHA256. */
export function directionKeys(key: Buffer, direction: number): { stream: KeyStream; mac: FrameMac } {
  const bytes = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `silo link ${direction}`, 64));
  try {
    return { stream: new KeyStream(bytes.subarray(0, 32)), mac: new FrameMac(bytes.subarray(32)) };
  } finally {
    // (Hygiene, not a barrier: the pads derived from the tag key stay in FrameMac.)
    bytes.fill(0);
  }
}

/** AES-256-CTR's key stream from block 0 (each direction has a key of its own), applied in order. */
export class KeyStream {
  readonly #cipher: Cipher;
  #ahead: Buffer = Buffer.alloc(0);
  #at = 0;

  constructor(key: Buffer) {
    this.#cipher = createCipheriv('aes-256-ctr', createSecretKey(key), Buffer.alloc(16));
  }

  /** `input` XOR the next `input.length` bytes of the stream, written into `output` at `offset`. */
  apply(input: Buffer, output: Buffer, offset: number): void {
    // (Nothing is drawn ahead while the frames are few: the cipher stands where this frame starts.)
    if (framesSeen < COLD_FRAMES) {
      framesSeen++;
      this.#cipher.update(input).copy(output, offset);
      return;
    }
    let done = 0;
    while (done < input.length) {
      if (this.#at === this.#ahead.length) {
        // All drawn ahead is used: the cipher stands where this frame goes on, and a long frame
        // is faster through it than byte by byte.
        if (input.length - done > STREAM_DIRECT_BYTES) {
          this.#cipher.update(input.subarray(done)).copy(output, offset + done);
          return;
        }
        this.#ahead = this.#cipher.update(ZEROS);
        this.#at = 0;
      }
      const n = Math.min(input.length - done, this.#ahead.length - this.#at);
      xor(input, done, this.#ahead, this.#at, output, offset + done, n);
      this.#at += n;
      done += n;
    }
  }
}

/** Below this many bytes, xor() goes byte by byte; above, a word (4 bytes) at a time. */
const XOR_WORDS_FROM = 64;
/** xor()'s two operands, copied where a word is aligned (at most what is drawn ahead). */
const left = new Int32Array(STREAM_AHEAD_BYTES / 4);
const right = new Int32Array(STREAM_AHEAD_BYTES / 4);
const leftBytes = new Uint8Array(left.buffer);
const rightBytes = new Uint8Array(right.buffer);

/**
 * `output[to..]` = `a[from..]` XOR `b[at..]`, `n` bytes (n ≤ STREAM_AHEAD_BYTES). A frame's
 * bytes and the key stream start anywhere in their buffers: both are copied (natively) into
 * aligned scratch and combined a word at a time, a quarter of the steps of a byte loop. This
 * matters before V8 optimizes the loop: the first few hundred frames of a process (an eval's
 * start frames, 1 KB each) went through it byte by byte, interpreted.
 */
function xor(a: Buffer, from: number, b: Buffer, at: number, output: Buffer, to: number, n: number): void {
  if (n < XOR_WORDS_FROM) {
    for (let i = 0; i < n; i++) output[to + i] = a[from + i]! ^ b[at + i]!;
    return;
  }
  leftBytes.set(a.subarray(from, from + n));
  rightBytes.set(b.subarray(at, at + n));
  const words = n >>> 2;
  for (let i = 0; i < words; i++) left[i]! ^= right[i]!;
  for (let i = words * 4; i < n; i++) leftBytes[i]! ^= rightBytes[i]!;
  output.set(leftBytes.subarray(0, n), to);
}

/** HMAC-SHA256 of a frame's number and its bytes. */
export class FrameMac {
  readonly #key: KeyObject;
  /** The key XOR ipad, then the frame's number and bytes: the inner hash's input, reused. */
  readonly #inner = Buffer.alloc(BLOCK + 8 + MAC_ONE_SHOT_BYTES, 0x36);
  /** The key XOR opad, then the inner hash: the outer hash's input, reused. */
  readonly #outer = Buffer.alloc(BLOCK + 32, 0x5c);

  constructor(key: Buffer) {
    this.#key = createSecretKey(key);
    // (The key is shorter than a block: zero-padded, so the pads stand as they are past it.)
    for (let i = 0; i < key.length; i++) {
      this.#inner[i]! ^= key[i]!;
      this.#outer[i]! ^= key[i]!;
    }
  }

  /** HMAC-SHA256(number (8 bytes, big-endian) ‖ bytes). */
  of(number: number, bytes: Buffer): Buffer {
    if (hashOnce === undefined || bytes.length > MAC_ONE_SHOT_BYTES || framesSeen < COLD_FRAMES) {
      const prefix = Buffer.alloc(8);
      writeNumber(prefix, 0, number);
      return createHmac('sha256', this.#key).update(prefix).update(bytes).digest();
    }
    writeNumber(this.#inner, BLOCK, number);
    bytes.copy(this.#inner, BLOCK + 8);
    hashOnce('sha256', this.#inner.subarray(0, BLOCK + 8 + bytes.length), 'buffer').copy(this.#outer, BLOCK);
    return hashOnce('sha256', this.#outer, 'buffer');
  }
}

/** Frames are counted in a double: exact far past any number of frames a sandbox will see. */
function writeNumber(into: Buffer, at: number, number: number): void {
  into.writeUInt32BE(Math.floor(number / 2 ** 32), at);
  into.writeUInt32BE(number >>> 0, at + 4);
}
