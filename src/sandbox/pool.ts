/**
 * The sandbox: agent workers live in a child process, so the host survives anything an agent
 * does to its process (a signal, an allocation that aborts it, a system call that never returns).
 * The child starts with an empty environment and an empty working folder, confined as tightly as
 * this machine allows (jail.ts): in a bubblewrap filesystem jail that holds only what its agents'
 * workers may read, or in user and pid namespaces only, or as a plain process; and in a network
 * namespace of its own (no network) if asked. The host relays each rollout's port over the child's
 * sealed link (link.ts) and keeps the world, the tools and the artifacts. A child that dies ends its
 * rollouts as crashed (their worlds are still graded); the next rollout starts a new one. A
 * worker that does not end after its grace period gets its whole sandbox killed (SIGKILL).
 *
 * A jail's mounts are fixed when it starts, so each set of read permissions (in practice, each
 * agent) gets a sandbox of its own, started by its first rollout: an eval's rollouts share one.
 * Idle sandboxes are kept for their agents' next rollouts, the least recently used ended first
 * past IDLE_SANDBOXES.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PACKAGE_ROOT } from '../paths.js';
import { MESSAGE_ENVELOPE_BYTES, SANDBOX_KILL_MS } from '../options.js';
import { SiloError } from '../errors.js';
import { RelayLink, type Link } from '../pool/ends.js';
import type { AgentRunner, WarmWorkers, WorkerExit } from '../pool/pool.js';
import type { WorkerTask } from '../protocol.js';
import { forgetPresumed, launch, mountKey, presumeBwrap, presumeUnshare, SANDBOX_CHOICES, unavailable, type SandboxChoice, type SandboxLevel } from './jail.js';
import { FrameReader, FrameWriter, newKey, TO_HOST, TO_SANDBOX, type Incoming } from './link.js';
import type { FromSandbox, SandboxPoolOptions, ToSandbox } from './protocol.js';
import { HostRelay } from './relay.js';

/** The sandbox's process: src/sandbox/child.ts bundled into one CommonJS file (scripts/bundle-package.mjs). */
const CHILD_ENTRY = join(PACKAGE_ROOT, 'dist', 'bundle', 'sandbox-child.cjs');
/** The tail of the sandbox's stderr kept to say why it died, characters. */
const STDERR_KEPT = 4_096;
/** How often the host pings a sandbox that has rollouts (a frame an agent took is then missed). */
const PING_MS = 1_000;
/**
 * A sandbox with rollouts that sends no frame for this long (not even the answer to a ping) is
 * ended: an agent has blocked its link (a length header with no frame after it, or bytes read out
 * of place). Its rollouts end crashed, which evals retry, instead of waiting out their limits.
 */
const SILENCE_MS = 10_000;
/** The smallest cap on a frame from the sandbox, bytes (its control messages are far smaller). */
const MIN_FRAME_BYTES = 64 * 1024;
/** Sandboxes with no rollouts kept for later rollouts of their agents (jailed sandboxes: one per agent). */
const IDLE_SANDBOXES = 3;

/** Options of a sandbox. */
export interface SandboxOptions extends SandboxPoolOptions {
  /** Give the agents no network (a network namespace of their own). Default: the network is open. */
  noNetwork?: boolean;
  /** Told once when the sandbox cannot be confined as tightly as Silo would. Default: a line on stderr. */
  warn?: (message: string) => void;
  /**
   * How the sandbox is confined (jail.ts): `auto`, the strongest level this machine allows
   * (`bwrap`, else `unshare`, else `process`, saying so once), or one level, which fails the
   * rollouts where it is not available. Default: `SILO_SANDBOX` from the environment, or `auto`.
   */
  sandbox?: SandboxChoice;
  /** `never`: the same as `sandbox: 'process'` (kept for older callers). */
  namespaces?: 'auto' | 'never';
  /** How long a sandbox with rollouts may send nothing before it is ended, ms. Default 10 000. */
  silenceMs?: number;
}

interface Run {
  link: RelayLink;
  resolve: (exit: WorkerExit) => void;
  child: ChildProcess;
  /** The longest frame this rollout's worker can legitimately send, bytes. */
  maxFrameBytes: number;
}

