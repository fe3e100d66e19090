/**
 * Steps 4–6 of a rollout driven by an MCP client instead of an agent module: the client is the
 * agent. It is offered the task's tools plus `finish({ output })`, and the instruction (as the
 * server's `instructions` and as the prompt `task`). Each call goes through the same tool-call
 * path and limits as a worker's; failures come back as MCP tool errors (`isError`) with Silo's
 * message. `finish`, a disconnect, a limit (after the grace period) or cancel ends the phase.
 */
import { performance } from 'node:perf_hooks';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { renderToolResult, toMcpTools, type McpTool } from '../agents/converters.js';
import { SILO_VERSION } from '../paths.js';
import type { AgentPhase, DriveOptions } from '../rollout/agent.js';
import { createCallPath } from '../rollout/call.js';
import { LimitGuard } from '../rollout/limits.js';
import { captureOutput } from '../rollout/output.js';
import { round } from '../rollout/trace.js';
import { callMessage } from './input.js';

/** The tool an MCP client calls to give its answer and end the rollout. */
export const FINISH_TOOL: McpTool = {
  name: 'finish',
  description: 'Give your final answer and end the task. Call it once, when you are done; no tool works after it.',
  inputSchema: {
    type: 'object',
    properties: { output: { description: 'Your final answer: text (or any JSON value, which is recorded as JSON).' } },
    required: ['output'],
  },
};

/** Why the phase ended. */
type End =
  | { kind: 'finished'; output: string | null; outputTruncated: boolean; outputError?: string }
  | { kind: 'disconnected' }
  | { kind: 'limit' }
  | { kind: 'cancelled' };

/** Runs steps 4–6 with the MCP client on `transport` as the agent; resolves when the phase ends. */
export async function serveSession(opts: DriveOptions, transport: Transport): Promise<AgentPhase> {
  const { limits, trace, toolbox } = opts;
  let startedAt: number | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  let ended = false;
  let resolveEnd!: (end: End) => void;
  const endPromise = new Promise<End>((resolve) => (resolveEnd = resolve));
  const end = (how: End): void => {
    if (ended) return;
    ended = true;
    resolveEnd(how);
  };

  const guard = new LimitGuard(limits, (fired) => {
    trace.add({ type: 'limit_exceeded', limit: fired.limit, message: fired.reason });
    if (fired.termination === 'cancelled') return end({ kind: 'cancelled' });
    // Like a worker's agent, the client has the grace period to finish (its answer is kept).
    graceTimer = setTimeout(() => end({ kind: 'limit' }), limits.graceMs);
  });
  const calls = createCallPath(guard, toolbox, trace);
  let nextId = 1;
  let queue: Promise<unknown> = Promise.resolve();

  const server = new Server(
    { name: 'silo', version: SILO_VERSION },
    {
      capabilities: { tools: {}, prompts: {} },
      instructions: `${opts.instruction}\n\nUse the tools to do this task. When you are done, call finish with your final answer.`,
    },
  );
  server.oninitialized = () => {
    startedAt ??= performance.now();
    guard.startClock();
  };
  server.onclose = () => end({ kind: 'disconnected' });

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...toMcpTools(toolbox.schemas), FINISH_TOOL] }));
  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: [{ name: 'task', description: 'The instruction of the task this server is for.' }],
  }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    if (request.params.name !== 'task') throw new Error(`no prompt named '${request.params.name}'; the one prompt is 'task'`);
    return { messages: [{ role: 'user', content: { type: 'text', text: opts.instruction } }] };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    if (ended) return errorResult('the rollout is over: no tool works after finish, a limit or cancel');
    if (name === FINISH_TOOL.name) {
      if (!args || !('output' in args)) return errorResult('Error (invalid_input): finish needs { "output": <your final answer> }');
      const captured = captureOutput(args.output, limits.maxOutputBytes);
      trace.add({
        type: 'agent_returned',
        output: captured.output,
        ...(captured.truncated ? { outputTruncated: true } : {}),
        ...(captured.error === undefined ? {} : { outputError: captured.error }),
      });
      // After this answer is sent: the rollout ends and is graded.
      setImmediate(() =>
        end({ kind: 'finished', output: captured.output, outputTruncated: captured.truncated, ...(captured.error === undefined ? {} : { outputError: captured.error }) }),
      );
      return { content: [{ type: 'text', text: 'Finished. The rollout is over and is being graded.' }] };
    }
    // One call at a time, in arrival order, as the calls of a worker's agent: a client that sends
    // several at once does not get them interleaved on the world.
    const message = callMessage(nextId++, name, args, limits.maxMessageBytes);
    const turn = queue.then(() => calls.handle(message));
    queue = turn.catch(() => undefined);
    const result = await turn;
    return { content: [{ type: 'text', text: renderToolResult(result) }], ...(result.ok ? {} : { isError: true }) };
  });

  const onCancel = (): void => guard.fire({ termination: 'cancelled', limit: 'cancel', reason: 'cancelled' });
  if (opts.signal?.aborted) onCancel();
  opts.signal?.addEventListener('abort', onCancel, { once: true });

  if (!ended) await server.connect(transport);
  const how = await endPromise;
  const endedAt = performance.now();
  guard.stop();
  clearTimeout(graceTimer);
  opts.signal?.removeEventListener('abort', onCancel);
  await server.close().catch(() => {});

  const base = {
    toolCalls: guard.toolCalls,
    refusedCalls: guard.refusedCalls,
    toolTimeMs: calls.toolTimeMs,
    agentMs: round(endedAt - (startedAt ?? endedAt)),
  };
  const fired = guard.fired?.termination;
  if (how.kind === 'cancelled') return { ...base, termination: 'cancelled', output: null, outputTruncated: false };
  if (how.kind === 'finished') {
    return { ...base, termination: fired ?? 'returned', output: how.output, outputTruncated: how.outputTruncated, ...(how.outputError === undefined ? {} : { outputError: how.outputError }) };
  }
  if (how.kind === 'limit') return { ...base, termination: fired ?? 'timeout', output: null, outputTruncated: false };
  trace.add({ type: 'agent_log', message: 'silo: the MCP client disconnected without calling finish; the output is null', stream: 'stderr' });
  return { ...base, termination: fired ?? 'returned', output: null, outputTruncated: false };
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
