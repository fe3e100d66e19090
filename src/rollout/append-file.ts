/**
 * A file that lines are appended to as a run goes (trace.jsonl, an eval's runs.jsonl).
 *
 * Lines are written with plain synchronous appends, batched once per event-loop turn. A write
 * stream would send every line, its open and its close through libuv's thread pool: a round trip
 * that costs more than the small write itself, and one the rollout waits for when the file is
 * closed. The file is opened (created) in the background, so creating it is not on the rollout's
 * path; lines that come before it is open wait in memory.
 */
import { closeSync, open, writeSync } from 'node:fs';

export class AppendFile {
  /** Lines not written yet. */
  #pending: string[] = [];
  #fd: number | null = null;
  /** Set once the file cannot be opened or written (disk full): later lines are dropped. */
  #failed = false;
  #closed = false;
  #flushing: NodeJS.Immediate | null = null;
  readonly #opened: Promise<void>;

  constructor(file: string) {
    this.#opened = new Promise((resolve) => {
      open(file, 'a', (err, fd) => {
        if (err) {
          this.#fail();
        } else {
          this.#fd = fd;
          // Lines that came while it opened; once closing, close() writes them.
          if (!this.#closed) this.#flush();
        }
        resolve();
      });
    });
  }

  /** Appends `text` within this event-loop turn (or once the file is open). Never throws. */
  append(text: string): void {
    if (this.#failed || this.#closed) return;
    this.#pending.push(text);
    // Until the file is open, lines wait; opening it writes them.
    if (this.#fd !== null) this.#flushing ??= setImmediate(() => this.#flush());
  }

  /** Writes what is pending and closes the file. Never rejects. */
  async close(): Promise<void> {
    if (this.#closed) return this.#opened;
    this.#closed = true;
    await this.#opened;
    this.#flush();
    if (this.#fd !== null) closeQuietly(this.#fd);
    this.#fd = null;
  }

  #flush(): void {
    if (this.#flushing) clearImmediate(this.#flushing);
    this.#flushing = null;
    if (this.#fd === null || this.#pending.length === 0) return;
    const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join('');
    this.#pending = [];
    try {
      const bytes = Buffer.from(text, 'utf8');
      for (let at = 0; at < bytes.length; ) at += writeSync(this.#fd, bytes, at);
    } catch {
      // A write error (disk full) must not crash the host; the run goes on without this file.
      this.#fail();
    }
  }

  #fail(): void {
    this.#failed = true;
    this.#pending = [];
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // nothing left to do with it
  }
}
