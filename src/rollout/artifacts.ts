/**
 * Step 9: the run folder. JSON files are written to a temporary name and renamed, so a crash
 * never leaves a torn file; run.json exists from the start with status "running".
 *
 * The writes are synchronous on purpose: a run writes a few small files, and each asynchronous
 * write and rename is a round trip through libuv's thread pool. Measured in reuse mode (where
 * these writes are most of a rollout): 1.3–1.4 ms per rollout synchronous, 2.5–3.7 ms not.
 * Measured again on a 2-core VM (a run's folder, run.json twice, result.json, state-diff.json
 * and the trace): 0.5–0.7 ms per run synchronous, 1.7–5 ms with fs/promises, 1.2–3 ms through a
 * writer thread, and for 256 runs at once the synchronous writes also took the least CPU. What
 * costs is creating files (six inodes a run), kernel CPU wherever it runs: 20 µs to 0.7 ms each
 * on ext4 without a journal, which skips over every inode freed in the last minutes (so removing
 * many old runs makes new ones slower for a while).
 *
 * So a run creates what it must: its folder, run.json (written in place the first time: the
 * folder is new and nobody has read it), the trace, and state-diff.json and result.json written
 * in place too: run.json is the run's commit point, renamed into place last, and until it leaves
 * "running" the other files are not the run's word (a reader of a run left "running" by a dead
 * process treats it as crashed, whatever else it finds). Two files and two renames fewer a run.
 *
 * Creating them is still most of a short rollout's cost on a slow file system (0.5–0.65 ms a
 * file measured on this VM's ext4 after many deletions, five a run), so after a process's first
 * run in an artifact folder they are created in the background, on libuv's threads, while the
 * world is built and the agent runs: the folder and run.json ("running") first, then the trace
 * and the three files the end writes (state-diff.json, result.json, run.json's temporary name).
 * The end writes into those descriptors and renames run.json: whole or not at all, as before.
 */
import { close, closeSync, existsSync, mkdir, mkdirSync, open, readFileSync, renameSync, unlinkSync, writeFile, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ResultRecord, RunRecord } from '../types.js';
import type { Change } from './diff.js';
import { toJsonLine } from './trace.js';

let tmpCounter = 0;

/** Writes `value` as JSON to `file` atomically (write, then rename). */
export async function writeJsonAtomic(file: string, value: unknown, pretty = true): Promise<void> {
  const tmp = `${file}.${process.pid}.${tmpCounter++}.tmp`;
  writeFileSync(tmp, `${toJsonLine(value, pretty ? 2 : undefined)}\n`);
  renameSync(tmp, file);
}

/** Artifact folders this process has created a run folder in (so it may write there). */
const writable = new Set<string>();

/** The files a run writes at its end, created ahead (see RunArtifacts). */
interface Ends {
  diff: number;
  result: number;
  /** run.json's temporary name, renamed over run.json last. */
  run: number;
  runTmp: string;
}

/** Runs of this process whose end is not written yet (see leaveWhole). */
const unfinished = new Set<RunArtifacts>();
let exitHook = false;

