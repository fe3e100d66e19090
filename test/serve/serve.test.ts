/**
 * `silo serve` with the MCP SDK's own Client: over stdio (the built CLI spawned by the SDK's
 * StdioClientTransport) and over streamable HTTP on 127.0.0.1. The client is the agent; the
 * artifacts are checked as for any rollout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { loadTasks, runRollout } from '../../src/index.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { toolSchemas } from '../../src/rollout/tools.js';
import { eventsOf, readRunFiles, tempDir, testWorld, type RunFiles } from '../helpers.js';
import { BIN, PLAIN_ENV, runSilo } from '../cli/silo.js';

const tmp = tempDir('silo-serve-');
afterAll(() => tmp.remove());

const TASKS = 'fixtures/helpdesk/tasks.ts';
const helpdesk = await loadTasks([TASKS]);
const task = (id: string) => helpdesk.find((t) => t.task.id === `helpdesk/${id}`)!.task;
const TOOL_NAMES = [...toolSchemas(task('close-ticket').environment).map((t) => t.name), 'finish'];

/** The one run a fresh artifact folder holds. */
function onlyRun(out: string): RunFiles {
  const runs = readdirSync(join(out, 'runs'));
  expect(runs).toHaveLength(1);
  return readRunFiles(join(out, 'runs', runs[0]!));
}

/** The text of a tool result, and whether it is an error. */
function text(result: Awaited<ReturnType<Client['callTool']>>): { text: string; isError: boolean } {
  const content = result.content as { type: string; text: string }[];
  return { text: content.map((c) => c.text).join(''), isError: result.isError === true };
}

/** Waits for a child to exit; resolves with its code. */
function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** POSTs `body` to `url` naming another Host (fetch does not let a caller set Host); resolves with the status. */
function postWithHost(url: string, host: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Connects the SDK client to `silo serve` over stdio. */
async function overStdio(args: string[]): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string; closed: Promise<void> }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'serve', ...args], env: PLAIN_ENV as Record<string, string>, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'silo-test', version: '1.0.0' });
  await client.connect(transport);
  // connect() takes over onclose; chain ours after the client's.
  const clientOnClose = transport.onclose;
  const whenClosed = new Promise<void>((resolve) => {
    transport.onclose = () => {
      clientOnClose?.();
      resolve();
    };
  });
  return { client, transport, stderr: () => stderr, closed: whenClosed };
}

/** Starts `silo serve --http 0`, waits for its URL, connects the SDK client. */
async function overHttp(args: string[]): Promise<{ client: Client; transport: StreamableHTTPClientTransport; child: ChildProcess; stderr: () => string; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args, '--http', '0'], { env: PLAIN_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const m = /over MCP at (http:\/\/127\.0\.0\.1:\d+\/mcp\?token=[\w-]+)\n/.exec(stderr);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error(`silo serve exited: ${stderr}`)));
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'silo-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, child, stderr: () => stderr, url };
}

