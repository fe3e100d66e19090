/**
 * The model gateway inside a sandbox without network (`--no-network`). The sandbox's own network
 * namespace has only its loopback, so its trusted main thread listens there, on the gateway's port
 * (a port of its own namespace: the same number as on the host), and carries each connection over
 * the sealed link to the host, which connects it to the gateway on the host's loopback. An agent
 * reaches the gateway at the same URL either way, and nothing else: the host connects only to a
 * port of a gateway of its own (isGatewayPort), never where the sandbox names.
 *
 * `unshare --net` leaves the namespace's loopback down (bubblewrap brings it up): the sandbox then
 * brings it up itself (it is root in its user namespace) with `ip link set lo up`.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { isGatewayPort } from '../gateway/ports.js';

/** A relayed connection's traffic, either way (`conn` numbers the sandbox's connections). */
export type NetMessage =
  | { t: 'net'; op: 'open'; conn: number; port: number }
  | { t: 'net'; op: 'data'; conn: number; data: Uint8Array }
  | { t: 'net'; op: 'end'; conn: number }
  | { t: 'net'; op: 'close'; conn: number };

/** Bytes of one relayed frame at most: well under the smallest frame the host accepts (64 KiB). */
const PIECE_BYTES = 32 * 1024;
/** Connections relayed at once per sandbox; more are refused (closed) until some end. */
export const MAX_RELAYED_CONNECTIONS = 1024;

function pieces(data: Buffer): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < data.length; at += PIECE_BYTES) out.push(data.subarray(at, at + PIECE_BYTES));
  return out;
}

/** Wires a socket to the link: its bytes, its end and its close go out as `net` messages. */
function forward(socket: Socket, conn: number, send: (msg: NetMessage) => void, onGone: () => void): void {
  socket.on('data', (data: Buffer) => {
    for (const piece of pieces(data)) send({ t: 'net', op: 'data', conn, data: piece });
  });
  socket.on('end', () => send({ t: 'net', op: 'end', conn }));
  socket.on('error', () => {});
  socket.on('close', () => {
    onGone();
    send({ t: 'net', op: 'close', conn });
  });
}

/** What arrives for a connection from the other side. */
function deliver(socket: Socket | undefined, msg: NetMessage): void {
  if (!socket) return;
  if (msg.op === 'data') socket.write(msg.data);
  else if (msg.op === 'end') socket.end();
  else if (msg.op === 'close') socket.destroy();
}

/** The sandbox's side: a listener on its loopback per gateway port, each connection relayed. */
export class SandboxRelay {
  readonly #send: (msg: NetMessage) => void;
  readonly #listening = new Map<number, Promise<void>>();
  readonly #sockets = new Map<number, Socket>();
  readonly #servers: Server[] = [];
  #next = 1;
  #loopback: Promise<void> | null = null;

  constructor(send: (msg: NetMessage) => void) {
    this.#send = send;
  }

  /** Listens on 127.0.0.1:`port` in this namespace (once per port). Rejects when it cannot. */
  listen(port: number): Promise<void> {
    let ready = this.#listening.get(port);
    if (!ready) {
      ready = this.#ensureLoopback().then(() => this.#open(port));
      ready.catch(() => this.#listening.delete(port));
      this.#listening.set(port, ready);
    }
    return ready;
  }

  /** A message from the host for one of the relayed connections. */
  receive(msg: NetMessage): void {
    deliver(this.#sockets.get(msg.conn), msg);
  }

  #open(port: number): Promise<void> {
    const server = createServer((socket) => {
      if (this.#sockets.size >= MAX_RELAYED_CONNECTIONS) return void socket.destroy();
      const conn = this.#next++;
      this.#sockets.set(conn, socket);
      this.#send({ t: 'net', op: 'open', conn, port });
      forward(socket, conn, this.#send, () => this.#sockets.delete(conn));
    });
    // The sandbox is alive for its link, not for this listener.
    server.unref();
    this.#servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  }

  /** Brings the namespace's loopback up when it is down (unshare --net). */
  #ensureLoopback(): Promise<void> {
    this.#loopback ??= loopbackWorks().then((works) => {
      if (works) return;
      const ip = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].find(executable);
      if (ip) spawnSync(ip, ['link', 'set', 'lo', 'up'], { stdio: 'ignore', env: {}, timeout: 5_000 });
      return loopbackWorks().then((now) => {
        if (!now) throw new Error(`the sandbox's network namespace has no loopback and ${ip ? `'${ip} link set lo up' failed` : 'no ip command was found to bring it up'}`);
      });
    });
    this.#loopback.catch(() => (this.#loopback = null));
    return this.#loopback;
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether a connection to a listener on 127.0.0.1 goes through (lo is down: ENETUNREACH). */
function loopbackWorks(): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer((s) => s.destroy());
    server.once('error', () => resolve(false));
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      const socket = connect(port, '127.0.0.1');
      const done = (ok: boolean): void => {
        socket.destroy();
        server.close();
        resolve(ok);
      };
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    });
  });
}

/** The host's side: each connection the sandbox opens is connected to the gateway it names. */
export class HostRelay {
  readonly #send: (msg: NetMessage) => void;
  readonly #sockets = new Map<number, Socket>();

  constructor(send: (msg: NetMessage) => void) {
    this.#send = send;
  }

  receive(msg: NetMessage): void {
    if (msg.op !== 'open') return deliver(this.#sockets.get(msg.conn), msg);
    // Only a gateway of this process, and one connection per number.
    if (!Number.isInteger(msg.port) || !isGatewayPort(msg.port) || this.#sockets.has(msg.conn) || this.#sockets.size >= MAX_RELAYED_CONNECTIONS) {
      return this.#send({ t: 'net', op: 'close', conn: msg.conn });
    }
    const socket = connect(msg.port, '127.0.0.1');
    this.#sockets.set(msg.conn, socket);
    forward(socket, msg.conn, this.#send, () => this.#sockets.delete(msg.conn));
  }

  /** The sandbox is gone: its connections too. */
  close(): void {
    for (const socket of this.#sockets.values()) socket.destroy();
    this.#sockets.clear();
  }
}
