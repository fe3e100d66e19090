/**
 * The sandbox process: a clean environment, an empty working folder and, where Linux allows, its
 * own user and pid namespaces (see pool.ts). It runs the agent workers on a pool of its own and
 * relays each rollout's port to the host, which keeps the world, the tools and the artifacts, over
 * a sealed link (link.ts) on descriptor 3. If the host goes away, so does the sandbox.
 */
import { Socket } from 'node:net';
import type { Link } from '../pool/ends.js';
import { AgentPool } from '../pool/pool.js';
import { MESSAGE_ENVELOPE_BYTES, PORT_DRAIN_MS } from '../options.js';
import { FrameReader, FrameWriter, KEY_BYTES, TO_HOST, TO_SANDBOX, type Incoming } from './link.js';
import type { HostMessage } from '../protocol.js';
import type { FromSandbox, SandboxPoolOptions, ToSandbox } from './protocol.js';
import { SandboxRelay } from './relay.js';

// No diagnostic reports from this process, whatever an agent provokes (a fatal error, a signal):
// they would be files written where no agent may write. (Workers cannot change this; see
// src/pool/process-wide.ts.)
process.report.reportOnFatalError = false;
process.report.reportOnSignal = false;
process.report.reportOnUncaughtException = false;

/** The link is broken (bytes missing or not from the host): nothing here can be trusted to go on. */
function broken(reason: string): never {
  process.stderr.write(`silo sandbox: the link to the host broke (${reason})\n`);
  // What was sealed before the break still goes (the frames of this turn are held until its end).
  writer?.flush();
  process.exit(70);
}

const link = new Socket({ fd: 3, readable: true, writable: true });
let writer: FrameWriter | null = null;
let reader: FrameReader | null = null;
/** The key comes first on the link, before any agent runs (there is none yet to read it). */
let keyBytes = Buffer.alloc(0);
link.on('data', (chunk: Buffer) => {
  if (reader) return reader.push(chunk);
  keyBytes = Buffer.concat([keyBytes, chunk]);
  chunk.fill(0);
  if (keyBytes.length < KEY_BYTES) return;
  // A copy of its own; the bytes it came in are wiped (hygiene: no agent shares this thread's heap).
  const key = Buffer.from(keyBytes.subarray(0, KEY_BYTES));
  writer = new FrameWriter(link, key, TO_HOST);
  // The host's frames carry tool results of any size, but not gigabytes: a length past 1 GiB is
  // bytes read out of place (an agent took some), not a frame.
  reader = new FrameReader(key, TO_SANDBOX, (length) => length <= 2 ** 30, receive, broken);
  send({ t: 'ready' });
  if (keyBytes.length > KEY_BYTES) reader.push(keyBytes.subarray(KEY_BYTES));
  keyBytes.fill(0);
  keyBytes = Buffer.alloc(0);
});
// The host is gone (or closed the link): nothing here may outlive it.
link.on('close', () => process.exit(0));
link.on('error', () => process.exit(0));

const send = (msg: FromSandbox): void => {
  if (msg.t === 'from' && typeof msg.m === 'string') writer?.text(msg.id, msg.m);
  else writer?.message(msg);
};

/** The model gateway relayed into this namespace, for rollouts run without network. */
const gatewayRelay = new SandboxRelay(send);

// SIGUSR1 would open the inspector on this process's main thread, which has no permission
// model: any agent could signal it and take the sandbox over. A listener keeps it closed.
process.on('SIGUSR1', () => {});
// Neither does a signal end the sandbox on an agent's word (SIGTERM, SIGINT, SIGHUP): only the
// host, which kills it with SIGKILL, or its link to the host closing.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => {});

/** How much of a worker's exit message goes to the host, characters. */
const EXIT_MESSAGE_CHARS = 4_096;

/** What the sandbox relays for one rollout at most, characters; past it, messages are dropped. */
const RELAY_BUDGET_CHARS = 256 * 2 ** 20;

const options = JSON.parse(process.argv[2] ?? '{}') as SandboxPoolOptions;
// A run's task is read from its frame with views of their own bytes (link.ts): not copied again.
const pool = new AgentPool({ ...options, ownedTasks: true });
const runs = new Map<number, { link: Link; terminate: AbortController }>();

function receive(frame: Incoming): void {
  if (frame.kind === 'to') {
    runs.get(frame.id)?.link.host.post(frame.message as HostMessage);
    return;
  }
  if (frame.kind !== 'message') return;
  const msg = frame.message as ToSandbox;
  if (msg.t === 'run') start(msg);
  else if (msg.t === 'ping') send({ t: 'pong' });
  else if (msg.t === 'warm') pool.warm(msg.readable, msg);
  else if (msg.t === 'net') gatewayRelay.receive(msg);
  else if (msg.t === 'terminate') runs.get(msg.id)?.terminate.abort('the grace period is over');
}

function start(msg: Extract<ToSandbox, { t: 'run' }>): void {
  // Known at once, so that what comes for it meanwhile (an abort, a terminate) is not dropped.
  const entry = { link: pool.link(), terminate: new AbortController() };
  runs.set(msg.id, entry);
  if (msg.relay === undefined) return run(msg, entry);
  // The agent starts once the gateway is reachable in here; without it, the rollout ends saying why.
  gatewayRelay.listen(msg.relay).then(
    () => run(msg, entry),
    (err: unknown) => {
      runs.delete(msg.id);
      entry.link.host.close();
      send({ t: 'exit', id: msg.id, exit: { kind: 'exited', message: `the sandbox could not relay the model gateway: ${err instanceof Error ? err.message : String(err)}`.slice(0, EXIT_MESSAGE_CHARS) } });
    },
  );
}

function run({ id, task, memoryMb, env, readable }: Extract<ToSandbox, { t: 'run' }>, { link, terminate }: { link: Link; terminate: AbortController }): void {
  // Worker messages are JSON text: anything else (shared memory, objects structured clone would
  // refuse on the way to the host) is dropped here, as are messages over the host's size cap and
  // everything past the rollout's relay budget, so no agent can stall or crash the sandbox.
  const maxChars = 6 * Math.max(task.limits.maxMessageBytes, task.limits.maxOutputBytes) + MESSAGE_ENVELOPE_BYTES;
  let relayed = 0;
  link.host.onMessage((m: unknown) => {
    // What is not text goes on as an empty object, so the host still notes the drop in the trace.
    const relay = typeof m === 'string' ? m : {};
    const chars = typeof relay === 'string' ? relay.length : 2;
    if (chars > maxChars || relayed + chars > RELAY_BUDGET_CHARS) return;
    relayed += chars;
    send({ t: 'from', id, m: relay });
  });
  // Every message of the worker reaches the host before its exit: wait for its end of the port.
  const closed = new Promise<void>((resolve) => link.host.onClose(() => resolve()));
  void pool.run(task, link, memoryMb, terminate.signal, env, readable).then(async (exit) => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, PORT_DRAIN_MS)))]);
    clearTimeout(timer);
    runs.delete(id);
    link.host.close();
    // A worker's exit can quote an agent's error of any length: a few KiB say enough.
    send({ t: 'exit', id, exit: { ...exit, message: exit.message.slice(0, EXIT_MESSAGE_CHARS) } });
  });
}
