/**
 * The wire between the host and its sandbox process: length-prefixed frames on one socket, each
 * sealed under a key the host writes first, before the sandbox runs any agent.
 *
 * Why sealed: every thread of a process shares its file descriptors, and Node's permission model
 * does not guard a descriptor that is already open, so an agent in the sandbox can write to this
 * socket and read from it. What it writes does not open under the key: the host ends the sandbox
 * (its rollouts end crashed, as when an agent aborts its process) instead of taking the bytes for
 * another rollout's messages. What it reads is ciphertext, and the frames it took are missing:
 * the sandbox sees the gap at the next frame (each frame's tag covers its number) and exits.
 *
 * A frame: 4 bytes of length (big-endian), then the ciphertext and a 16-byte tag. Each direction
 * has two keys of its own, derived from the link's key with HKDF-SHA256 (seal.ts): one for AES-256
 * in counter mode, whose key stream runs on from frame to frame (no byte of it is used twice),
 * and one for HMAC-SHA256 over the frame's number, its length and its ciphertext: encrypt, then
 * MAC; the tag is the HMAC's first 16 bytes. A frame is deciphered only once its tag checks. The
 * frame's number is not sent: both ends count.
 *
 * (Before, AES-256-GCM with a cipher made per frame: ~10 µs a frame to make and collect,
 * and a tool call through the sandbox crosses four frames.)
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import { DefaultDeserializer, serialize } from 'node:v8';
import { exactView } from '../pool/views.js';
import { directionKeys, type FrameMac, type KeyStream } from './seal.js';

export const KEY_BYTES = 32;
const TAG_BYTES = 16;
const HEADER_BYTES = 4;

/** Which way a frame goes; each way has keys of its own, so a frame cannot be sent back where it came from. */
export const TO_SANDBOX = 1;
export const TO_HOST = 2;
export type Direction = typeof TO_SANDBOX | typeof TO_HOST;

/** What a frame carries, by its first byte. */
const Kind = {
  /** Any other message: V8's serialization (what structured clone keeps: Dates, Maps, BigInts). */
  Message: 0,
  /** A worker's message to the host (JSON text): a 4-byte rollout id, then UTF-8. */
  Text: 1,
  /** A message to a rollout's worker: a 4-byte rollout id, then V8's serialization. */
  ToWorker: 2,
  /**
   * A message to a rollout's worker that JSON carries exactly (jsonExact: most tool results): a
   * 4-byte rollout id, then its JSON text as UTF-8. V8's serializer costs ~10 µs a message to set
   * up, JSON a fraction of that; what arrives is the same either way.
   */
  ToWorkerJson: 3,
  /**
   * Any other message that JSON carries exactly (jsonExact): its JSON text as UTF-8. A run's task,
   * a rollout's exit: JSON.parse reads them in a fraction of what V8's deserializer costs (~0.1 ms a
   * run frame, on the sandbox's main thread, 256 of them as an eval starts).
   */
  MessageJson: 4,
} as const;
type Kind = (typeof Kind)[keyof typeof Kind];

/** What arrives on a link. */
export type Incoming = { kind: 'message'; message: unknown } | { kind: 'text'; id: number; text: string } | { kind: 'to'; id: number; message: unknown };

/** A new key for a sandbox. */
export const newKey = (): Buffer => randomBytes(KEY_BYTES);

/** Seals and writes frames going one way. */
export class FrameWriter {
  readonly #socket: Socket;
  /** This direction's key stream, running on from frame to frame. */
  readonly #stream: KeyStream;
  readonly #mac: FrameMac;
  #counter = 0;