/** The files of one run folder. */
export class RunArtifacts {
  readonly dir: string;
  readonly #outDir: string;
  /** run.json's first text ("running"), kept to leave it whole if the process exits early. */
  #running = '';
  /** End files written so far, by name. */
  readonly #written = new Set<string>();
  #runTmp: string | null = null;
  /** The folder and run.json ("running"): settled once they exist, rejected if they cannot be made. */
  #created: Promise<void> = Promise.resolve();
  /** The end files, opened in the background; null where that failed (then written by name). */
  #ends: Promise<Ends | null> = Promise.resolve(null);
  constructor(outDir: string, runId: string) {
    this.#outDir = outDir;
    this.dir = join(outDir, 'runs', runId);
  }
  get traceFile(): string {
    return join(this.dir, 'trace.jsonl');
  }
  /** Settles once the run's folder exists (the trace is opened after it). */
  get folder(): Promise<unknown> {
    return this.#created.catch(() => undefined);
  }
  /**
   * The run's folder and its run.json ("running"). The first run of this process in an artifact
   * folder makes them at once, so a folder that cannot be written is a set-up error before
   * anything starts; later runs given `background` make them in the background (libuv's threads) while the world is
   * built and the agent starts, and a failure then surfaces when the run writes its end.
   */
  create(record: RunRecord, { background = false }: { background?: boolean } = {}): Promise<void> {
    const text = `${toJsonLine(record, 2)}\n`;
    this.#running = text;
    unfinished.add(this);
    if (!exitHook) {
      exitHook = true;
      process.on('exit', () => {
        for (const run of unfinished) run.#leaveWhole();
      });
    }
    if (!background || !writable.has(this.#outDir)) {
      mkdirSync(this.dir, { recursive: true });
      // A new folder: `wx` fails if the run id was somehow taken, rather than writing into its run.
      writeFileSync(join(this.dir, 'run.json'), text, { flag: 'wx' });
      writable.add(this.#outDir);
    } else {
      this.#created = new Promise<void>((resolve, reject) => {
        mkdir(this.dir, { recursive: true }, (err) => {
          if (err) return reject(err);
          writeFile(join(this.dir, 'run.json'), text, { flag: 'wx' }, (e) => (e ? reject(e) : resolve()));
        });
      });
      this.#created.catch(() => undefined);
    }
    this.#ends = this.#created.then(() => this.#openEnds(), () => null);
    return Promise.resolve();
  }
  writeRun(record: RunRecord): Promise<void> {
    return this.#end(async (ends) => {
      const text = `${toJsonLine(record, 2)}\n`;
      try {
        if (!ends) return await writeJsonAtomic(join(this.dir, 'run.json'), record);
        writeAll(ends.run, text);
        renameSync(ends.runTmp, join(this.dir, 'run.json'));
      } finally {
        unfinished.delete(this);
      }
    });
  }
  writeResult(result: ResultRecord): Promise<void> {
    return this.#end(async (ends) => {
      writeInPlace(ends?.result, join(this.dir, 'result.json'), `${toJsonLine(result, 2)}\n`);
      this.#written.add('result.json');
    });
  }
  writeDiff(changes: readonly Change[]): Promise<void> {
    // Diffs of big worlds can be large: compact JSON.
    return this.#end(async (ends) => {
      writeInPlace(ends?.diff, join(this.dir, 'state-diff.json'), `${toJsonLine(changes)}\n`);
      this.#written.add('state-diff.json');
    });
  }

  /**
   * The process is exiting before this run's end (a second Ctrl-C): no file of it may be left
   * torn. run.json, if its folder exists, holds the "running" record whole (its background write
   * may have been cut short), and the end files created ahead but not written, and run.json's
   * temporary name, are removed. Synchronous, in the process's 'exit' event.
   */
  #leaveWhole(): void {
    if (!existsSync(this.dir)) return;
    const run = join(this.dir, 'run.json');
    try {
      JSON.parse(readFileSync(run, 'utf8'));
    } catch {
      try {
        writeFileSync(run, this.#running);
      } catch {
        // nothing more to do while exiting
      }
    }
    const leftovers = ['state-diff.json', 'result.json'].filter((name) => !this.#written.has(name)).map((name) => join(this.dir, name));
    for (const file of this.#runTmp ? [...leftovers, this.#runTmp] : leftovers) {
      try {
        unlinkSync(file);
      } catch {
        // not created
      }
    }
  }

  async #end(write: (ends: Ends | null) => Promise<void>): Promise<void> {
    await this.#created;
    await write(await this.#ends);
  }

  /**
   * Creates the files the run writes at its end, in the background: creating a file (an inode)
   * is what costs on a slow file system, and done now it overlaps the agent's run instead of
   * following it. Their content is written at the end (state-diff.json and result.json are not
   * the run's word until run.json leaves "running"; run.json's own is renamed into place).
   */
  #openEnds(): Promise<Ends | null> {
    const runTmp = `${join(this.dir, 'run.json')}.${process.pid}.${tmpCounter++}.tmp`;
    this.#runTmp = runTmp;
    const opening = [join(this.dir, 'state-diff.json'), join(this.dir, 'result.json'), runTmp].map(
      (file) => new Promise<number | null>((resolve) => open(file, 'w', (err, fd) => resolve(err ? null : fd))),
    );
    return Promise.all(opening).then(([diff, result, run]) => {
      if (diff == null || result == null || run == null) {
        for (const fd of [diff, result, run]) if (fd != null) close(fd, () => undefined);
        return null;
      }
      return { diff, result, run, runTmp };
    });
  }
}

/** Writes a file in place: into its descriptor opened ahead, or by name. */
function writeInPlace(fd: number | undefined, file: string, text: string): void {
  if (fd === undefined) writeFileSync(file, text);
  else writeAll(fd, text);
}

/** Writes all of `text` to `fd` and closes it. */
function writeAll(fd: number, text: string): void {
  try {
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
  } finally {
    closeSync(fd);
  }
}
