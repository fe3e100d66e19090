/**
 * The sandbox: agent workers live in a child process, so the host survives anything an agent
 * does to its process (a signal, an allocation that aborts it, a system call that never returns).
 * The child starts with an empty environment and an empty working folder, inside new user and pid
 * namespaces where Linux allows (an agent then cannot even see the host's process), and a new
 * network namespace (no network) if asked. The host relays each rollout's port over the child's
 * sealed link (link.ts) and keeps the world, the tools and the artifacts. A child that dies ends its
 * rollouts as crashed (their worlds are still graded); the next rollout starts a new one. A
 * worker that does not end after its grace period gets its whole sandbox killed (SIGKILL).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PACKAGE_ROOT } from '../paths.js';
import { MESSAGE_ENVELOPE_BYTES, SANDBOX_KILL_MS } from '../options.js';
import { RelayLink, type Link } from '../pool/ends.js';
import type { AgentRunner, WorkerExit } from '../pool/pool.js';
import type { WorkerTask } from '../protocol.js';
import { FrameReader, FrameWriter, newKey, TO_HOST, TO_SANDBOX, type Incoming } from './link.js';
import type { FromSandbox, SandboxPoolOptions, ToSandbox } from './protocol.js';
import { HostRelay } from './relay.js';

const CHILD_ENTRY = join(PACKAGE_ROOT, 'dist', 'src', 'sandbox', 'child.js');
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

/** Options of a sandbox. */
export interface SandboxOptions extends SandboxPoolOptions {
  /** Give the agents no network (a network namespace of their own). Default: the network is open. */
  noNetwork?: boolean;
  /** Told once when Linux namespaces are not available here. Default: a line on stderr. */
  warn?: (message: string) => void;
  /** Use Linux namespaces: `auto` (default) where `unshare` works, or never. */
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
  /** Its connections to the model gateway, without network (relay.ts). */
  relay: HostRelay;
  /** Why the host ended it, when it did (bytes on the link that did not open). */
  ended?: string;
}

/** Runs agent workers in a sandbox process, started when first needed and again after it dies. */
export class SandboxPool implements AgentRunner {
  readonly #options: SandboxOptions;
  #child: ChildProcess | null = null;
  readonly #links = new WeakMap<ChildProcess, Sandbox>();
  #ready: Promise<void> | null = null;
  readonly #runs = new Map<number, Run>();
  #nextId = 1;
  #waiting = 0;
  #destroyed = false;
  readonly #stderr = new WeakMap<ChildProcess, () => string>();

