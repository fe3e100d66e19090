/**
 * Scripted model servers for tests: real HTTP servers on 127.0.0.1 (a free port) that answer
 * each request with the next step of a script, as JSON in the shape the OpenAI Chat Completions
 * and Anthropic Messages protocols define. A step reads the request it answers, so a script can
 * react to what the agent fed back (the tool results). Every request is recorded.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body. */
  body: any;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** One step of a script: the request it answers → the reply (null: never answer, as a hung server). */
export type Step = (request: RecordedRequest) => Reply | null;

export interface ScriptedServer {
  /** http://127.0.0.1:<port> */
  origin: string;
  requests: RecordedRequest[];
  /** Requests that came after the script ran out (answered 500). */
  unexpected: RecordedRequest[];
  close(): Promise<void>;
}

export async function scriptedServer(steps: Step[]): Promise<ScriptedServer> {
  const requests: RecordedRequest[] = [];
  const unexpected: RecordedRequest[] = [];
  const hung: import('node:http').ServerResponse[] = [];
  let next = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const request: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : null };
      requests.push(request);
      const step = steps[next++];
      let reply: Reply | null;
      if (step) {
        try {
          reply = step(request);
        } catch (err) {
          reply = { status: 400, body: { error: { type: 'invalid_request_error', message: `script: ${(err as Error).message}` } } };
        }
      } else {
        unexpected.push(request);
        reply = { status: 500, body: { error: { type: 'server_error', message: 'the script has no more steps' } } };
      }
      if (reply === null) {
        hung.push(res);
        return;
      }
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    unexpected,
    close: () => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A Chat Completions response: a final text, or tool calls (`args` are sent as JSON text). */
export function openaiReply(reply: {
  content?: string;
  toolCalls?: { id: string; name: string; args: unknown }[];
  usage: { prompt: number; completion: number };
}): Reply {
  const calls = reply.toolCalls ?? [];
  return {
    body: {
      id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: 'scripted-model',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.content ?? null,
            refusal: null,
            ...(calls.length > 0
              ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) }
              : {}),
          },
          logprobs: null,
          finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: { prompt_tokens: reply.usage.prompt, completion_tokens: reply.usage.completion, total_tokens: reply.usage.prompt + reply.usage.completion },
    },
  };
}

/** A Messages response: text and tool_use blocks. */
export function anthropicReply(reply: {
  text?: string;
  toolUses?: { id: string; name: string; input: unknown }[];
  usage: { input: number; output: number };
}): Reply {
  const uses = reply.toolUses ?? [];
  return {
    body: {
      id: `msg_${Math.random().toString(36).slice(2)}`,
      type: 'message',
      role: 'assistant',
      model: 'scripted-model',
      content: [
        ...(reply.text === undefined ? [] : [{ type: 'text', text: reply.text }]),
        ...uses.map((u) => ({ type: 'tool_use', id: u.id, name: u.name, input: u.input })),
      ],
      stop_reason: uses.length > 0 ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: reply.usage.input, output_tokens: reply.usage.output },
    },
  };
}

/** An error response in the shape both protocols use. */
export function errorReply(status: number, headers: Record<string, string> = {}): Reply {
  const type = status === 429 ? 'rate_limit_error' : 'overloaded_error';
  return { status, headers, body: { type: 'error', error: { type, message: `scripted ${status}` } } };
}
