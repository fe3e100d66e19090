/**
 * `silo serve`: one rollout whose agent is an MCP client. The world is built, served over MCP
 * (stdio, or streamable HTTP on 127.0.0.1), and once the client finishes or disconnects, graded
 * and written like any rollout (runRollout with an MCP driver in place of a worker).
 *
 * Over HTTP every request must carry the serve's token, random per serve, in the URL's `token`
 * parameter or an `Authorization: Bearer` header: any local process (an agent of another rollout
 * included) can reach 127.0.0.1, and must not act for the client (answer `finish` first, say).
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SiloError } from '../errors.js';
import { importOptional } from '../optional.js';
import type { DriveOptions } from '../rollout/agent.js';
import { runRollout } from '../rollout/rollout.js';
import type { AgentPhase } from '../rollout/agent.js';
import type { Limits, RunResult, Task } from '../types.js';

/** MCP's modules, imported only when a world is served (the MCP SDK is an optional dependency). */
async function loadMcp() {
  const [stdio, http, session] = await importOptional('mcp', () =>
    Promise.all([import('@modelcontextprotocol/sdk/server/stdio.js'), import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('./session.js')]),
  );
  return { StdioServerTransport: stdio.StdioServerTransport, StreamableHTTPServerTransport: http.StreamableHTTPServerTransport, ...session };
}
type Mcp = Awaited<ReturnType<typeof loadMcp>>;

/** Options of serveTask. */
export interface ServeOptions {
  task: Task;
  /** Recorded in run.json. */
  taskFile?: string | null;
  /** `stdio` (default) or streamable HTTP on 127.0.0.1 (port 0 picks a free one). */
  transport?: { kind: 'stdio'; stdin?: Readable; stdout?: Writable } | { kind: 'http'; port: number };
  limits?: Partial<Limits>;
  seed?: number;
  outDir?: string;
  signal?: AbortSignal;
  /**
   * Called once the HTTP server listens, with its MCP endpoint and token in one URL
   * (http://127.0.0.1:<port>/mcp?token=<token>), and the token alone (for an Authorization header).
   */
  onListening?: (url: string, token: string) => void;
}

/** The path of the MCP endpoint over HTTP. */
export const MCP_PATH = '/mcp';

/** Serves one rollout of `task` over MCP; resolves with its result once it is graded and written. */
export async function serveTask(options: ServeOptions): Promise<RunResult> {
  const transport = options.transport ?? { kind: 'stdio' };
  if (transport.kind === 'http' && !(Number.isInteger(transport.port) && transport.port >= 0 && transport.port <= 65535)) {
    throw new SiloError('SILO_USAGE', `--http takes a port from 0 to 65535 (0 picks a free one); got ${String(transport.port)}`);
  }
  const mcp = await loadMcp();
  if (options.task.environment.tools.some((t) => t.name === mcp.FINISH_TOOL.name)) {
    throw new SiloError('SILO_USAGE', `task ${options.task.id} has a tool named '${mcp.FINISH_TOOL.name}', which silo serve adds itself; rename that tool`);
  }
  // The port is taken first, so a port in use is a usage error, not a failed run.
  const token = randomBytes(32).toString('base64url');
  const http = transport.kind === 'http' ? await listen(transport.port, token) : undefined;
  const drive = (o: DriveOptions): Promise<AgentPhase> =>
    http ? serveHttp(mcp, o, http, token, options.onListening) : serveStdio(mcp, o, (transport.kind === 'stdio' && transport.stdin) || process.stdin, (transport.kind === 'stdio' && transport.stdout) || process.stdout);
  try {
    return await runRollout({
      task: options.task,
      taskFile: options.taskFile ?? null,
      agent: http ? 'mcp:http' : 'mcp:stdio',
      drive,
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.seed === undefined ? {} : { seed: options.seed }),
      ...(options.outDir ? { outDir: options.outDir } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } finally {
    if (http) {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
  }
}

/** An HTTP server listening on 127.0.0.1 that answers 503 (to its client) until the world is ready. */
async function listen(port: number, token: string): Promise<HttpServer> {
  const http = createServer((req, res) => {
    if (!authorized(req, token)) return refuse(res);
    res.writeHead(503, { 'content-type': 'text/plain' }).end('the world is being built; try again\n');
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', (err: NodeJS.ErrnoException) =>
      reject(new SiloError('SILO_USAGE', `cannot listen on 127.0.0.1:${port} (${err.code ?? err.message}); pick another port with --http`)),
    );
    http.listen(port, '127.0.0.1', resolve);
  });
  return http;
}

async function serveStdio(mcp: Mcp, opts: DriveOptions, stdin: Readable, stdout: Writable): Promise<AgentPhase> {
  const transport = new mcp.StdioServerTransport(stdin, stdout);
  // The client closing our stdin is a disconnect.
  const onEnd = (): void => void transport.close();
  stdin.once('end', onEnd);
  try {
    return await mcp.serveSession(opts, transport);
  } finally {
    stdin.off('end', onEnd);
  }
}

async function serveHttp(mcp: Mcp, opts: DriveOptions, http: HttpServer, token: string, onListening: ServeOptions['onListening']): Promise<AgentPhase> {
  const port = (http.address() as AddressInfo).port;
  // One session (one client, one rollout); requests naming another host are refused (DNS rebinding).
  const transport = new mcp.StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableDnsRebindingProtection: true,
    allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`],
  });
  http.removeAllListeners('request');
  http.on('request', (req: IncomingMessage, res: ServerResponse) => void handle(transport, token, req, res));
  onListening?.(`http://127.0.0.1:${port}${MCP_PATH}?token=${token}`, token);
  return mcp.serveSession(opts, transport);
}

/** Whether a request carries the token: the URL's `token` parameter, or an Authorization bearer header. */
function authorized(req: IncomingMessage, token: string): boolean {
  const inUrl = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('token');
  const given = inUrl ?? /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  if (!given) return false;
  // Compared as digests of equal length, in constant time.
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(token));
}

/** 401 with a JSON-RPC error, which MCP clients show as such. */
function refuse(res: ServerResponse): void {
  const message = 'unauthorized: this server takes requests with the token silo serve printed (the URL it printed, or an Authorization: Bearer <token> header)';
  res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message } }));
}

async function handle(transport: StreamableHTTPServerTransport, token: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== MCP_PATH) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end(`the MCP endpoint is ${MCP_PATH}\n`);
    return;
  }
  if (!authorized(req, token)) return refuse(res);
  try {
    await transport.handleRequest(req, res);
  } catch {
    if (!res.headersSent) res.writeHead(500).end();
  }
}
