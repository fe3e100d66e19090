/**
 * The built-in `anthropic:<model>` agent against a scripted Messages server on 127.0.0.1, through
 * the model gateway: the real SDK, real HTTP, a multi-step helpdesk task with an invalid call the
 * model corrects, parallel tool_use blocks, and an overloaded (529) response the gateway retries
 * after a backoff.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadTasks, runRollout, type Task } from '../../src/index.js';
import { toolSchemas } from '../../src/rollout/tools.js';
import { eventsOf, readRunFiles, tempDir } from '../helpers.js';
import { anthropicReply, errorReply, scriptedServer, type RecordedRequest } from './model-server.js';
import { gatewayFor } from '../gateway/helpers.js';

const out = tempDir('silo-anthropic-');
afterAll(() => out.remove());

const helpdesk = await loadTasks(['fixtures/helpdesk/tasks.ts']);
const task = (id: string): Task => helpdesk.find((t) => t.task.id === `helpdesk/${id}`)!.task;

interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/** The tool_result blocks of the last message of a request. */
function toolResults(req: RecordedRequest): ToolResultBlock[] {
  const last = req.body.messages.at(-1) as { role: string; content: ToolResultBlock[] };
  expect(last.role).toBe('user');
  return last.content;
}

describe('--agent anthropic:<model>', () => {
  it('drives a helpdesk task to a pass: an invalid call corrected, parallel tool_use, a 529 retried by the gateway, usage in run.json', async () => {
    const server = await scriptedServer([
      // Turn 1: a parameter that does not exist.
      () => anthropicReply({ toolUses: [{ id: 'tu1', name: 'update_ticket', input: { ticket_id: 't7', assignee: 'jordan' } }], usage: { input: 50, output: 5 } }),
      // Turn 2, first try: overloaded, no retry-after: the gateway backs off on its own.
      () => errorReply(529),
      // Turn 2, retried: text and two tool uses in one response.
      () =>
        anthropicReply({
          text: 'That parameter does not exist; let me look Jordan up.',
          toolUses: [
            { id: 'tu2', name: 'search_users', input: { query: 'jordan' } },
            { id: 'tu3', name: 'get_ticket', input: { ticket_id: 't7' } },
          ],
          usage: { input: 60, output: 6 },
        }),
      (req) => {
        const users = JSON.parse(toolResults(req).find((b) => b.tool_use_id === 'tu2')!.content) as { id: string; email: string }[];
        const jordan = users.find((u) => u.email === 'jordan.okafor@acme.test');
        if (!jordan) throw new Error('the search result did not reach the model');
        return anthropicReply({ toolUses: [{ id: 'tu4', name: 'update_ticket', input: { ticket_id: 't7', assignee_id: jordan.id } }], usage: { input: 70, output: 7 } });
      },
      () => anthropicReply({ text: 'Assigned t7 to Jordan Okafor.', usage: { input: 80, output: 8 } }),
    ]);
    // The gateway's default backoff: 500 ms, doubling.
    const gateway = gatewayFor(server, { backoffMs: 500 });
    try {
      const r = await runRollout({ task: task('assign-by-email'), agent: 'anthropic:test-model', gateway, outDir: out.dir });
      expect(r.status, JSON.stringify(r)).toBe('passed');
      expect(r.output).toBe('Assigned t7 to Jordan Okafor.');
      expect(server.unexpected).toEqual([]);

      const [first, second, retried, third, fourth] = server.requests;
      expect(server.requests).toHaveLength(5);
      expect(first!.path).toBe('/v1/messages');
      // The host's key, as Anthropic takes it; nothing of the agent's token.
      expect(first!.headers['x-api-key']).toBe('ak-real');
      expect(first!.headers.authorization).toBeUndefined();
      expect(first!.headers['anthropic-version']).toEqual(expect.any(String));
      expect(first!.body).toMatchObject({ model: 'test-model', max_tokens: 4096, system: expect.stringContaining('simulated environment') });
      expect(first!.body.messages).toEqual([{ role: 'user', content: task('assign-by-email').instruction }]);
      expect(first!.body.tools).toEqual(
        toolSchemas(task('assign-by-email').environment).map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })),
      );
      // The invalid call went back marked as an error, with Silo's message naming the parameter.
      const [failed] = toolResults(second!);
      expect(failed).toMatchObject({ tool_use_id: 'tu1', is_error: true });
      expect(failed!.content).toMatch(/^Error \(invalid_input\): .*assignee/);
      expect(retried!.body).toEqual(second!.body);
      // Both tool uses answered in one user message, in order; the assistant turn kept its text.
      expect(toolResults(third!).map((b) => [b.tool_use_id, b.is_error ?? false])).toEqual([
        ['tu2', false],
        ['tu3', false],
      ]);
      expect(third!.body.messages.at(-2).content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('look Jordan up') });
      expect(JSON.parse(toolResults(fourth!)[0]!.content)).toMatchObject({ id: 't7', assigneeId: expect.any(String) });

      const files = readRunFiles(r.runDir);
      expect(files.run.usage).toEqual({ inputTokens: 260, outputTokens: 26, requests: 4, source: 'gateway' });
      expect(eventsOf(files.trace, 'tool_call').map((c) => c.name)).toEqual(['update_ticket', 'search_users', 'get_ticket', 'update_ticket']);
      const results = eventsOf(files.trace, 'tool_result');
      expect(results[0]).toMatchObject({ ok: false, error: { code: 'invalid_input' } });
      const calls = eventsOf(files.trace, 'model_call');
      expect(calls.map((c) => [c.endpoint, c.status, c.retries ?? 0])).toEqual([
        ['messages', 200, 0],
        ['messages', 200, 1],
        ['messages', 200, 0],
        ['messages', 200, 0],
      ]);
      // Exponential backoff from 500 ms, with jitter of ±25%: the wait is the call's queuedMs.
      expect(calls[1]!.queuedMs).toBeGreaterThanOrEqual(375);
      expect(calls[1]!.queuedMs).toBeLessThanOrEqual(700);
      expect(files.models.map((m) => m.response.stop_reason)).toEqual(['tool_use', 'tool_use', 'tool_use', 'end_turn']);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('gives up after the gateway’s retries when the server keeps failing, and says so in the trace', async () => {
    // The server asks for 1 ms waits (retry-after-ms), which the gateway honours (its default backoff is 500 ms).
    const server = await scriptedServer(Array.from({ length: 5 }, () => () => errorReply(500, { 'retry-after-ms': '1' })));
    const gateway = gatewayFor(server, { backoffMs: 500 });
    try {
      const r = await runRollout({ task: task('close-ticket'), agent: 'anthropic:test-model', gateway, outDir: out.dir });
      expect(r.termination).toBe('threw');
      // One try and four retries; the agent's SDK, told not to, does not try again.
      expect(server.requests).toHaveLength(5);
      const files = readRunFiles(r.runDir);
      const [call] = eventsOf(files.trace, 'model_call');
      expect(call).toMatchObject({ status: 500, retries: 4 });
      expect(call!.queuedMs).toBeLessThan(300);
      expect(server.unexpected).toEqual([]);
      expect(eventsOf(files.trace, 'agent_threw')[0]!.error.message).toMatch(/500/);
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});
