/**
 * The host's end of one rollout's link to its worker. For a single-use worker it is a MessagePort
 * whose other end goes to the worker. Otherwise it is a relay fed by whoever carries the worker's
 * messages: the sandbox's socket (so that a message does not cross one more port inside the host),
 * or a reused thread's own port, which carries the messages of all its rollouts (reused.ts).
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { HostMessage } from '../protocol.js';

/** What the host's side of a rollout (HostChannel) talks to. */
export interface HostEnd {
  /** Sends to the worker; a worker already gone is not an error. */
  post(msg: HostMessage): void;
  /** The one listener for what the worker sends (JSON text, or whatever it posted instead). */
  onMessage(listener: (data: unknown) => void): void;
  /** Called once, after the last message, when the link is closed from either side. */
  onClose(listener: () => void): void;
  close(): void;
}

/** A link over a MessageChannel: `host` for the host, `workerPort` to transfer to the worker. */
export class PortLink {
  readonly host: HostEnd;
  readonly workerPort: MessagePort;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.workerPort = port2;
    this.host = {
      post(msg) {
        try {
          port1.postMessage(msg);
        } catch {
          // the worker is gone; nothing to tell it
        }
      },
      onMessage: (listener) => void port1.on('message', listener),
      onClose: (listener) => void port1.once('close', listener),
      close: () => port1.close(),
    };
  }
}

/**
 * A link whose far side is not a port of its own: `deliver` brings the worker's messages,
 * `connect` says where the host's go (held until then), `close` ends it from either side.
 */
export class RelayLink implements HostEnd {
  #listener: ((data: unknown) => void) | null = null;
  readonly #closeListeners: (() => void)[] = [];
  #send: ((msg: HostMessage) => void) | null = null;
  #held: HostMessage[] = [];
  #closed = false;

  get host(): HostEnd {
    return this;
  }

  post(msg: HostMessage): void {
    if (this.#closed) return;
    if (this.#send) this.#send(msg);
    else this.#held.push(msg);
  }

  onMessage(listener: (data: unknown) => void): void {
    this.#listener = listener;
  }

  onClose(listener: () => void): void {
    if (this.#closed) listener();
    else this.#closeListeners.push(listener);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held = [];
    for (const listener of this.#closeListeners.splice(0)) listener();
  }

  /** Where the host's messages go from now on (those sent before are sent first). */
  connect(send: (msg: HostMessage) => void): void {
    if (this.#closed) return;
    this.#send = send;
    for (const msg of this.#held.splice(0)) send(msg);
  }

  /** A message from the worker. */
  deliver(data: unknown): void {
    if (!this.#closed) this.#listener?.(data);
  }
}

/** One rollout's link, as an AgentRunner makes it. */
export type Link = PortLink | RelayLink;
