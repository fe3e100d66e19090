/**
 * Rollouts whose agents reach their models through the gateway: module agents on the official
 * SDKs granted a provider with no `--env`, the key that never reaches them, usage the agent cannot
 * fake, tokens that end with their rollout, the model budget, streams relayed as they come, and
 * `--no-network`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { defineTool, loadTasks, runRollout, type Task } from '../../src/index.js';
import { AgentPool } from '../../src/pool/pool.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { eventsOf, readRunFiles, tempDir, testWorld, type TestState } from '../helpers.js';
import { anthropicReply, anthropicStream, openaiReply, openaiStream, responsesReply, responsesStream, scriptedServer, type RecordedRequest } from '../agents/model-server.js';
import { gate, gatewayFor } from './helpers.js';
import { spawnSync } from 'node:child_process';

const out = tempDir('silo-gw-rollout-');
afterAll(() => out.remove());

const helpdesk = await loadTasks(['fixtures/helpdesk/tasks.ts']);
const task = (id: string): Task => helpdesk.find((t) => t.task.id === `helpdesk/${id}`)!.task;
const LLM = 'fixtures/agents/llm';
const HOSTILE = 'fixtures/agents/hostile';

/** The content of the tool message answering `callId` in a Chat Completions request. */
function toolMessage(req: RecordedRequest, callId: string): string {
  return (req.body.messages as { role: string; tool_call_id?: string; content: string }[]).find((m) => m.role === 'tool' && m.tool_call_id === callId)!.content;
}

