/**
 * The sandbox process: a clean environment, an empty working folder and, where Linux allows, its
 * own user and pid namespaces (see pool.ts). It runs the agent workers on a pool of its own and
 * relays each rollout's port to the host, which keeps the world, the tools and the artifacts. If
 * the host goes away, so does the sandbox.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { AgentPool } from '../pool/pool.js';
import { MESSAGE_ENVELOPE_BYTES, PORT_DRAIN_MS } from '../options.js';
import type { FromSandbox, SandboxPoolOptions, ToSandbox } from './protocol.js';

const send = (msg: FromSandbox): void => {
  try {
    process.send?.(msg, (err: Error | null) => void err);
  } catch {
    // the channel is gone: the host is leaving, and so does this process (see 'disconnect')
  }
};

// SIGUSR1 would open the inspector on this process's main thread, which has no permission
// model: any agent could signal it and take the sandbox over. A listener keeps it closed.
process.on('SIGUSR1', () => {});
// Neither does a signal end the sandbox on an agent's word (SIGTERM, SIGINT, SIGHUP): only the
// host, which kills it with SIGKILL, or its own IPC channel closing.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => {});

/** What the sandbox relays for one rollout at most, characters; past it, messages are dropped. */
const RELAY_BUDGET_CHARS = 256 * 2 ** 20;

const options = JSON.parse(process.argv[2] ?? '{}') as SandboxPoolOptions;
const pool = new AgentPool(options);
const runs = new Map<number, { port: MessagePort; terminate: AbortController }>();

process.on('message', (msg: ToSandbox) => {
  if (msg.t === 'run') start(msg);
  else if (msg.t === 'to') runs.get(msg.id)?.port.postMessage(msg.m);
  else if (msg.t === 'terminate') runs.get(msg.id)?.terminate.abort('the grace period is over');
});
// The host is gone (or closed the channel): nothing here may outlive it.
process.on('disconnect', () => process.exit(0));
send({ t: 'ready' });

function start({ id, task, memoryMb, env, readable }: Extract<ToSandbox, { t: 'run' }>): void {
  const { port1, port2 } = new MessageChannel();
  const terminate = new AbortController();
  runs.set(id, { port: port1, terminate });
  // Worker messages are JSON text: anything else (shared memory, objects structured clone would
  // refuse on the way to the host) is dropped here, as are messages over the host's size cap and
  // everything past the rollout's relay budget, so no agent can stall or crash the sandbox.
  const maxChars = 6 * Math.max(task.limits.maxMessageBytes, task.limits.maxOutputBytes) + MESSAGE_ENVELOPE_BYTES;
  let relayed = 0;
  port1.on('message', (m: unknown) => {
    // What is not text goes on as an empty object, so the host still notes the drop in the trace.
    const relay = typeof m === 'string' ? m : {};
    const chars = typeof relay === 'string' ? relay.length : 2;
    if (chars > maxChars || relayed + chars > RELAY_BUDGET_CHARS) return;
    relayed += chars;
    send({ t: 'from', id, m: relay });
  });
  // Every message of the worker reaches the host before its exit: wait for its end of the port.
  const closed = new Promise<void>((resolve) => port1.once('close', () => resolve()));
  void pool.run(task, port2, memoryMb, terminate.signal, env, readable).then(async (exit) => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, PORT_DRAIN_MS)))]);
    clearTimeout(timer);
    runs.delete(id);
    port1.close();
    send({ t: 'exit', id, exit });
  });
}
