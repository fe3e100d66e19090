/**
 * Scripted model servers for tests: real HTTP servers on 127.0.0.1 (a free port) that answer
 * each request with the next step of a script, as JSON in the shape the OpenAI Chat Completions,
 * Responses and Anthropic Messages protocols define, or as a stream of server-sent events written
 * chunk by chunk (a chunk may wait for the test to let it go). A step reads the request it
 * answers, so a script can react to what the agent fed back (the tool results). Every request is
 * recorded.
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

/** A streamed reply: each chunk written as it comes; a function is awaited before the next chunk. */
export interface StreamReply {
  status?: number;
  headers?: Record<string, string>;
  chunks: (string | (() => Promise<void>))[];
  /** Called when the connection closes before the stream's end (the client went away). */
  onAbandoned?: () => void;
}

/** One step of a script: the request it answers → the reply (null: never answer, as a hung server). */
export type Step = (request: RecordedRequest) => Reply | StreamReply | null | Promise<Reply | StreamReply | null>;

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
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const request: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : null };
      requests.push(request);
      const step = steps[next++];
      let reply: Reply | StreamReply | null;
      if (step) {
        try {
          reply = await step(request);
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
      if ('chunks' in reply) {
        res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', ...reply.headers });
        hung.push(res);
        res.once('close', () => {
          if (!res.writableFinished) reply.onAbandoned?.();
        });
        for (const chunk of reply.chunks) {
          if (typeof chunk === 'function') await chunk();
          else res.write(chunk);
        }
        res.end();
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

/** `data: <json>` and a blank line, with an `event:` line when named. */
export function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

/**
 * A Chat Completions stream, as OpenAI sends it: a role chunk, the text in `pieces` (or a tool
 * call), a finish chunk and, when the request asked for it (`stream_options.include_usage`), a
 * usage chunk, each chunk then carrying `usage: null`; then `[DONE]`. `gate` is awaited after the
 * first piece.
 */
export function openaiStream(
  request: RecordedRequest,
  reply: { pieces?: string[]; toolCall?: { id: string; name: string; args: unknown }; usage: { prompt: number; completion: number }; gate?: () => Promise<void> },
): StreamReply {
  const withUsage = request.body?.stream_options?.include_usage === true;
  const base = { id: 'chatcmpl-stream', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'scripted-model' };
  const chunk = (delta: unknown, finish: string | null): string =>
    sse({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(withUsage ? { usage: null } : {}) });
  const chunks: StreamReply['chunks'] = [chunk({ role: 'assistant', content: '' }, null)];
  for (const [i, piece] of (reply.pieces ?? []).entries()) {
    chunks.push(chunk({ content: piece }, null));
    if (i === 0 && reply.gate) chunks.push(reply.gate);
  }
  if (reply.toolCall) {
    const { id, name, args } = reply.toolCall;
    chunks.push(chunk({ tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: '' } }] }, null));
    const text = JSON.stringify(args);
    chunks.push(chunk({ tool_calls: [{ index: 0, function: { arguments: text.slice(0, 5) } }] }, null));
    chunks.push(chunk({ tool_calls: [{ index: 0, function: { arguments: text.slice(5) } }] }, null));
  }
  chunks.push(chunk({}, reply.toolCall ? 'tool_calls' : 'stop'));
  if (withUsage) {
    const { prompt, completion } = reply.usage;
    chunks.push(sse({ ...base, choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } }));
  }
  chunks.push(sse('[DONE]'));
  return { chunks };
}

/** A Responses API response: a message with `text`, or a function call. */
export function responsesReply(reply: { text?: string; call?: { id: string; name: string; args: unknown }; usage: { input: number; output: number } }): Reply {
  return { body: responseObject(reply, 'completed') };
}

function responseObject(reply: { text?: string; call?: { id: string; name: string; args: unknown }; usage: { input: number; output: number } }, status: string): Record<string, unknown> {
  const output = reply.call
    ? [{ type: 'function_call', id: `fc_${reply.call.id}`, call_id: reply.call.id, name: reply.call.name, arguments: JSON.stringify(reply.call.args), status: 'completed' }]
    : [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: reply.text ?? '', annotations: [] }] }];
  const { input, output: out } = reply.usage;
  return {
    id: 'resp_1',
    object: 'response',
    created_at: 1_700_000_000,
    status,
    model: 'scripted-model',
    output: status === 'completed' ? output : [],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: status === 'completed' ? { input_tokens: input, output_tokens: out, total_tokens: input + out, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } } : null,
  };
}

/** A Responses API stream: created, the text in pieces, completed (with usage). */
export function responsesStream(reply: { pieces: string[]; usage: { input: number; output: number } }): StreamReply {
  let n = 0;
  const event = (type: string, data: Record<string, unknown>): string => sse({ type, sequence_number: n++, ...data }, type);
  const text = reply.pieces.join('');
  return {
    chunks: [
      event('response.created', { response: responseObject({ ...reply, text }, 'in_progress') }),
      ...reply.pieces.map((delta) => event('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta })),
      event('response.completed', { response: responseObject({ ...reply, text }, 'completed') }),
    ],
  };
}

/** A Messages stream, as Anthropic sends it: the input tokens first, the output tokens at the end. */
export function anthropicStream(reply: { pieces: string[]; usage: { input: number; output: number }; gate?: () => Promise<void> }): StreamReply {
  const chunks: StreamReply['chunks'] = [
    sse({ type: 'message_start', message: { id: 'msg_s', type: 'message', role: 'assistant', model: 'scripted-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: reply.usage.input, output_tokens: 1 } } }, 'message_start'),
    sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
  ];
  for (const [i, text] of reply.pieces.entries()) {
    chunks.push(sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, 'content_block_delta'));
    if (i === 0 && reply.gate) chunks.push(reply.gate);
  }
  chunks.push(
    sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
    sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: reply.usage.output } }, 'message_delta'),
    sse({ type: 'message_stop' }, 'message_stop'),
  );
  return { chunks };
}
