/**
 * The LLM user against a scripted upstream on 127.0.0.1, with the built-in agents conversing
 * through the gateway (workers run the built code: `npm run build` first): the simulator's
 * prompt, the roles turned round, stop tokens, retries, a user whose calls fail (user_error),
 * and the user's usage kept apart from the agent's.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadTasks, runRollout, type Task } from '../../src/index.js';
import { eventsOf, readRunFiles, tempDir } from '../helpers.js';
import { anthropicReply, errorReply, openaiReply, scriptedServer, type RecordedRequest } from '../agents/model-server.js';
import { gatewayFor } from '../gateway/helpers.js';
import { parseUserModel } from '../../src/user/model-user.js';
import { AGENT_GREETING, userPrompt } from '../../src/user/prompt.js';

const out = tempDir('silo-model-user-');
afterAll(() => out.remove());

const chat = await loadTasks(['fixtures/helpdesk-chat/tasks.ts']);
const closeTicket = chat.find((t) => t.task.id === 'helpdesk-chat/close-ticket')!.task;

/** Whether a request is the simulated user's (its system prompt is the simulator's). */
const fromUser = (req: RecordedRequest): boolean => JSON.stringify(req.body).includes('role-playing a customer');

describe('the LLM user', () => {
  it('converses with openai:<model> through the gateway: the simulator prompt, roles turned round, ###STOP###, usage apart', async () => {
    const server = await scriptedServer([
      // The user's opening line (the host asks before the agent starts).
      () => openaiReply({ content: 'Hi, one of my tickets can be closed.', usage: { prompt: 50, completion: 8 } }),
      // The agent asks.
      () => openaiReply({ content: 'Which ticket is it?', usage: { prompt: 100, completion: 5 } }),
      // The user answers: only what was asked.
      () => openaiReply({ content: 'It is t3.', usage: { prompt: 60, completion: 4 } }),
      () => openaiReply({ toolCalls: [{ id: 'c1', name: 'update_ticket', args: { ticket_id: 't3', status: 'closed' } }], usage: { prompt: 120, completion: 10 } }),
      () => openaiReply({ content: 'Done: ticket t3 is closed.', usage: { prompt: 140, completion: 7 } }),
      () => errorReply(503, { 'retry-after-ms': '1' }),
      () => openaiReply({ content: '###STOP###', usage: { prompt: 70, completion: 2 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: closeTicket, agent: 'openai:agent-model', user: 'openai:user-model', gateway, outDir: out.dir });
      expect(r.status, JSON.stringify(r)).toBe('passed');
      expect(r.output).toBe('Done: ticket t3 is closed.');
      expect(server.unexpected).toEqual([]);
      const [opening, ask, answer, , , , stop] = server.requests;
      // The user's model: the simulator prompt with the brief, then the agent's greeting.
      expect(opening!.body.model).toBe('user-model');
      expect(opening!.body.messages).toEqual([
        { role: 'system', content: userPrompt(closeTicket.user!.instruction) },
        { role: 'user', content: AGENT_GREETING },
      ]);
      expect(opening!.body.messages[0].content).toContain('Tomás Herrera');
      for (const token of ['###STOP###', '###TRANSFER###', '###OUT-OF-SCOPE###']) expect(opening!.body.messages[0].content).toContain(token);
      // The agent's model: the conversation prompt, the opening line as its instruction.
      expect(ask!.body.model).toBe('agent-model');
      expect(ask!.body.messages[1]).toEqual({ role: 'user', content: 'Hi, one of my tickets can be closed.' });
      expect(ask!.body.messages[0].content).toMatch(/sent to the user/);
      // The user sees the agent's messages as its user turns, its own as the assistant's.
      expect(answer!.body.messages.slice(1)).toEqual([
        { role: 'user', content: AGENT_GREETING },
        { role: 'assistant', content: 'Hi, one of my tickets can be closed.' },
        { role: 'user', content: 'Which ticket is it?' },
      ]);
      expect(stop!.body.messages.at(-1)).toEqual({ role: 'user', content: 'Done: ticket t3 is closed.' });
      expect(server.requests.filter(fromUser)).toHaveLength(4);

      const files = readRunFiles(r.runDir);
      expect(files.run.user).toEqual({ mode: 'model', model: 'openai:user-model', messages: 5, endedBy: 'user' });
      expect(files.run.usage).toMatchObject({ inputTokens: 360, outputTokens: 22, requests: 3, source: 'gateway' });
      expect(files.run.userUsage).toEqual({ inputTokens: 180, outputTokens: 14, requests: 3 });
      expect(r.usage).toEqual({ inputTokens: 360, outputTokens: 22, requests: 3 });
      expect(r.userUsage).toEqual({ inputTokens: 180, outputTokens: 14, requests: 3 });
      const calls = eventsOf(files.trace, 'model_call');
      expect(calls.map((c) => c.actor ?? 'agent')).toEqual(['user', 'agent', 'user', 'agent', 'agent', 'user']);
      expect(calls.at(-1)).toMatchObject({ actor: 'user', retries: 1 });
      expect(files.models.filter((l) => l.actor === 'user')).toHaveLength(3);
      expect(eventsOf(files.trace, 'user_message').map((m) => m.from)).toEqual(['user', 'agent', 'user', 'agent', 'user']);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('anthropic:<model> as the user: the system prompt apart, max_tokens set, its text taken', async () => {
    const server = await scriptedServer([
      () => anthropicReply({ text: 'Hello, I need a ticket closed.', usage: { input: 40, output: 7 } }),
      () => openaiReply({ content: 'Which one?', usage: { prompt: 10, completion: 2 } }),
      () => anthropicReply({ text: 'Sorry, gotta go. ###STOP###', usage: { input: 50, output: 5 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const task: Task = { ...closeTicket, user: { ...closeTicket.user!, script: undefined as never, model: 'anthropic:claude-user' } };
      delete (task.user as { script?: unknown }).script;
      const r = await runRollout({ task, agent: 'openai:agent-model', gateway, outDir: out.dir });
      expect(r.status).toBe('failed');
      expect(r.output).toBe('Which one?');
      const first = server.requests[0]!;
      expect(first.path).toBe('/v1/messages');
      expect(first.body).toMatchObject({ model: 'claude-user', system: userPrompt(closeTicket.user!.instruction), messages: [{ role: 'user', content: AGENT_GREETING }] });
      expect(first.body.max_tokens).toBeGreaterThan(0);
      expect(r.diagnosis.map((d) => d.code)).toContain('user_gave_up');
      expect(readRunFiles(r.runDir).run.userUsage).toEqual({ inputTokens: 90, outputTokens: 12, requests: 2 });
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('a user model that keeps failing after the gateway’s retries makes the run an error (user_error)', async () => {
    const server = await scriptedServer([
      () => openaiReply({ content: 'Hi, close my ticket please.', usage: { prompt: 5, completion: 5 } }),
      () => openaiReply({ content: 'Which one?', usage: { prompt: 5, completion: 5 } }),
      ...Array.from({ length: 3 }, () => () => errorReply(500)),
    ]);
    const gateway = gatewayFor(server, { retries: 2 });
    try {
      const r = await runRollout({ task: closeTicket, agent: 'openai:agent-model', user: 'openai:user-model', gateway, outDir: out.dir });
      expect(r.status).toBe('error');
      expect(r.error).toMatchObject({ code: 'user_error', message: expect.stringMatching(/user's model \(openai:user-model\) failed after 2 retries/) });
      expect(server.requests).toHaveLength(5);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('anthropic:<model> as the agent converses too: its text goes to the user, the answer comes back as a user turn', async () => {
    const server = await scriptedServer([
      () => openaiReply({ content: 'Hi, one of my tickets can be closed.', usage: { prompt: 5, completion: 5 } }),
      () => anthropicReply({ text: 'Which ticket?', usage: { input: 10, output: 3 } }),
      () => openaiReply({ content: 'Ticket t3.', usage: { prompt: 5, completion: 5 } }),
      () => anthropicReply({ toolUses: [{ id: 'tu1', name: 'update_ticket', input: { ticket_id: 't3', status: 'closed' } }], usage: { input: 20, output: 6 } }),
      () => anthropicReply({ text: 'Closed t3 for you.', usage: { input: 30, output: 5 } }),
      () => openaiReply({ content: '###STOP###', usage: { prompt: 5, completion: 1 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: closeTicket, agent: 'anthropic:claude-agent', user: 'openai:user-model', gateway, outDir: out.dir });
      expect(r.status, JSON.stringify(r.checks)).toBe('passed');
      expect(r.output).toBe('Closed t3 for you.');
      const second = server.requests[3]!.body;
      expect(second.system).toMatch(/sent to the user/);
      expect(second.messages).toEqual([
        { role: 'user', content: 'Hi, one of my tickets can be closed.' },
        { role: 'assistant', content: [{ type: 'text', text: 'Which ticket?' }] },
        { role: 'user', content: 'Ticket t3.' },
      ]);
      expect(r.usage).toEqual({ inputTokens: 60, outputTokens: 14, requests: 3 });
      expect(r.userUsage).toEqual({ inputTokens: 15, outputTokens: 11, requests: 3 });
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('--user takes provider:model and says what it expects otherwise', () => {
    expect(parseUserModel('anthropic:claude-x')).toEqual({ provider: 'anthropic', model: 'claude-x' });
    expect(() => parseUserModel('gpt-4o')).toThrow(/--user takes provider:model, e.g. openai:gpt-4o-mini/);
    expect(() => parseUserModel('openai:')).toThrow(/provider:model/);
  });
});
