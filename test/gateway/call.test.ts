/**
 * Model calls Silo makes on the host for another actor (the simulated user of conversations):
 * the gateway's upstream, cache and recording, kept apart from the agent's.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { HostModelClient } from '../../src/gateway/call.js';
import { ModelLog } from '../../src/gateway/record.js';
import { Trace } from '../../src/rollout/trace.js';
import { anthropicReply, errorReply, openaiReply, scriptedServer } from '../agents/model-server.js';
import { eventsOf, tempDir } from '../helpers.js';
import { gatewayFor, openSession, post } from './helpers.js';
import { readModelLines } from '../../src/inspect/conversation.js';

const out = tempDir('silo-call-');
afterAll(() => out.remove());

describe('HostModelClient', () => {
  it('calls the upstream with the host key, retried, recorded as the user, its usage apart from the agent’s', async () => {
    const server = await scriptedServer([
      () => errorReply(429, { 'retry-after-ms': '1' }),
      () => openaiReply({ content: 'I want a refund.', usage: { prompt: 30, completion: 6 } }),
      () => openaiReply({ content: 'agent answer', usage: { prompt: 3, completion: 1 } }),
      () => anthropicReply({ text: 'thanks', usage: { input: 9, output: 2 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const dir = join(out.dir, 'run');
      mkdirSync(dir);
      const s = await openSession(gateway, dir);
      const user = new HostModelClient(gateway, { actor: 'user', log: s.log, taskId: 'task/1', trial: 0 });
      const answer = await user.request('openai', 'chat/completions', { model: 'gpt-user', messages: [{ role: 'user', content: 'act as the user' }], stream: true });
      expect(answer.status).toBe(200);
      expect((answer.body as any).choices[0].message.content).toBe('I want a refund.');
      expect(answer.call).toMatchObject({ actor: 'user', retries: 1, stream: false, usage: { inputTokens: 30, outputTokens: 6 } });
      // The stream flag is dropped: the host wants the whole answer.
      expect(server.requests[1]!.body).not.toHaveProperty('stream');
      expect(server.requests[1]!.headers.authorization).toBe('Bearer sk-real');
      await post(s, '/chat/completions', { model: 'gpt-agent', messages: [] });
      await user.request('anthropic', 'messages', { model: 'claude-user', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
      expect(server.requests[3]!.headers['x-api-key']).toBe('ak-real');
      await s.session.close();
      await s.log.close();
      expect(s.log.usage('user')).toEqual({ inputTokens: 39, outputTokens: 8, requests: 2, cachedRequests: 0 });
      expect(s.log.usage('agent')).toEqual({ inputTokens: 3, outputTokens: 1, requests: 1, cachedRequests: 0 });
      const calls = eventsOf(s.trace.events, 'model_call');
      expect(calls.map((c) => c.actor ?? 'agent')).toEqual(['user', 'agent', 'user']);
      expect(readModelLines(join(dir, 'models.jsonl')).map((l) => l.actor)).toEqual(['user', 'agent', 'user']);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('replays from the model cache, keyed apart from the agent’s same request', async () => {
    const server = await scriptedServer(Array.from({ length: 3 }, (_, i) => () => openaiReply({ content: `answer ${i}`, usage: { prompt: 1, completion: 1 } })));
    const cache = join(out.dir, 'cache');
    const request = { model: 'm', messages: [{ role: 'user', content: 'same' }] };
    const once = async (): Promise<string[]> => {
      const gateway = gatewayFor(server, { cache: { dir: cache } });
      try {
        const log = new ModelLog(new Trace(null), null);
        const user = new HostModelClient(gateway, { actor: 'user', log, taskId: 't', trial: 1 });
        const s = await openSession(gateway, null, { taskId: 't', trial: 1 });
        const a = ((await user.request('openai', 'chat/completions', request)).body as any).choices[0].message.content;
        const b = ((await (await post(s, '/chat/completions', request)).json()) as any).choices[0].message.content;
        await s.session.close();
        return [a, b];
      } finally {
        await gateway.close();
      }
    };
    try {
      expect(await once()).toEqual(['answer 0', 'answer 1']);
      expect(await once()).toEqual(['answer 0', 'answer 1']);
      expect(server.requests).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});