  constructor(options: SandboxOptions = {}) {
    this.#options = options;
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
    // Counted while the sandbox starts too, so that it keeps the host alive meanwhile (a sandbox
    // started early by warm() is not held until a rollout waits for it).
    this.#waiting++;
    this.#hold();
    let child: ChildProcess;
    try {
      child = await this.#start();
    } finally {
      this.#waiting--;
    }
    const id = this.#nextId++;
    // JSON escaping makes text up to 6× its bytes, UTF-8 up to 3 bytes a character (see agent.ts).
    const maxChars = 6 * Math.max(task.limits.maxMessageBytes, task.limits.maxOutputBytes) + MESSAGE_ENVELOPE_BYTES;
    return new Promise<WorkerExit>((resolve) => {
      this.#runs.set(id, { link, resolve, child, maxFrameBytes: 3 * maxChars + 64 });
      this.#hold();
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
        resolve(exit);
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

  /** Starts the sandbox process now (a failure shows at the first rollout, which tries again). */
  warm(): void {
    if (this.#destroyed) return;
    try {
      this.#start().catch(() => {});
    } catch {
      // (a sandbox that cannot even be spawned, say --no-network without namespaces) the same
      // error ends the first rollout, with its message
    }
  }

  /** The pid of the running sandbox process (`unshare`'s where namespaces are used), if any. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async destroy(): Promise<void> {
    this.#destroyed = true;
    const child = this.#child;
    this.#child = null;
    this.#ready = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      // An idle sandbox is unref'd: waiting for its exit must keep this process alive.
      child.ref();
      child.kill('SIGKILL');
      await gone;
    }
  }

  #send(child: ChildProcess, msg: ToSandbox): void {
    this.#links.get(child)?.writer.message(msg);
  }

  /** The running sandbox, started if there is none. */
  #start(): Promise<ChildProcess> {
    if (this.#destroyed) return Promise.reject(new Error('the sandbox was destroyed'));
    if (this.#child && this.#ready) {
      const child = this.#child;
      return this.#ready.then(() => child);
    }
    const [command, args] = sandboxCommand(this.#options);
    const cwd = mkdtempSync(join(tmpdir(), 'silo-sandbox-'));
    const child = spawn(command, [...args, CHILD_ENTRY, JSON.stringify({ maxThreads: this.#options.maxThreads, reuse: this.#options.reuse })], {
      // Nothing of the host: no variables, an empty folder, a process group of its own.
      env: {},
      cwd,
      // Its stderr is kept, not shown: what V8 prints as it aborts names why the sandbox died.
      // Descriptor 3 is the sealed link (link.ts).
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.#child = child;
    const socket = child.stdio[3] as Socket;
    const key = newKey();
    // The key goes first, before the sandbox runs any agent that could read it.
    socket.write(key);
    const writer = new FrameWriter(socket, key, TO_SANDBOX);
    const sandbox: Sandbox = { child, writer, relay: new HostRelay((m) => writer.message(m)) };
    this.#links.set(child, sandbox);
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
    this.#hold();
    this.#ready = new Promise<void>((resolve, reject) => {
      child.once('error', (err) => {
        // A failed start (EAGAIN, EMFILE ...) must not stick: the next rollout tries again.
        if (this.#child === child) {
          this.#child = null;
          this.#ready = null;
        }
        reject(err);
      });
      child.once('exit', (code, signal) => reject(new Error(`the sandbox process ended as it started (${signal ?? `exit code ${code}`})`)));
      const allows = (length: number): boolean => length <= MIN_FRAME_BYTES || length <= this.#maxFrameBytes(child);
      const reader = new FrameReader(key, TO_HOST, allows, (frame) => {
        heardAt = performance.now();
        const msg = this.#fromFrame(frame);
        if (msg?.t === 'ready') resolve();
        else if (msg) this.#fromChild(child, msg);
      }, onBroken);
      socket.on('data', (chunk: Buffer) => reader.push(chunk));
    });
    let tickAt = performance.now();
    const ping = setInterval(() => {
      const now = performance.now();
      // A host that was blocked itself (a long verify) has not heard what came meanwhile: its
      // silence is not the sandbox's.
      if (now - tickAt > 2 * PING_MS) heardAt = now;
      tickAt = now;
      if (![...this.#runs.values()].some((run) => run.child === child)) {
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
      rmSync(cwd, { recursive: true, force: true });
      this.#died(child, signal ?? `exit code ${code}`);
    });
    const ready = this.#ready.then(() => child);
    ready.catch(() => {});
    return ready;
  }

  #fromFrame(frame: Incoming): FromSandbox | null {
    if (frame.kind === 'text') return { t: 'from', id: frame.id, m: frame.text };
    if (frame.kind === 'message') return frame.message as FromSandbox;
    return null;
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
    this.#hold();
    run.resolve(exit);
  }

  /** An idle sandbox does not keep the host's process alive; one with rollouts does. */
  #hold(): void {
    const child = this.#child;
    if (!child) return;
    const channel = child.stdio[3] as { ref?(): void; unref?(): void } | null | undefined;
    const stderr = child.stderr as { ref?(): void; unref?(): void } | null;
    if (this.#runs.size + this.#waiting > 0) {
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
    if (this.#child === child) {
      this.#child = null;
      this.#ready = null;
    }
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

let namespaces: string[] | null | undefined;

/** The absolute path of a program on the host's PATH (the sandbox starts with no PATH of its own). */
function which(program: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const path = join(dir || '.', program);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return null;
}

/** `unshare` and its arguments where user and pid namespaces work here; null where they do not. */
function namespaceArgs(noNetwork: boolean): string[] | null {
  if (namespaces === undefined) {
    const unshare = which('unshare');
    // --mount-proc: /proc shows the sandbox's own processes only.
    const probe = ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', '--mount-proc'];
    const ok = unshare !== null && spawnSync(unshare, [...probe, 'true'], { stdio: 'ignore', timeout: 5_000 }).status === 0;
    namespaces = ok ? [unshare!, ...probe] : null;
  }
  if (namespaces === null) return null;
  return noNetwork ? [...namespaces, '--net'] : namespaces;
}

/**
 * `setpriv --pdeathsig KILL`: the kernel kills the sandbox when the host dies, even a host killed
 * with SIGKILL and a sandbox whose threads are stuck in system calls. Null where it is missing.
 */
let pdeath: string[] | null | undefined;
function deathSignal(): string[] | null {
  if (pdeath === undefined) {
    const setpriv = which('setpriv');
    pdeath = setpriv && spawnSync(setpriv, ['--pdeathsig', 'KILL', 'true'], { stdio: 'ignore', timeout: 5_000 }).status === 0 ? [setpriv, '--pdeathsig', 'KILL', '--'] : null;
  }
  return pdeath;
}

let warned = false;

function sandboxCommand(options: SandboxOptions): [string, string[]] {
  const [command, ...args] = [...(deathSignal() ?? []), ...sandboxArgs(options), process.execPath];
  return [command!, args];
}

/** The namespace part of the sandbox's command line (empty without namespaces). */
function sandboxArgs(options: SandboxOptions): string[] {
  const args = options.namespaces === 'never' ? null : namespaceArgs(options.noNetwork === true);
  if (args) return [...args, '--'];
  if (!warned || options.warn) {
    warned = true;
    (options.warn ?? ((m: string) => process.stderr.write(`silo: ${m}\n`)))(
      `Linux namespaces are not available here (${options.namespaces === 'never' ? 'turned off' : 'unshare --user --pid failed'}), so the sandbox process runs without them: an agent can still see and signal this machine's other processes; run Silo in a container for more`,
    );
  }
  if (options.noNetwork) throw new Error('--no-network needs Linux namespaces (unshare --net), which are not available here');
  return [];
}