/** A running sandbox and the sealed link to it. */
interface Sandbox {
  child: ChildProcess;
  writer: FrameWriter;
  /** Its mount set (mountKey): the rollouts it can run. */
  key: string;
  /** How it is confined, and whether that level was presumed to work when it started (#ready). */
  level: SandboxLevel;
  presumed: boolean;
  /** Settles when the sandbox is ready for rollouts (or failed to start). */
  ready: Promise<void>;
  /** Rollouts waiting for it to start. */
  waiting: number;
  /** When a rollout last asked for it (for ending the least recently used). */
  usedAt: number;
  /** Its connections to the model gateway, without network (relay.ts). */
  relay: HostRelay;
  /** Why the host ended it, when it did (bytes on the link that did not open). */
  ended?: string;
  /** The host killed it (destroy, or one idle too many): its end says nothing of its level. */
  killed?: boolean;
}

/** Whether this process has marked its first sandbox's start (see #start). */
let sandboxMarked = false;

/** What was said on stderr already (by any pool of this process): each thing once. */
const said = new Set<string>();

/** Runs agent workers in sandbox processes, each started when first needed and again after it dies. */
export class SandboxPool implements AgentRunner {
  readonly #options: SandboxOptions;
  readonly #choice: SandboxChoice;
  /** The level this pool's sandboxes run at, once the first one started. */
  #level: SandboxLevel | undefined;
  /** The level is presumed (jail.ts presumeBwrap, presumeUnshare) until a sandbox came up. */
  #presumed = false;
  /** What to say of the level once a sandbox came up at it (said then: it is a presumption till then). */
  #toSay: string | undefined;
  /** The live sandbox of each mount set. */
  readonly #sandboxes = new Map<string, Sandbox>();
  /** The sandbox most recently started or handed a rollout. */
  #latest: ChildProcess | null = null;
  readonly #links = new WeakMap<ChildProcess, Sandbox>();
  readonly #runs = new Map<number, Run>();
  #nextId = 1;
  #started = 0;
  #destroyed = false;
  readonly #stderr = new WeakMap<ChildProcess, () => string>();

  constructor(options: SandboxOptions = {}) {
    this.#options = options;
    const fromEnv = process.env.SILO_SANDBOX || undefined;
    const choice: string = options.sandbox ?? (options.namespaces === 'never' ? 'process' : (fromEnv ?? 'auto'));
    if (!(SANDBOX_CHOICES as readonly string[]).includes(choice)) {
      throw new SiloError('SILO_USAGE', `${options.sandbox === undefined ? 'SILO_SANDBOX' : 'sandbox'}: expected ${SANDBOX_CHOICES.join(', ')}, got '${choice}'`);
    }
    this.#choice = choice as SandboxChoice;
  }

  /** True when its workers run many rollouts each (`reuse`). */
  get reusesWorkers(): boolean {
    return this.#options.reuse === true;
  }

  /** A relay: the worker's messages reach the rollout's HostChannel straight from the socket. */
  link(): RelayLink {
    return new RelayLink();
  }