describe('silo serve over stdio', () => {
  it('offers the tools, finish and the instruction; a failed call is an MCP tool error; finish grades and writes the run', async () => {
    const out = mkdtempSync(join(tmp.dir, 'stdio-'));
    const { client, stderr, closed } = await overStdio([TASKS, '--task', 'helpdesk/assign-by-email', '--out', out, '--seed', '7']);

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    expect(tools.find((t) => t.name === 'search_users')?.inputSchema).toEqual(toolSchemas(task('assign-by-email').environment).find((t) => t.name === 'search_users')!.inputSchema);
    expect(client.getInstructions()).toContain(task('assign-by-email').instruction);
    const prompt = await client.getPrompt({ name: 'task' });
    expect(prompt.messages[0]!.content).toEqual({ type: 'text', text: task('assign-by-email').instruction });

    // Wrong id: the tool throws; wrong tool name; an invented parameter. Each is an MCP tool error with Silo's message.
    expect(text(await client.callTool({ name: 'update_ticket', arguments: { ticket_id: 't7', assignee_id: 'jordan' } }))).toEqual({
      isError: true,
      text: expect.stringMatching(/^Error \(tool_error\): No user with id 'jordan'.*use search_users/),
    });
    expect(text(await client.callTool({ name: 'search_user', arguments: { query: 'jordan' } }))).toEqual({
      isError: true,
      text: expect.stringMatching(/^Error \(tool_not_found\): no tool named 'search_user'\. Available tools, nearest first: search_users/),
    });
    expect(text(await client.callTool({ name: 'search_users', arguments: { name: 'jordan' } }))).toMatchObject({ isError: true, text: expect.stringMatching(/^Error \(invalid_input\): .*name/) });
    // The corrected calls.
    const found = text(await client.callTool({ name: 'search_users', arguments: { query: 'jordan' } }));
    expect(found.isError).toBe(false);
    const jordan = (JSON.parse(found.text) as { id: string; email: string }[]).find((u) => u.email === 'jordan.okafor@acme.test')!;
    expect(text(await client.callTool({ name: 'update_ticket', arguments: { ticket_id: 't7', assignee_id: jordan.id } })).isError).toBe(false);
    expect(text(await client.callTool({ name: 'finish', arguments: { output: 'Assigned t7 to Jordan Okafor.' } }))).toEqual({
      isError: false,
      text: 'Finished. The rollout is over and is being graded.',
    });
    await closed;

    const files = onlyRun(out);
    expect(files.run).toMatchObject({ agent: 'mcp:stdio', status: 'passed', termination: 'returned', toolCalls: 5, seed: 7, taskId: 'helpdesk/assign-by-email' });
    expect(files.result).toMatchObject({ status: 'passed', score: 1, output: 'Assigned t7 to Jordan Okafor.' });
    expect(eventsOf(files.trace, 'tool_call').map((c) => c.name)).toEqual(['update_ticket', 'search_user', 'search_users', 'search_users', 'update_ticket']);
    expect(eventsOf(files.trace, 'agent_returned')).toEqual([expect.objectContaining({ output: 'Assigned t7 to Jordan Okafor.' })]);
    expect(files.diff.length).toBeGreaterThan(0);
    expect(stderr()).toMatch(/silo serve: helpdesk\/assign-by-email passed \(score 1\.00, returned, 5 calls\); run [0-9A-Z]{26}/);
  });

  it('runs calls sent at once one after the other, in arrival order', async () => {
    const out = mkdtempSync(join(tmp.dir, 'stdio-'));
    const { client, closed } = await overStdio([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    const ids = ['t1', 't2', 't3', 't4'];
    const results = await Promise.all(ids.map((id) => client.callTool({ name: 'get_ticket', arguments: { ticket_id: id } })));
    expect(results.map((r) => (JSON.parse(text(r).text) as { id: string }).id)).toEqual(ids);
    await client.callTool({ name: 'finish', arguments: { output: 'looked' } });
    await closed;
    const events = onlyRun(out).trace.filter((e) => e.type === 'tool_call' || e.type === 'tool_result');
    // call, result, call, result: never two calls in flight on the world.
    expect(events.map((e) => e.type)).toEqual(ids.flatMap(() => ['tool_call', 'tool_result']));
    expect(events.filter((e) => e.type === 'tool_call').map((e) => (e.input as { ticket_id: string }).ticket_id)).toEqual(ids);
  });

  it('a disconnect without finish ends the rollout: graded, output null, and the trace says why', async () => {
    const out = mkdtempSync(join(tmp.dir, 'stdio-'));
    const { client, transport } = await overStdio([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    expect(text(await client.callTool({ name: 'update_ticket', arguments: { ticket_id: 't3', status: 'closed' } })).isError).toBe(false);
    // Closing ends the server's stdin, then waits for the process to leave.
    await transport.close();
    const files = onlyRun(out);
    expect(files.run).toMatchObject({ status: 'passed', termination: 'returned', toolCalls: 1 });
    expect(files.result.output).toBeNull();
    expect(eventsOf(files.trace, 'agent_log').map((l) => l.message)).toContain('silo: the MCP client disconnected without calling finish; the output is null');
  });

  it("applies the rollout's limits: calls past --max-tool-calls are refused, and the rollout ends after the grace period", async () => {
    const out = mkdtempSync(join(tmp.dir, 'stdio-'));
    const { client, closed } = await overStdio([TASKS, '--task', 'helpdesk/close-ticket', '--max-tool-calls', '1', '--out', out]);
    expect(text(await client.callTool({ name: 'get_ticket', arguments: { ticket_id: 't3' } })).isError).toBe(false);
    expect(text(await client.callTool({ name: 'update_ticket', arguments: { ticket_id: 't3', status: 'closed' } }))).toEqual({
      isError: true,
      text: expect.stringMatching(/^Error \(limit_exceeded\): call refused: tool call limit/),
    });
    await closed;
    const files = onlyRun(out);
    expect(files.run).toMatchObject({ status: 'failed', termination: 'tool_call_limit', toolCalls: 1, refusedCalls: 1 });
    expect(eventsOf(files.trace, 'limit_exceeded')).toEqual([expect.objectContaining({ limit: 'maxToolCalls' })]);
  });
});

describe('silo serve --http', () => {
  it('serves the same rollout over streamable HTTP on 127.0.0.1 and exits 0 once finish passes', async () => {
    const out = mkdtempSync(join(tmp.dir, 'http-'));
    const { client, child, url } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    expect(new URL(url).hostname).toBe('127.0.0.1');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    expect(text(await client.callTool({ name: 'update_ticket', arguments: { ticket_id: 't3', status: 'shut' } }))).toMatchObject({
      isError: true,
      text: expect.stringMatching(/^Error \(invalid_input\): .*status/),
    });
    expect(text(await client.callTool({ name: 'update_ticket', arguments: { ticket_id: 't3', status: 'closed' } })).isError).toBe(false);
    expect(text(await client.callTool({ name: 'finish', arguments: { output: { closed: ['t3'] } } })).isError).toBe(false);
    expect(await exited(child)).toBe(0);
    const files = onlyRun(out);
    expect(files.run).toMatchObject({ agent: 'mcp:http', status: 'passed', termination: 'returned', toolCalls: 2 });
    // A non-text answer is recorded as JSON, as an agent's return value would be.
    expect(files.result.output).toBe('{"closed":["t3"]}');
  });

  it('ends the rollout when the client ends its session (a disconnect), and exits 1 when it failed', async () => {
    const out = mkdtempSync(join(tmp.dir, 'http-'));
    const { client, transport, child } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    expect(text(await client.callTool({ name: 'get_ticket', arguments: { ticket_id: 't3' } })).isError).toBe(false);
    await transport.terminateSession();
    expect(await exited(child)).toBe(1);
    const files = onlyRun(out);
    expect(files.run).toMatchObject({ status: 'failed', termination: 'returned', toolCalls: 1 });
    expect(files.result.output).toBeNull();
  });

  it('refuses requests for another host (DNS rebinding) and answers only on /mcp', async () => {
    const out = mkdtempSync(join(tmp.dir, 'http-'));
    const { transport, child, url } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    expect(await postWithHost(url, 'evil.example', JSON.stringify(init))).toBe(403);
    const elsewhere = await fetch(new URL('/other', url), { method: 'POST', headers, body: JSON.stringify(init) });
    expect(elsewhere.status).toBe(404);
    await transport.terminateSession();
    await exited(child);
  });
});

describe('silo serve --http: the token', () => {
  const finish = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'finish', arguments: { output: 'forged' } } };
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'rogue', version: '1' } } };
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

  it('prints a new random token in the URL of each serve', async () => {
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { transport, child, url } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', mkdtempSync(join(tmp.dir, 'http-'))]);
      urls.push(url);
      await transport.terminateSession();
      await exited(child);
    }
    const tokens = urls.map((u) => new URL(u).searchParams.get('token'));
    expect(tokens[0]).toMatch(/^[\w-]{43}$/);
    expect(tokens[1]).not.toBe(tokens[0]);
  });

  it('lets no other local client finish the rollout: without the token (or with a wrong one) every request gets 401', async () => {
    const out = mkdtempSync(join(tmp.dir, 'http-'));
    const { client, transport, child, url } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    const bare = new URL(url);
    bare.search = '';
    const wrong = new URL(url);
    wrong.searchParams.set('token', 'x'.repeat(43));
    // A second client: the MCP SDK's own, then raw requests, even with the real client's session id.
    const rogue = new Client({ name: 'rogue', version: '1.0.0' });
    await expect(rogue.connect(new StreamableHTTPClientTransport(bare))).rejects.toThrow(/401|unauthorized/i);
    for (const target of [bare, wrong]) {
      for (const body of [init, finish]) {
        const res = await fetch(target, { method: 'POST', headers: { ...headers, 'mcp-session-id': transport.sessionId! }, body: JSON.stringify(body) });
        expect(res.status).toBe(401);
        expect(await res.json()).toMatchObject({ error: { message: expect.stringMatching(/^unauthorized: .*token/) } });
      }
    }
    const guessed = await fetch(bare, { method: 'POST', headers: { ...headers, authorization: 'Bearer guessed', 'mcp-session-id': transport.sessionId! }, body: JSON.stringify(finish) });
    expect(guessed.status).toBe(401);
    // The rollout is still the client's: its own finish is the one graded.
    expect(text(await client.callTool({ name: 'update_ticket', arguments: { ticket_id: 't3', status: 'closed' } })).isError).toBe(false);
    expect(text(await client.callTool({ name: 'finish', arguments: { output: 'closed t3' } })).isError).toBe(false);
    expect(await exited(child)).toBe(0);
    expect(onlyRun(out).result.output).toBe('closed t3');
  });

  it('keeps an agent of another rollout (in its sandbox, with the network) from finishing it', async () => {
    const out = mkdtempSync(join(tmp.dir, 'http-'));
    const { client, child, url } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    const bare = new URL(url);
    bare.search = '';
    const pool = new SandboxPool();
    try {
      const agent = fileURLToPath(new URL('../../fixtures/agents/hostile/finishes-served.mjs', import.meta.url));
      const rogue = await runRollout({ task: testWorld({ instruction: bare.href }).task, agent, outDir: join(tmp.dir, 'rogue'), pool, limits: { timeoutMs: 15_000 } });
      expect(rogue.termination, JSON.stringify(rogue.error)).toBe('returned');
      expect(JSON.parse(rogue.output!)).toEqual({ initialize: 401, finish: 401 });
    } finally {
      await pool.destroy();
    }
    expect(text(await client.callTool({ name: 'finish', arguments: { output: 'mine' } })).isError).toBe(false);
    await exited(child);
    expect(onlyRun(out).result.output).toBe('mine');
  });

  it('takes the token as an Authorization bearer header too', async () => {
    const { transport, child, url } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', mkdtempSync(join(tmp.dir, 'http-'))]);
    const bare = new URL(url);
    const token = bare.searchParams.get('token')!;
    bare.search = '';
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const res = await fetch(bare, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}`, 'mcp-session-id': transport.sessionId! }, body: JSON.stringify(list) });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"finish"');
    await transport.terminateSession();
    await exited(child);
  });
});

describe('silo serve: ending without finish', () => {
  it('ends on --timeout (counted from initialize) after the grace period, graded as a timeout', async () => {
    const out = mkdtempSync(join(tmp.dir, 'http-'));
    const { client, child } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--timeout', '200', '--out', out]);
    expect((await client.listTools()).tools.length).toBe(TOOL_NAMES.length);
    expect(await exited(child)).toBe(1);
    const files = onlyRun(out);
    expect(files.run).toMatchObject({ status: 'failed', termination: 'timeout', toolCalls: 0 });
    expect(eventsOf(files.trace, 'limit_exceeded')).toEqual([expect.objectContaining({ limit: 'timeoutMs' })]);
  });

  it('is cancelled by SIGINT: exit 130, the run recorded as cancelled', async () => {
    const out = mkdtempSync(join(tmp.dir, 'http-'));
    const { client, child } = await overHttp([TASKS, '--task', 'helpdesk/close-ticket', '--out', out]);
    expect(text(await client.callTool({ name: 'get_ticket', arguments: { ticket_id: 't3' } })).isError).toBe(false);
    child.kill('SIGINT');
    expect(await exited(child)).toBe(130);
    const files = onlyRun(out);
    expect(files.run).toMatchObject({ status: 'error', termination: 'cancelled', toolCalls: 1 });
  });
});

describe('silo serve: usage errors', () => {
  it.each([
    [[TASKS], /silo serve runs one task; this file has 6 .*pick one with --task <id>/],
    [[TASKS, '--task', 'helpdesk/*'], /--task helpdesk\/\* matches 6/],
    [[TASKS, '--task', 'helpdesk/close-ticket', '--http', '70000'], /--http takes a port from 0 to 65535/],
    [[TASKS, '--task', 'helpdesk/close-ticket', '--http', 'x'], /--http <port>.*expected an integer/],
  ])('exits 2 with one line for %j', async (args, message) => {
    const r = await runSilo(['serve', ...args, '--out', tmp.dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 2 when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await runSilo(['serve', TASKS, '--task', 'helpdesk/close-ticket', '--http', String(port), '--out', tmp.dir]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\); pick another port with --http`));
    } finally {
      blocker.close();
    }
  });
});
