/**
 * The built-in `openai:<model>` agent against a scripted Chat Completions server on 127.0.0.1,
 * through the model gateway: the real SDK, real HTTP, a multi-step helpdesk task with a failed
 * call the model corrects, parallel tool calls, and a 429 that the gateway retries.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadTasks, runRollout, type Task } from '../../src/index.js';
import { toolSchemas } from '../../src/rollout/tools.js';
import { eventsOf, readRunFiles, tempDir } from '../helpers.js';
import { errorReply, openaiReply, scriptedServer, type RecordedRequest } from './model-server.js';
import { gatewayFor } from '../gateway/helpers.js';
import { Gateway } from '../../src/gateway/gateway.js';

const out = tempDir('silo-openai-');
afterAll(() => out.remove());

const helpdesk = await loadTasks(['fixtures/helpdesk/tasks.ts']);
const task = (id: string): Task => helpdesk.find((t) => t.task.id === `helpdesk/${id}`)!.task;

/** The content of the tool message answering `callId` in a request. */
function toolMessage(req: RecordedRequest, callId: string): string {
  const message = (req.body.messages as { role: string; tool_call_id?: string; content: string }[]).find((m) => m.role === 'tool' && m.tool_call_id === callId);
  if (!message) throw new Error(`no tool message for ${callId}`);
  return message.content;
}