  constructor(socket: Socket, key: Buffer, direction: Direction) {
    this.#socket = socket;
    ({ stream: this.#stream, mac: this.#mac } = directionKeys(key, direction));
  }

  /** Any structured-cloneable message: as JSON text when that carries it exactly, else V8's serialization. */
  message(message: unknown): void {
    const text = jsonText(message);
    if (text === undefined) return this.#write(Kind.Message, null, serialize(message));
    const plain = Buffer.allocUnsafe(1 + Buffer.byteLength(text, 'utf8'));
    plain[0] = Kind.MessageJson;
    plain.write(text, 1, 'utf8');
    this.#seal(plain);
  }

  /** A worker's JSON text for the host, for rollout `id`. */
  text(id: number, text: string): void {
    // The kind, the id and the text in one buffer: one pass of the cipher.
    const plain = Buffer.allocUnsafe(5 + Buffer.byteLength(text, 'utf8'));
    plain[0] = Kind.Text;
    plain.writeUInt32BE(id, 1);
    plain.write(text, 5, 'utf8');
    this.#seal(plain);
  }

  /** A message for rollout `id`'s worker: as JSON text when that carries it exactly, else V8's serialization. */
  toWorker(id: number, message: unknown): void {
    const text = jsonText(message);
    if (text !== undefined) {
      const plain = Buffer.allocUnsafe(5 + Buffer.byteLength(text, 'utf8'));
      plain[0] = Kind.ToWorkerJson;
      plain.writeUInt32BE(id, 1);
      plain.write(text, 5, 'utf8');
      return this.#seal(plain);
    }
    this.#write(Kind.ToWorker, id, serialize(message));
  }

  #write(kind: Kind, id: number | null, body: Buffer): void {
    const head = Buffer.allocUnsafe(id === null ? 1 : 5);
    head[0] = kind;
    if (id !== null) head.writeUInt32BE(id, 1);
    this.#seal(Buffer.concat([head, body]));
  }

  /** Seals `plain` (its kind, its id, its body) into one frame and writes it. */
  #seal(plain: Buffer): void {
    const frame = Buffer.allocUnsafe(HEADER_BYTES + plain.length + TAG_BYTES);
    frame.writeUInt32BE(plain.length + TAG_BYTES, 0);
    // Counter mode is a stream: the ciphertext is as long as the plaintext.
    const end = HEADER_BYTES + plain.length;
    this.#stream.apply(plain, frame, HEADER_BYTES);
    this.#mac.of(this.#counter++, frame.subarray(0, end)).copy(frame, end, 0, TAG_BYTES);
    if (this.#socket.destroyed) return;
    // The frames of one turn of the event loop go out in one write, at its end: as an eval starts,
    // hundreds of frames each way, a system call each otherwise.
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      setImmediate(this.#uncork);
    }
    this.#socket.write(frame);
  }

  /** Writes the frames held for the end of this turn now (before the process exits, say). */
  flush(): void {
    if (this.#corked) this.#uncork();
  }

  #corked = false;
  readonly #uncork = (): void => {
    if (!this.#corked) return;
    this.#corked = false;
    this.#socket.uncork();
  };
}

/** `message` as JSON text, when JSON carries it exactly and not much longer than V8's form would be. */
function jsonText(message: unknown): string | undefined {
  const text = jsonExact(message, JSON_EXACT_NODES) >= 0 ? JSON.stringify(message) : undefined;
  // (escapes can make JSON text of a string up to 6× longer than V8's form of it: long text goes that way)
  return text !== undefined && text.length <= JSON_FRAME_MAX_CHARS ? text : undefined;
}

/** How many values jsonExact looks at, and how deep, before it gives up (V8's serialization then carries the message). */
const JSON_EXACT_NODES = 10_000;
const JSON_EXACT_DEPTH = 100;
/** The longest JSON text sent as such, characters. */
const JSON_FRAME_MAX_CHARS = 16 * 2 ** 20;

/**
 * Whether JSON carries `value` exactly as structured clone would (plain objects and arrays,
 * strings, booleans, null, finite numbers other than -0; no undefined, holes, extra array
 * properties, shared or circular references): the number of values left of `budget`, or -1 when
 * it does not (or it holds more than `budget` values, or nests deeper than JSON_EXACT_DEPTH).
 */
export function jsonExact(value: unknown, budget: number, depth = 0, seen: Set<object> = new Set()): number {
  if (--budget < 0) return -1;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return budget;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0) ? budget : -1;
    case 'object': {
      if (value === null) return budget;
      // Structured clone keeps a value reached twice as one object, and cycles; JSON does neither.
      if (depth >= JSON_EXACT_DEPTH || seen.has(value)) return -1;
      seen.add(value);
      if (Array.isArray(value)) {
        if (value.length > budget || Object.getPrototypeOf(value) !== Array.prototype) return -1;
        // Properties besides the elements are kept by structured clone, not by JSON (a hole reads
        // as undefined, refused below).
        if (Object.keys(value).length !== value.length) return -1;
        for (const item of value as unknown[]) if ((budget = jsonExact(item, budget, depth + 1, seen)) < 0) return -1;
        return budget;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return -1;
      // (own symbol keys: neither carries them)
      for (const key of Object.keys(value)) {
        if ((budget = jsonExact((value as Record<string, unknown>)[key], budget, depth + 1, seen)) < 0) return -1;
      }
      return budget;
    }
    default:
      return -1;
  }
}

/**
 * Reads frames going one way and opens them. Anything that does not open (a wrong tag, a frame
 * missing, a length `allows` refuses) is fatal: `onBroken` is called once and nothing more is read.
 */
export class FrameReader {
  /** This direction's key stream, as the writer runs it. */
  readonly #stream: KeyStream;
  readonly #mac: FrameMac;
  readonly #allows: (length: number) => boolean;
  readonly #onFrame: (frame: Incoming) => void;
  readonly #onBroken: (reason: string) => void;
  #counter = 0;
  #broken = false;
  /** The 4 length bytes of the frame being read, as they come. */
  readonly #header = Buffer.alloc(HEADER_BYTES);
  #headerHave = 0;
  /** The frame being read (its length, ciphertext and tag), allocated once its length is known. */
  #body: Buffer | null = null;
  #bodyHave = 0;

