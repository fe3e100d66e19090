/**
 * A file that lines are appended to as a run goes (trace.jsonl, an eval's runs.jsonl).
 *
 * Lines are written with plain synchronous appends, batched once per event-loop turn (or, with
 * `batchMs`, at most that long after the first line waiting). A write stream would send every
 * line, its open and its close through libuv's thread pool: a round trip that costs more than the
 * small write itself, and one the rollout waits for when the file is closed. The file is opened (created) in the background, so creating it is not on the rollout's
 * path; lines that come before it is open wait in memory.
 */
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fstatSync, open, openSync, readFileSync, writeSync } from 'node:fs';

/**
 * Characters pending at which lines are written at once rather than at the end of the turn: a
 * flood of large events in one turn (calls answered in microtasks) must neither pile up in
 * memory nor be joined into a string longer than V8 allows ("Invalid string length").
 */
const FLUSH_CHARS = 1024 * 1024;

export class AppendFile {
  readonly #file: string;
  /** Lines not written yet. */
  #pending: string[] = [];
  #pendingChars = 0;
  #fd: number | null = null;
  /** Set once the file cannot be opened or written (disk full): later lines are dropped. */
  #failed = false;
  #closed = false;
  #flushing: NodeJS.Immediate | NodeJS.Timeout | null = null;
  readonly #batchMs: number;
  readonly #opened: Promise<void>;
  /** With `verify`: a hash of the bytes written, their count, and the file's size when opened. */
  readonly #hash: Hash | null;
  #written = 0;
  #start = 0;
  /** Opened only once the `after` of the constructor settles (its folder does not exist yet). */
  #waiting = false;

  /**
   * `verify`: close() tells whether the file holds exactly what was appended through this object.
   * In thread mode an agent's thread shares the host's descriptors, and Node's permission model
   * does not guard descriptors already open: it can write into this file. Opened for appending,
   * it can only add bytes (or cut it short), never overwrite: its size and a hash of what was
   * written show either.
   *
   * `batchMs`: lines wait up to this long to be written together, rather than to the end of the
   * turn: a trace gets two lines per tool call, and a call answered in its own turn would cost a
   * write (a system call, and one more pass of the event loop) of its own.
   *
   * `after`: the file is opened once this settles (its folder is made meanwhile), synchronously
   * then (no round trip through the thread pool); if it rejects, the file is never opened and
   * its lines are dropped.
   */
  constructor(file: string, { verify = false, batchMs = 0, after }: { verify?: boolean; batchMs?: number; after?: Promise<unknown> } = {}) {
    this.#file = file;
    this.#batchMs = batchMs;
    this.#hash = verify ? createHash('sha1') : null;
    if (after) {
      this.#waiting = true;
      this.#opened = after.then(
        () => {
          this.#waiting = false;
          if (this.#failed || this.#fd !== null) return;
          this.#openNow();
          if (!this.#closed) this.#flush();
        },
        () => {
          this.#waiting = false;
          this.#fail();
        },
      );
      return;
    }
    this.#opened = new Promise((resolve) => {
      open(file, 'a', (err, fd) => {
        if (err) {
          if (this.#fd === null) this.#fail();
        } else if (this.#fd !== null) {
          // Opened synchronously meanwhile (see append()).
          closeQuietly(fd);
        } else {
          this.#opening(fd);
          // Lines that came while it opened; once closing, close() writes them.
          if (!this.#closed) this.#flush();
        }
        resolve();
      });
    });
  }

  /** Appends `text` within this event-loop turn, or `batchMs` (or once the file is open). Never throws. */
  append(text: string): void {
    if (this.#failed || this.#closed) return;
    this.#pending.push(text);
    this.#pendingChars += text.length;
    if (this.#pendingChars >= FLUSH_CHARS && (this.#fd !== null || !this.#waiting)) {
      // Too much to keep waiting: written now (the file opened now if it is not yet).
      if (this.#fd === null) this.#openNow();
      this.#flush();
      return;
    }
    // Until the file is open, lines wait; opening it writes them.
    if (this.#fd !== null) this.#flushing ??= this.#batchMs > 0 ? setTimeout(() => this.#flush(), this.#batchMs) : setImmediate(() => this.#flush());
  }

  #openNow(): void {
    try {
      this.#opening(openSync(this.#file, 'a'));
    } catch {
      this.#fail();
    }
  }

  #opening(fd: number): void {
    this.#fd = fd;
    if (!this.#hash) return;
    try {
      this.#start = fstatSync(fd).size;
    } catch {
      this.#fail();
    }
  }

  /**
   * Writes what is pending and closes the file. Never rejects. Resolves false when lines were
   * lost (the file could not be written) or, with `verify`, when the file does not hold exactly
   * what was appended (see the constructor).
   */
  async close(): Promise<boolean> {
    if (this.#closed) {
      await this.#opened;
      return !this.#failed;
    }
    this.#closed = true;
    await this.#opened;
    this.#flush();
    if (this.#fd !== null) closeQuietly(this.#fd);
    this.#fd = null;
    if (this.#failed) return false;
    return this.#hash ? this.#intact(this.#hash) : true;
  }

  #intact(hash: Hash): boolean {
    try {
      const bytes = readFileSync(this.#file);
      return bytes.length === this.#start + this.#written && createHash('sha1').update(bytes.subarray(this.#start)).digest('hex') === hash.digest('hex');
    } catch {
      return false;
    }
  }

  #flush(): void {
    if (this.#flushing) {
      if (this.#batchMs > 0) clearTimeout(this.#flushing as NodeJS.Timeout);
      else clearImmediate(this.#flushing as NodeJS.Immediate);
    }
    this.#flushing = null;
    if (this.#fd === null || this.#pending.length === 0) return;
    const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join('');
    this.#pending = [];
    this.#pendingChars = 0;
    try {
      const bytes = Buffer.from(text, 'utf8');
      for (let at = 0; at < bytes.length; ) at += writeSync(this.#fd, bytes, at);
      this.#hash?.update(bytes);
      this.#written += bytes.length;
    } catch {
      // A write error (disk full) must not crash the host; the run goes on without this file.
      this.#fail();
    }
  }

  #fail(): void {
    this.#failed = true;
    this.#pending = [];
    this.#pendingChars = 0;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // nothing left to do with it
  }
}