describe('--agent openai:<model>', () => {
  it('drives a helpdesk task to a pass: a failed call corrected, parallel calls, a 429 retried by the gateway, usage in run.json', async () => {
    const server = await scriptedServer([
      // Turn 1: the natural first guess, which fails (there is no user "jordan").
      () => openaiReply({ toolCalls: [{ id: 'c1', name: 'update_ticket', args: { ticket_id: 't7', assignee_id: 'jordan' } }], usage: { prompt: 100, completion: 10 } }),
      // Turn 2, first try: rate limited.
      () => errorReply(429, { 'retry-after-ms': '10' }),
      // Turn 2, retried: two calls in one response.
      () =>
        openaiReply({
          toolCalls: [
            { id: 'c2', name: 'search_users', args: { query: 'jordan' } },
            { id: 'c3', name: 'get_ticket', args: { ticket_id: 't7' } },
          ],
          usage: { prompt: 200, completion: 20 },
        }),
      // Turn 3: picks the Jordan with the right email out of the search result it was sent.
      (req) => {
        const users = JSON.parse(toolMessage(req, 'c2')) as { id: string; email: string }[];
        const jordan = users.find((u) => u.email === 'jordan.okafor@acme.test');
        if (!jordan) throw new Error('the search result did not reach the model');
        return openaiReply({ toolCalls: [{ id: 'c4', name: 'update_ticket', args: { ticket_id: 't7', assignee_id: jordan.id } }], usage: { prompt: 300, completion: 30 } });
      },
      () => openaiReply({ content: 'Assigned t7 to Jordan Okafor.', usage: { prompt: 400, completion: 40 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      // No env: a built-in agent is granted its provider through the gateway.
      const r = await runRollout({ task: task('assign-by-email'), agent: 'openai:test-model', gateway, outDir: out.dir });
      expect(r.status, JSON.stringify(r)).toBe('passed');
      expect(r.termination).toBe('returned');
      expect(r.output).toBe('Assigned t7 to Jordan Okafor.');
      expect(server.unexpected).toEqual([]);

      // What the model was sent.
      const [first, second, retried, third, fourth] = server.requests;
      expect(server.requests).toHaveLength(5);
      expect(first!.path).toBe('/v1/chat/completions');
      expect(first!.headers.authorization).toBe('Bearer sk-real');
      expect(first!.body.model).toBe('test-model');
      expect(first!.body.messages[0].role).toBe('system');
      expect(first!.body.messages[1]).toEqual({ role: 'user', content: task('assign-by-email').instruction });
      expect(first!.body.tools).toEqual(
        toolSchemas(task('assign-by-email').environment).map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } })),
      );
      // The failure went back to the model, with Silo's message.
      expect(toolMessage(second!, 'c1')).toMatch(/^Error \(tool_error\): No user with id 'jordan'.*use search_users/);
      // The retry sent the same request again.
      expect(retried!.body).toEqual(second!.body);
      // Both parallel calls answered, in order, after the assistant message that made them.
      const tail = third!.body.messages.slice(-3) as { role: string; tool_call_id?: string; tool_calls?: unknown[] }[];
      expect(tail.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool']);
      expect(tail[0]!.tool_calls).toHaveLength(2);
      expect(JSON.parse(toolMessage(third!, 'c3'))).toMatchObject({ id: 't7' });
      expect(JSON.parse(toolMessage(fourth!, 'c4'))).toMatchObject({ id: 't7', assigneeId: expect.any(String) });

      // What the artifacts say.
      const files = readRunFiles(r.runDir);
      expect(files.run.agent).toBe('openai:test-model');
      expect(files.run.providers).toEqual(['openai']);
      expect(files.run.usage).toEqual({ inputTokens: 1000, outputTokens: 100, requests: 4, source: 'gateway' });
      expect(files.run).not.toHaveProperty('reportedUsage');
      const calls = eventsOf(files.trace, 'tool_call');
      expect(calls.map((c) => c.name)).toEqual(['update_ticket', 'search_users', 'get_ticket', 'update_ticket']);
      const results = eventsOf(files.trace, 'tool_result');
      expect(results.map((e) => e.ok)).toEqual([false, true, true, true]);
      const modelCalls = eventsOf(files.trace, 'model_call');
      expect(modelCalls).toHaveLength(4);
      expect(modelCalls[0]).toMatchObject({ model: 'test-model', endpoint: 'chat/completions', status: 200, usage: { inputTokens: 100, outputTokens: 10 } });
      // The gateway waited the 10 ms the server asked for and tried again: one call, one retry.
      const again = modelCalls[1]!;
      expect(again).toMatchObject({ status: 200, retries: 1, usage: { inputTokens: 200, outputTokens: 20 } });
      expect(again.queuedMs).toBeGreaterThanOrEqual(9);
      // It sits between the failed call's result and the parallel calls.
      expect(again.seq).toBeGreaterThan(results[0]!.seq);
      expect(again.seq).toBeLessThan(calls[1]!.seq);
      expect(files.models).toHaveLength(4);
      expect(files.result.diagnosis.map((d) => d.code)).toContain('self_corrected');
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('stops after --max-turns model requests, as a thrown error that is still graded', async () => {
    const server = await scriptedServer([
      () => openaiReply({ toolCalls: [{ id: 'c1', name: 'get_ticket', args: { ticket_id: 't3' } }], usage: { prompt: 5, completion: 1 } }),
    ]);
    // A local server that takes no key: the host has none to send.
    const gateway = new Gateway({ env: { OPENAI_BASE_URL: `${server.origin}/v1` } });
    try {
      const r = await runRollout({ task: task('close-ticket'), agent: 'openai:test-model', agentOptions: { maxTurns: 1 }, gateway, outDir: out.dir });
      expect(r.termination).toBe('threw');
      expect(r.status).toBe('failed');
      expect(server.requests).toHaveLength(1);
      const files = readRunFiles(r.runDir);
      expect(eventsOf(files.trace, 'agent_threw')[0]!.error.message).toMatch(/no final answer after 1 model turns/);
      expect(files.run.usage).toEqual({ inputTokens: 5, outputTokens: 1, requests: 1, source: 'gateway' });
      // Without OPENAI_API_KEY in the host, no key goes upstream (and never the agent's token).
      expect(server.requests[0]!.headers.authorization).toBeUndefined();
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('does not retry a request the server refused (400): the agent throws with the server message', async () => {
    const server = await scriptedServer([() => ({ status: 400, body: { error: { message: 'model not found', type: 'invalid_request_error' } } })]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: task('close-ticket'), agent: 'openai:nope', gateway, outDir: out.dir });
      expect(r.termination).toBe('threw');
      expect(server.requests).toHaveLength(1);
      const files = readRunFiles(r.runDir);
      expect(eventsOf(files.trace, 'agent_threw')[0]!.error.message).toMatch(/400.*model not found/);
      expect(files.run.usage).toEqual({ inputTokens: 0, outputTokens: 0, requests: 1, source: 'gateway' });
      expect(eventsOf(files.trace, 'model_call')).toEqual([expect.objectContaining({ status: 400 })]);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('stops waiting on a model that does not answer when the rollout is stopped: the signal reaches the request', async () => {
    const cancel = new AbortController();
    // The server takes the request and never answers; the rollout is cancelled once it has it.
    const server = await scriptedServer([
      () => {
        cancel.abort();
        return null;
      },
    ]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: task('close-ticket'), agent: 'openai:slow-model', gateway, signal: cancel.signal, outDir: out.dir });
      expect(r.termination).toBe('cancelled');
      expect(server.requests).toHaveLength(1);
      const files = readRunFiles(r.runDir);
      // The request was aborted and the agent threw within the grace period; had the signal not
      // reached the request, the agent would still be waiting when its worker was terminated.
      expect(eventsOf(files.trace, 'agent_threw')).toEqual([expect.objectContaining({ error: expect.objectContaining({ message: expect.stringMatching(/abort/i) }) })]);
      // The gateway gave up the request upstream: recorded once, not retried. Which of two ends it
      // hears of first is a race on a loaded machine: the agent's connection closing (the usual
      // case), or the agent phase ending once the agent has thrown (seen under the full suite).
      expect(eventsOf(files.trace, 'model_call')).toEqual([
        expect.objectContaining({ status: null, error: expect.stringMatching(/^aborted: (the agent closed the connection|the rollout's agent phase ended)$/) }),
      ]);
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});