  async run(
    task: Omit<WorkerTask, 'brand' | 'port' | 'exitAfter'>,
    link: Link,
    memoryMb: number,
    terminate: AbortSignal,
    env: Readonly<Record<string, string>>,
    readable: readonly string[],
  ): Promise<WorkerExit> {
    if (!(link instanceof RelayLink)) throw new Error('a sandbox runs rollouts on links it made (SandboxPool.link())');
    const sandbox = await this.#ready(this.#sandboxFor(readable), readable);
    const { child, level } = sandbox;
    const id = this.#nextId++;
    // JSON escaping makes text up to 6× its bytes, UTF-8 up to 3 bytes a character (see agent.ts).
    const maxChars = 6 * Math.max(task.limits.maxMessageBytes, task.limits.maxOutputBytes) + MESSAGE_ENVELOPE_BYTES;
    return new Promise<WorkerExit>((resolve) => {
      this.#runs.set(id, { link, resolve, child, maxFrameBytes: 3 * maxChars + 64 });
      this.#hold(child);
      let killer: NodeJS.Timeout | undefined;
      const onTerminate = (): void => {
        this.#send(child, { t: 'terminate', id });
        // A worker stuck in a system call outlives terminate(): then its whole sandbox goes.
        killer = setTimeout(() => child.kill('SIGKILL'), SANDBOX_KILL_MS);
      };
      const done = this.#runs.get(id)!;
      done.resolve = (exit) => {
        clearTimeout(killer);
        terminate.removeEventListener('abort', onTerminate);
        // The host says how the worker was isolated, whatever the sandbox's pool said.
        resolve({ ...exit, isolation: level });
      };
      // The sandbox may have died between starting and now: then there is nobody to run it.
      if (child.exitCode !== null || child.signalCode !== null || (child.stdio[3] as Socket | null)?.destroyed !== false) {
        this.#finish(id, { kind: 'exited', message: 'the sandbox process died before the rollout reached it' });
        return;
      }
      // Without network, the sandbox relays the model gateway into its namespace first.
      const relay = this.#options.noNetwork && task.gateway ? { relay: task.gateway.port } : {};
      this.#send(child, { t: 'run', id, task, memoryMb, env: { ...env }, readable: [...readable], ...relay });
      // Only now what is for the worker (an abort sent while the sandbox started, say), and a
      // terminate: before its 'run', the sandbox would not know the rollout and drop them.
      link.connect((m) => this.#links.get(child)?.writer.toWorker(id, m));
      if (terminate.aborted) onTerminate();
      else terminate.addEventListener('abort', onTerminate, { once: true });
    });
  }

  /**
   * The sandbox once it is up. One started on the presumption that its level works (bubblewrap's,
   * or unshare's) that does not come up has that level probed, and a sandbox at the level the
   * probe allows takes its place.
   */
  async #ready(sandbox: Sandbox, readable: readonly string[]): Promise<Sandbox> {
    // Counted while the sandbox starts too, so that it keeps the host alive meanwhile (a sandbox
    // started early by warm() is not held until a rollout waits for it).
    sandbox.waiting++;
    this.#hold(sandbox.child);
    try {
      await sandbox.ready;
      // Up: the level it was started at works (a sandbox of a level given up meanwhile says nothing of the current one).
      if (this.#level === sandbox.level) {
        this.#presumed = false;
        if (this.#toSay !== undefined) this.#say(this.#toSay);
        this.#toSay = undefined;
      }
      return sandbox;
    } catch (err) {
      // One started on a presumption that did not come up had the level probed as it failed
      // (#givenUp): every rollout that waited for it goes on in the sandbox that takes its place.
      // (Not after one the host ended itself: that says nothing of the level, and another would
      // start on the same presumption.)
      if (!sandbox.presumed || sandbox.killed || sandbox.ended !== undefined) throw err;
      return await this.#ready(this.#sandboxFor(readable), readable);
    } finally {
      sandbox.waiting--;
    }
  }

  /**
   * Starts a sandbox now for workers that may read `readable` (a failure shows at the first
   * rollout, which tries again), and with `worker`, its first workers as soon as it is up. Without
   * `readable`, only a sandbox that is not a jail can be started ahead (a jail's mounts depend on
   * the agent).
   */
  warm(readable?: readonly string[], worker?: WarmWorkers): void {
    if (this.#destroyed) return;
    try {
      if (readable === undefined && this.#resolveLevel() === 'bwrap') return;
      const sandbox = this.#sandboxFor(readable ?? []);
      sandbox.ready.catch(() => {});
      // Its first workers start as soon as it is up (they boot while the host loads the tasks):
      // sent now, right behind the key, the sandbox reads it as it starts, whatever the host is
      // busy with by then.
      if (worker) this.#send(sandbox.child, { t: 'warm', memoryMb: worker.memoryMb, env: { ...worker.env }, readable: [...(readable ?? [])] });
    } catch {
      // (a sandbox that cannot even be spawned, say --no-network without namespaces) the same
      // error ends the first rollout, with its message
    }
  }

  /**
   * The pid of the sandbox process most recently started or handed a rollout, if it runs
   * (bubblewrap's or unshare's, which run it, where the sandbox is confined).
   */
  get pid(): number | undefined {
    const child = this.#latest;
    return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
  }

  /** How this pool's sandboxes are confined, once the first one started. */
  get level(): SandboxLevel | undefined {
    return this.#level;
  }

  /** How many sandbox processes this pool has started (one per set of mounts in the jail; again after one died). */
  get started(): number {
    return this.#started;
  }

  /** How many of them run now. */
  get running(): number {
    return this.#sandboxes.size;
  }

  async destroy(): Promise<void> {
    this.#destroyed = true;
    const sandboxes = [...this.#sandboxes.values()];
    this.#sandboxes.clear();
    this.#latest = null;
    await Promise.all(sandboxes.map(({ child }) => this.#kill(child)));
  }

  /** Ends a sandbox; resolves when it is gone. */
  #kill(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const sandbox = this.#links.get(child);
    if (sandbox) sandbox.killed = true;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // An idle sandbox is unref'd: waiting for its exit must keep this process alive.
    child.ref();
    child.kill('SIGKILL');
    return gone;
  }

  #send(child: ChildProcess, msg: ToSandbox): void {
    this.#links.get(child)?.writer.message(msg);
  }

  /** Says something of the level to the user (once a process, or through the pool's `warn`). */
  #say(message: string): void {
    if (this.#options.warn) return this.#options.warn(message);
    if (said.has(message)) return;
    said.add(message);
    process.stderr.write(`silo: ${message}\n`);
  }

  /**
   * A sandbox started on the presumption that its level works did not come up: the level is
   * probed (once; the probe says why it does not work here) and worked out again, whether or not
   * a rollout waits for that sandbox (one started by warm() may have none).
   */
  #givenUp(sandbox: Sandbox): void {
    if (!this.#presumed || this.#level !== sandbox.level) return;
    this.#presumed = false;
    this.#level = undefined;
    this.#toSay = undefined;
    forgetPresumed(sandbox.level);
    unavailable(sandbox.level);
  }

  /** How the sandboxes are confined here: worked out (and said, when weaker than asked) once. */
  #resolveLevel(): SandboxLevel {
    if (this.#level) {
      if (!this.#presumed) return this.#level;
      // Still presumed, unless another pool of this process probed the level meanwhile: then it
      // is worked out again from what the probe found (a launch would refuse the presumption).
      const now = this.#level === 'bwrap' ? presumeBwrap() : presumeUnshare();
      if (now === 'presumed') return this.#level;
      this.#level = undefined;
      this.#presumed = false;
      this.#toSay = undefined;
    }
    const say = (message: string): void => this.#say(message);
    const withoutNamespaces = (why: string): string =>
      `Linux namespaces are not available here (${why}), so the sandbox process runs without them: an agent can still see and signal this machine's other processes and connect to its socket files; run Silo in a container for more`;
    let level: SandboxLevel;
    const bwrapNow = this.#choice === 'auto' ? presumeBwrap() : false;
    if (bwrapNow) {
      // Probed already, or to be found out by the first sandbox (#ready).
      level = 'bwrap';
      this.#presumed = bwrapNow === 'presumed';
    } else if (this.#choice === 'auto') {
      const noJail = unavailable('bwrap');
      // Probed already, or presumed and found out by the first sandbox (#ready), as bubblewrap.
      const unshareNow = noJail === null ? false : presumeUnshare();
      const noNamespaces = noJail === null || unshareNow ? null : unavailable('unshare');
      level = noJail === null ? 'bwrap' : noNamespaces === null ? 'unshare' : 'process';
      if (level === 'unshare') {
        this.#presumed = unshareNow === 'presumed';
        const message = `bubblewrap cannot jail the sandbox here (${noJail}), so it runs in Linux namespaces only: it sees this machine's whole file system (agents' reads are still limited by Node's permission model) and can connect to socket files; install bubblewrap for the jail`;
        // Said once a sandbox came up in them: should they not work, what is said is the fallback.
        if (this.#presumed) this.#toSay = message;
        else say(message);
      } else if (level === 'process') {
        say(withoutNamespaces(`${noNamespaces}; ${noJail}`));
      }
    } else {
      const why = unavailable(this.#choice);
      if (why !== null) throw new Error(`the sandbox cannot run at the level asked for (${this.#choice}): ${why}`);
      level = this.#choice;
      if (level === 'process') say(withoutNamespaces('turned off'));
    }
    if (level === 'process' && this.#options.noNetwork) {
      throw new Error('--no-network needs Linux namespaces (bubblewrap or unshare --net), which are not available here');
    }
    this.#level = level;
    return level;
  }

  /** The sandbox that runs workers reading `readable`, started if there is none. */
  #sandboxFor(readable: readonly string[]): Sandbox {
    if (this.#destroyed) throw new Error('the sandbox was destroyed');
    const level = this.#resolveLevel();
    const key = mountKey(level, readable);
    let sandbox = this.#sandboxes.get(key);
    if (!sandbox) {
      sandbox = this.#start(level, key, readable);
      this.#trim();
    }
    sandbox.usedAt = performance.now();
    this.#latest = sandbox.child;
    return sandbox;
  }

  /** Starts a sandbox at `level` for the mount set `key` (workers reading `readable`). */
  #start(level: SandboxLevel, key: string, readable: readonly string[]): Sandbox {
    // The first sandbox of the process is marked (npm run bench reads the marks: coldRun).
    const first = !sandboxMarked;
    sandboxMarked = true;
    if (first) performance.mark('silo:sandbox:start');
    const { command, args, hostCwd, inputs } = launch(level, { noNetwork: this.#options.noNetwork === true, readable });
    const cwd = hostCwd ? mkdtempSync(join(tmpdir(), 'silo-sandbox-')) : '/';
    const child = spawn(command, [...args, CHILD_ENTRY, JSON.stringify({ maxThreads: this.#options.maxThreads, minThreads: this.#options.minThreads, reuse: this.#options.reuse })], {
      // Nothing of the host: no variables, an empty folder, a process group of its own.
      env: {},
      cwd,
      // Its stderr is kept, not shown: what V8 prints as it aborts names why the sandbox died.
      // Descriptor 3 is the sealed link (link.ts); what follows, the jail's inputs.
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', ...inputs.map(() => 'pipe' as const)],
      detached: true,
    });
    inputs.forEach((text, i) => {
      const input = child.stdio[4 + i] as Writable;
      input.on('error', () => {});
      input.end(text);
    });
    const socket = child.stdio[3] as Socket;
    const key32 = newKey();
    // The key goes first, before the sandbox runs any agent that could read it.
    socket.write(key32);
    const writer = new FrameWriter(socket, key32, TO_SANDBOX);
    const sandbox: Sandbox = { child, writer, key, level, presumed: this.#presumed, ready: Promise.resolve(), waiting: 0, usedAt: performance.now(), relay: new HostRelay((m) => writer.message(m)) };
    this.#links.set(child, sandbox);
    this.#sandboxes.set(key, sandbox);
    this.#started++;
    const end = (why: string): void => {
      sandbox.ended ??= why;
      child.kill('SIGKILL');
    };
    // The sandbox's own frames always open and fit: what does not is an agent's writing.
    const onBroken = (reason: string): void => end(`it sent ${reason}, as an agent writing to its descriptors does`);
    let heardAt = performance.now();
    socket.on('error', () => {});
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-STDERR_KEPT);
    });
    this.#stderr.set(child, () => stderr);
    this.#hold(child);
    sandbox.ready = new Promise<void>((resolve, reject) => {
      // A failed start (EAGAIN, EMFILE ...) must not stick: the next rollout tries again.
      child.once('error', (err) => {
        this.#forget(child);
        reject(err);
      });
      child.once('exit', (code, signal) => {
        const fatal = /^(bwrap|unshare|setpriv): .*$/m.exec(stderr)?.[0];
        reject(new Error(`the sandbox process ended as it started (${signal ?? `exit code ${code}`})${fatal ? `: ${fatal.slice(0, 300)}` : ''}`));
      });
      const allows = (length: number): boolean => length <= MIN_FRAME_BYTES || length <= this.#maxFrameBytes(child);
      const reader = new FrameReader(key32, TO_HOST, allows, (frame) => {
        heardAt = performance.now();
        const msg = this.#fromFrame(frame);
        if (msg?.t === 'ready') {
          if (first) performance.mark('silo:sandbox:ready');
          resolve();
        }
        else if (msg) this.#fromChild(child, msg);
      }, onBroken);
      socket.on('data', (chunk: Buffer) => reader.push(chunk));
    });
    // (Before any rollout's own handler: by the time they hear of it, the level is worked out again.)
    sandbox.ready.catch(() => {
      // (Not one the host ended itself as it started: a command that stops at once, or one idle too many.)
      if (sandbox.presumed && !sandbox.killed && sandbox.ended === undefined && !this.#destroyed) this.#givenUp(sandbox);
    });
    let tickAt = performance.now();
    const ping = setInterval(() => {
      const now = performance.now();
      // A host that was blocked itself (a long verify) has not heard what came meanwhile: its
      // silence is not the sandbox's.
      if (now - tickAt > 2 * PING_MS) heardAt = now;
      tickAt = now;
      if (!this.#busy(child)) {
        heardAt = now;
        return;
      }
      const silenceMs = this.#options.silenceMs ?? SILENCE_MS;
      if (now - heardAt > silenceMs) return end(`it sent nothing for ${silenceMs / 1000} s, not even an answer to a ping: an agent blocked its link`);
      this.#send(child, { t: 'ping' });
    }, PING_MS);
    ping.unref();
    child.on('exit', (code, signal) => {
      clearInterval(ping);
      sandbox.relay.close();
      if (hostCwd) rmSync(cwd, { recursive: true, force: true });
      this.#died(child, signal ?? `exit code ${code}`);
    });
    return sandbox;
  }

  /** A sandbox no rollout may be given any more (it died, or is being ended). */
  #forget(child: ChildProcess): void {
    const sandbox = this.#links.get(child);
    if (sandbox && this.#sandboxes.get(sandbox.key) === sandbox) this.#sandboxes.delete(sandbox.key);
    if (this.#latest === child) this.#latest = null;
  }

  /** Ends the least recently used idle sandboxes past IDLE_SANDBOXES. */
  #trim(): void {
    const idle = [...this.#sandboxes.values()].filter((s) => s.waiting === 0 && !this.#busy(s.child)).sort((a, b) => a.usedAt - b.usedAt);
    for (const sandbox of idle.slice(0, Math.max(0, idle.length - IDLE_SANDBOXES))) {
      this.#forget(sandbox.child);
      void this.#kill(sandbox.child);
    }
  }

  #fromFrame(frame: Incoming): FromSandbox | null {
    if (frame.kind === 'text') return { t: 'from', id: frame.id, m: frame.text };
    if (frame.kind === 'message') return frame.message as FromSandbox;
    return null;
  }

  /** Whether the sandbox runs rollouts now. */
  #busy(child: ChildProcess): boolean {
    for (const run of this.#runs.values()) if (run.child === child) return true;
    return false;
  }

  /** The longest frame the sandbox may send now: what its rollouts' workers may send. */
  #maxFrameBytes(child: ChildProcess): number {
    let max = 0;
    for (const run of this.#runs.values()) if (run.child === child && run.maxFrameBytes > max) max = run.maxFrameBytes;
    return max;
  }

  #fromChild(child: ChildProcess, msg: FromSandbox): void {
    if (msg.t === 'net') return this.#links.get(child)?.relay.receive(msg);
    // A rollout id is only good from the sandbox that runs it.
    const run = 'id' in msg ? this.#runs.get(msg.id) : undefined;
    if (!run || run.child !== child) return;
    if (msg.t === 'from') run.link.deliver(msg.m);
    else if (msg.t === 'exit') this.#finish(msg.id, msg.exit);
  }

  #finish(id: number, exit: WorkerExit): void {
    const run = this.#runs.get(id);
    if (!run) return;
    this.#runs.delete(id);
    run.link.close();
    this.#hold(run.child);
    run.resolve(exit);
    if (!this.#busy(run.child)) this.#trim();
  }

  /** An idle sandbox does not keep the host's process alive; one with rollouts does. */
  #hold(child: ChildProcess): void {
    const sandbox = this.#links.get(child);
    const channel = child.stdio[3] as { ref?(): void; unref?(): void } | null | undefined;
    const stderr = child.stderr as { ref?(): void; unref?(): void } | null;
    if ((sandbox?.waiting ?? 0) > 0 || this.#busy(child)) {
      child.ref();
      channel?.ref?.();
      stderr?.ref?.();
    } else {
      child.unref();
      channel?.unref?.();
      stderr?.unref?.();
    }
  }

  /** The sandbox died: its rollouts end as crashed; the next rollout starts a new one. */
  #died(child: ChildProcess, how: string): void {
    this.#forget(child);
    const ended = this.#links.get(child)?.ended;
    const fatal = /^.*(FATAL ERROR|Fatal error|Abort|silo sandbox:).*$/m.exec(this.#stderr.get(child)?.() ?? '')?.[0]?.trim();
    const message = ended
      ? `the sandbox process was ended: ${ended}`
      : `the sandbox process died (${how})${fatal ? `: ${fatal.slice(0, 300)}` : ''}`;
    for (const [id, run] of this.#runs) {
      if (run.child === child) this.#finish(id, { kind: 'exited', message });
    }
  }
}
