/**
 * The host's side of the gateway relay (`--no-network`): it connects the sandbox's connections to a
 * gateway of this process and to nothing else, whatever port a message names. (The whole path,
 * through a sandbox in a network namespace of its own, is in test/gateway/rollout.test.ts.)
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { addGatewayPort, removeGatewayPort } from '../../src/gateway/ports.js';
import { HostRelay, type NetMessage } from '../../src/sandbox/relay.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A TCP server that echoes in upper case and counts its connections. */
async function echo(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket: Socket) => {
    connections++;
    socket.on('data', (d: Buffer) => socket.write(d.toString().toUpperCase()));
    socket.on('end', () => socket.end());
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, connections: () => connections };
}

/** A relay whose messages to the sandbox are collected; resolves `waitFor` when one matches. */
function relay(): { host: HostRelay; sent: NetMessage[]; waitFor: (p: (m: NetMessage) => boolean) => Promise<NetMessage> } {
  const sent: NetMessage[] = [];
  const waiters: { p: (m: NetMessage) => boolean; resolve: (m: NetMessage) => void }[] = [];
  const host = new HostRelay((m) => {
    sent.push(m);
    for (const w of waiters.splice(0)) {
      if (w.p(m)) w.resolve(m);
      else waiters.push(w);
    }
  });
  const waitFor = (p: (m: NetMessage) => boolean): Promise<NetMessage> => {
    const found = sent.find(p);
    return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ p, resolve }));
  };
  return { host, sent, waitFor };
}

describe('HostRelay', () => {
  it('connects a relayed connection to a gateway port and carries its bytes both ways', async () => {
    const gateway = await echo();
    addGatewayPort(gateway.port);
    try {
      const { host, waitFor } = relay();
      host.receive({ t: 'net', op: 'open', conn: 1, port: gateway.port });
      host.receive({ t: 'net', op: 'data', conn: 1, data: Buffer.from('hello') });
      const reply = await waitFor((m) => m.op === 'data');
      expect(Buffer.from((reply as { data: Uint8Array }).data).toString()).toBe('HELLO');
      host.receive({ t: 'net', op: 'end', conn: 1 });
      await waitFor((m) => m.op === 'close' && m.conn === 1);
      expect(gateway.connections()).toBe(1);
    } finally {
      removeGatewayPort(gateway.port);
    }
  });

  it('refuses a connection to any other port: it answers close and connects nothing', async () => {
    const other = await echo();
    const { host, sent } = relay();
    host.receive({ t: 'net', op: 'open', conn: 7, port: other.port });
    host.receive({ t: 'net', op: 'data', conn: 7, data: Buffer.from('hello') });
    expect(sent).toEqual([{ t: 'net', op: 'close', conn: 7 }]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(other.connections()).toBe(0);
  });
});