describe('an agent on the openai SDK granted --provider openai', () => {
  it('passes a task through the upstream with the host key; run.json usage is the upstream’s counts; models.jsonl has the conversation', async () => {
    const server = await scriptedServer([
      () => openaiReply({ toolCalls: [{ id: 'c1', name: 'update_ticket', args: { ticket_id: 't3', status: 'closed' } }], usage: { prompt: 120, completion: 12 } }),
      (req) => {
        if (!toolMessage(req, 'c1').includes('"ok":true')) throw new Error('the tool result did not reach the model');
        return openaiReply({ content: 'Closed t3.', usage: { prompt: 150, completion: 5 } });
      },
    ]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: task('close-ticket'), agent: `${LLM}/openai-chat.mjs`, providers: ['openai'], gateway, outDir: out.dir });
      expect(r.status, JSON.stringify(r)).toBe('passed');
      expect(r.output).toBe('Closed t3.');
      expect(server.requests.map((q) => q.headers.authorization)).toEqual(['Bearer sk-real', 'Bearer sk-real']);
      const files = readRunFiles(r.runDir);
      expect(files.run.providers).toEqual(['openai']);
      expect(files.run.usage).toEqual({ inputTokens: 270, outputTokens: 17, requests: 2, source: 'gateway' });
      expect(r.usage).toEqual({ inputTokens: 270, outputTokens: 17, requests: 2 });
      const calls = eventsOf(files.trace, 'model_call');
      expect(calls.map((c) => [c.requestId, c.status, c.usage.inputTokens])).toEqual([
        [1, 200, 120],
        [2, 200, 150],
      ]);
      // The model calls sit around the tool call in the timeline.
      const toolCall = eventsOf(files.trace, 'tool_call')[0]!;
      expect(calls[0]!.seq).toBeLessThan(toolCall.seq);
      expect(calls[1]!.seq).toBeGreaterThan(toolCall.seq);
      expect(files.models.map((m) => m.request.messages.length)).toEqual([1, 3]);
      expect(files.models[1].response.choices[0].message.content).toBe('Closed t3.');
      expect(gateway.sessions).toBe(0);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it("measures usage whatever the agent reports, keeps the report apart, and refuses the agent's token once the rollout is over", async () => {
    const server = await scriptedServer([() => openaiReply({ content: 'hello', usage: { prompt: 500, completion: 50 } })]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: testWorld().task, agent: `${HOSTILE}/lies-about-usage.mjs`, providers: ['openai'], gateway, outDir: out.dir });
      const files = readRunFiles(r.runDir);
      expect(files.run.usage).toEqual({ inputTokens: 500, outputTokens: 50, requests: 1, source: 'gateway' });
      expect(files.run.reportedUsage).toEqual({ inputTokens: 1, outputTokens: 1, requests: 1 });
      const kept = JSON.parse(r.output!) as { baseURL: string; token: string };
      expect(kept.token).toMatch(/^silo-/);
      const late = await fetch(`${kept.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${kept.token}` }, body: '{}' });
      expect(late.status).toBe(401);
      expect(server.requests).toHaveLength(1);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('never holds the key: its whole environment and every string reachable from its globals hold only the token', async () => {
    const server = await scriptedServer([]);
    const gateway = gatewayFor(server, { upstreams: { openai: { baseUrl: `${server.origin}/v1`, apiKey: 'sk-the-real-secret-key' } } });
    try {
      const r = await runRollout({ task: testWorld().task, agent: `${HOSTILE}/dumps-secrets.mjs`, providers: ['openai'], gateway, outDir: out.dir });
      expect(r.termination).toBe('returned');
      expect(r.output).not.toContain('sk-the-real-secret-key');
      expect(r.output).not.toContain(server.origin);
      const found = JSON.parse(r.output!) as { env: Record<string, string>; clientKey: string; strings: string[] };
      expect(Object.keys(found.env).sort()).toEqual(['OPENAI_API_KEY', 'OPENAI_BASE_URL']);
      expect(found.env.OPENAI_BASE_URL).toBe(`${gateway.origin}/openai/v1`);
      expect(found.clientKey).toBe(found.env.OPENAI_API_KEY);
      expect(found.strings.length).toBeGreaterThan(100);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('streams: the agent reads the first chunk before the upstream sends the last, and gets no usage chunk it did not ask for', async () => {
    const g = gate();
    const server = await scriptedServer([(req) => openaiStream(req, { pieces: ['Hel', 'lo', '!'], usage: { prompt: 30, completion: 3 }, gate: g.wait })]);
    const gateway = gatewayFor(server);
    const release = defineTool({
      name: 'release',
      description: 'Lets the upstream send the rest of its stream.',
      inputSchema: { type: 'object', properties: {} } as const,
      run: () => {
        g.release();
        return 'released';
      },
    });
    try {
      const world = testWorld({ tools: [release as never] });
      const r = await runRollout({ task: world.task, agent: `${LLM}/openai-stream.mjs`, providers: ['openai'], gateway, outDir: out.dir, limits: { timeoutMs: 30_000 } });
      expect(r.termination).toBe('returned');
      expect(JSON.parse(r.output!)).toEqual({ text: 'Hello!', chunks: 5, sawUsage: false });
      expect(eventsOf(readRunFiles(r.runDir).trace, 'tool_call').map((c) => c.name)).toEqual(['release']);
      expect(readRunFiles(r.runDir).run.usage).toMatchObject({ inputTokens: 30, outputTokens: 3, requests: 1 });
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('uses the Responses API, plain and streamed', async () => {
    const server = await scriptedServer([() => responsesReply({ text: 'plain', usage: { input: 10, output: 1 } }), () => responsesStream({ pieces: ['str', 'eamed'], usage: { input: 11, output: 2 } })]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: testWorld().task, agent: `${LLM}/openai-responses.mjs`, providers: ['openai'], gateway, outDir: out.dir });
      expect(JSON.parse(r.output!)).toEqual({ text: 'plain', streamed: 'streamed' });
      expect(readRunFiles(r.runDir).run.usage).toEqual({ inputTokens: 21, outputTokens: 3, requests: 2, source: 'gateway' });
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe('an agent on @anthropic-ai/sdk granted --provider anthropic', () => {
  it('uses tools and streams through the gateway with the host key', async () => {
    const server = await scriptedServer([
      () => anthropicReply({ toolUses: [{ id: 'u1', name: 'increment', input: {} }], usage: { input: 40, output: 8 } }),
      () => anthropicReply({ text: 'counted', usage: { input: 60, output: 2 } }),
      () => anthropicStream({ pieces: ['stre', 'am'], usage: { input: 9, output: 4 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const world = testWorld();
      const r = await runRollout({ task: world.task, agent: `${LLM}/anthropic-messages.mjs`, providers: ['anthropic'], gateway, outDir: out.dir });
      expect(JSON.parse(r.output!)).toEqual({ answer: 'counted', streamed: 'stream' });
      expect(world.final?.count).toBe(1);
      expect(server.requests.map((q) => q.headers['x-api-key'])).toEqual(['ak-real', 'ak-real', 'ak-real']);
      expect(readRunFiles(r.runDir).run.usage).toEqual({ inputTokens: 109, outputTokens: 14, requests: 3, source: 'gateway' });
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe('the model budget', () => {
  it('ends an agent that ignores refusals as model_limit after maxModelRequests', async () => {
    const server = await scriptedServer(Array.from({ length: 3 }, () => () => openaiReply({ content: 'ok', usage: { prompt: 2, completion: 1 } })));
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: testWorld().task, agent: `${HOSTILE}/greedy.mjs`, providers: ['openai'], gateway, limits: { maxModelRequests: 3, graceMs: 300, timeoutMs: 20_000 }, outDir: out.dir });
      expect(r.termination).toBe('model_limit');
      expect(server.requests).toHaveLength(3);
      const files = readRunFiles(r.runDir);
      expect(eventsOf(files.trace, 'limit_exceeded')).toEqual([expect.objectContaining({ limit: 'maxModelRequests' })]);
      expect(files.run.usage).toMatchObject({ inputTokens: 6, outputTokens: 3, requests: 3, source: 'gateway' });
      expect(files.run.usage!.refusedRequests).toBeGreaterThanOrEqual(1);
      expect(files.result.diagnosis.map((d) => d.code)).toContain('model_limit');
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe("the provider's failures", () => {
  it('make a run that did not pass an error (model_error) saying what to check, not a failure of the agent', async () => {
    const server = await scriptedServer([
      () => ({ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } }),
      () => ({ status: 500, body: { error: { message: 'boom' } } }),
      // The agent's own mistake stays a failure.
      () => ({ status: 400, body: { error: { message: "Invalid 'messages'" } } }),
    ]);
    const gateway = gatewayFor(server, { retries: 0 });
    try {
      const run = () => runRollout({ task: task('close-ticket'), agent: `${LLM}/openai-chat.mjs`, providers: ['openai'], gateway, outDir: out.dir });
      const refused = await run();
      expect([refused.status, refused.termination, refused.score]).toEqual(['error', 'threw', null]);
      expect(refused.error).toEqual({
        code: 'model_error',
        message: "the agent's model could not answer: the openai upstream answered 401 (Incorrect API key provided): check OPENAI_API_KEY on this machine",
      });
      expect(readRunFiles(refused.runDir).run.status).toBe('error');
      const failing = await run();
      expect(failing.error?.message).toBe("the agent's model could not answer: the openai upstream answered 500 (boom): the provider kept failing: try again later");
      const mistaken = await run();
      expect([mistaken.status, mistaken.termination, mistaken.error]).toEqual(['failed', 'threw', undefined]);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('leave a verifier that throws its verifier_error (so regrade can grade the run again)', async () => {
    const server = await scriptedServer([() => ({ status: 401, body: { error: { message: 'Incorrect API key provided' } } })]);
    const gateway = gatewayFor(server);
    try {
      const world = testWorld({ verify: () => { throw new Error('the verifier broke'); } });
      const r = await runRollout({ task: world.task, agent: `${LLM}/openai-chat.mjs`, providers: ['openai'], gateway, outDir: out.dir });
      expect([r.status, r.error?.code]).toEqual(['error', 'verifier_error']);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('leave a run passed when the gateway tried the failure away', async () => {
    // The gateway tries a 503 again: the agent never sees it, and the run passes.
    const server = await scriptedServer([
      () => ({ status: 503, body: { error: { message: 'overloaded' } } }),
      () => openaiReply({ toolCalls: [{ id: 'c1', name: 'update_ticket', args: { ticket_id: 't3', status: 'closed' } }], usage: { prompt: 1, completion: 1 } }),
      () => openaiReply({ content: 'Closed t3.', usage: { prompt: 1, completion: 1 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const r = await runRollout({ task: task('close-ticket'), agent: `${LLM}/openai-chat.mjs`, providers: ['openai'], gateway, outDir: out.dir });
      expect([r.status, r.error]).toEqual(['passed', undefined]);
      expect(eventsOf(readRunFiles(r.runDir).trace, 'model_call')[0]).toMatchObject({ status: 200, retries: 1 });
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe('reused workers', () => {
  it('give each rollout sharing a thread its own token', async () => {
    const server = await scriptedServer([]);
    const gateway = gatewayFor(server);
    const pool = new AgentPool({ maxThreads: 4, reuse: true });
    try {
      const runs = await Promise.all(
        Array.from({ length: 4 }, () => runRollout({ task: testWorld().task, agent: 'fixtures/agents/prints-env.mjs', providers: ['openai'], gateway, pool, outDir: out.dir })),
      );
      const tokens = runs.map((r) => (JSON.parse(r.output!) as Record<string, string>).OPENAI_API_KEY);
      expect(new Set(tokens).size).toBe(4);
      expect(tokens.every((t) => t?.startsWith('silo-'))).toBe(true);
    } finally {
      await pool.destroy();
      await gateway.close();
      await server.close();
    }
  });
});

const namespaces = process.platform === 'linux' && spawnSync('unshare', ['--user', '--map-root-user', '--net', 'true']).status === 0;

describe('--no-network', () => {
  it.runIf(namespaces)('lets the agent reach its model through the sandbox’s relay, and nothing else', async () => {
    const server = await scriptedServer([() => openaiReply({ content: 'through the relay', usage: { prompt: 3, completion: 3 } })]);
    const gateway = gatewayFor(server);
    const offline = new SandboxPool({ noNetwork: true });
    try {
      const world = testWorld();
      const r = await runRollout({
        task: world.task,
        agent: `${LLM}/offline.mjs`,
        agentOptions: { direct: `${server.origin}/v1/chat/completions` },
        providers: ['openai'],
        gateway,
        pool: offline,
        outDir: out.dir,
      });
      expect(r.termination, JSON.stringify(r)).toBe('returned');
      const result = JSON.parse(r.output!) as { model: string; direct: string };
      expect(result.model).toBe('through the relay');
      expect(result.direct).not.toBe('reached');
      expect(server.requests).toHaveLength(1);
      expect(readRunFiles(r.runDir).run.usage).toMatchObject({ requests: 1, inputTokens: 3 });
    } finally {
      await offline.destroy();
      await gateway.close();
      await server.close();
    }
  });
});

export type { TestState };
