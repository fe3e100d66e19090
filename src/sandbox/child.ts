/**
 * The sandbox process: a clean environment, an empty working folder and, where Linux allows, its
 * own user and pid namespaces (see pool.ts). It runs the agent workers on a pool of its own and
 * relays each rollout's port to the host, which keeps the world, the tools and the artifacts. If
 * the host goes away, so does the sandbox.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { AgentPool } from '../pool/pool.js';
import { PORT_DRAIN_MS } from '../options.js';
import type { FromSandbox, SandboxPoolOptions, ToSandbox } from './protocol.js';

const send = (msg: FromSandbox): void => {
  process.send?.(msg);
};

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
  port1.on('message', (m: unknown) => send({ t: 'from', id, m }));
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