  constructor(key: Buffer, direction: Direction, allows: (length: number) => boolean, onFrame: (frame: Incoming) => void, onBroken: (reason: string) => void) {
    ({ stream: this.#stream, mac: this.#mac } = directionKeys(key, direction));
    this.#allows = allows;
    this.#onFrame = onFrame;
    this.#onBroken = onBroken;
  }

  /** Feeds bytes read from the socket. */
  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.#broken) {
      if (this.#body === null) {
        // (The header came whole in this chunk: the frame can be a view of it.)
        const whole = this.#headerHave === 0;
        const take = Math.min(HEADER_BYTES - this.#headerHave, chunk.length - at);
        chunk.copy(this.#header, this.#headerHave, at, at + take);
        this.#headerHave += take;
        at += take;
        if (this.#headerHave < HEADER_BYTES) return;
        const length = this.#header.readUInt32BE(0);
        if (length <= TAG_BYTES || !this.#allows(length)) return this.#break(`a frame of ${length} bytes`);
        this.#headerHave = 0;
        // Most frames arrive whole in one chunk: then the frame is a view, not a copy.
        if (whole && chunk.length - at >= length) {
          const frame = chunk.subarray(at - HEADER_BYTES, at + length);
          at += length;
          this.#open(frame);
          continue;
        }
        this.#body = Buffer.allocUnsafe(HEADER_BYTES + length);
        this.#header.copy(this.#body);
        this.#bodyHave = HEADER_BYTES;
      }
      const body = this.#body;
      const take = Math.min(body.length - this.#bodyHave, chunk.length - at);
      chunk.copy(body, this.#bodyHave, at, at + take);
      this.#bodyHave += take;
      at += take;
      if (this.#bodyHave === body.length) {
        this.#body = null;
        this.#open(body);
      }
    }
  }

  #break(reason: string): void {
    if (this.#broken) return;
    this.#broken = true;
    this.#body = null;
    this.#onBroken(reason);
  }

  /** `frame`: the whole frame, its length included (the tag covers it). */
  #open(frame: Buffer): void {
    const end = frame.length - TAG_BYTES;
    if (!timingSafeEqual(this.#mac.of(this.#counter++, frame.subarray(0, end)).subarray(0, TAG_BYTES), frame.subarray(end))) {
      return this.#break('a frame that does not open under the key (forged, or one before it is missing)');
    }
    // A buffer of its own, never a slice of Node's shared pool: V8's deserializer hands back
    // typed arrays as views of it, and a view posted to a worker takes its whole backing memory
    // along (the pool would hold other frames' plaintext and the tag keys' pads). What is read
    // with V8's deserializer (a message to a worker, the sandbox's own messages: a run's task
    // among them) is read with deserializeOwn, whose views hold their own bytes only, so that
    // the sandbox posts a run's task to its worker without copying it first.
    const plain = Buffer.allocUnsafeSlow(end - HEADER_BYTES);
    this.#stream.apply(frame.subarray(HEADER_BYTES, end), plain, 0);
    let incoming: Incoming;
    try {
      const kind = plain[0];
      if (kind === Kind.Text) incoming = { kind: 'text', id: plain.readUInt32BE(1), text: plain.toString('utf8', 5) };
      else if (kind === Kind.ToWorkerJson) incoming = { kind: 'to', id: plain.readUInt32BE(1), message: JSON.parse(plain.toString('utf8', 5)) as unknown };
      else if (kind === Kind.ToWorker) incoming = { kind: 'to', id: plain.readUInt32BE(1), message: deserializeOwn(plain.subarray(5)) };
      else if (kind === Kind.MessageJson) incoming = { kind: 'message', message: JSON.parse(plain.toString('utf8', 1)) as unknown };
      else if (kind === Kind.Message) incoming = { kind: 'message', message: deserializeOwn(plain.subarray(1)) };
      else return this.#break(`a frame of unknown kind ${String(kind)}`);
    } catch (err) {
      return this.#break(`a frame that cannot be read (${err instanceof Error ? err.message : 'unknown error'})`);
    }
    this.#onFrame(incoming);
  }
}

/**
 * V8's deserializer, but every typed array and DataView it reads gets a buffer of exactly its
 * bytes. Node's makes a view of the message where the view's offset there is a multiple of its
 * element size, and otherwise copies it into a slice of the shared pool (a Float64Array, most of
 * the time): posted to a worker, such a view took the sandbox's 8 KiB pool along, with whatever
 * other rollouts' messages had left there.
 */
class OwnBytesDeserializer extends DefaultDeserializer {
  _readHostObject(): unknown {
    return exactView((DefaultDeserializer.prototype as unknown as { _readHostObject(this: DefaultDeserializer): ArrayBufferView })._readHostObject.call(this));
  }
}

/** `v8.deserialize`, with views that hold their own bytes (OwnBytesDeserializer). */
export function deserializeOwn(buffer: Buffer): unknown {
  const reader = new OwnBytesDeserializer(buffer);
  reader.readHeader();
  return reader.readValue();
}
