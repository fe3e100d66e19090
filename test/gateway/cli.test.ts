/**
 * The gateway through the built CLI, as a user runs it: an LLM agent module granted
 * `--provider openai` with the key in the shell only, `--no-network`, `--max-model-requests`,
 * `--model-cache` replaying an eval, `silo show` of the model calls, and the usage errors.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRunFiles, tempDir } from '../helpers.js';
import { runSilo } from '../cli/silo.js';
import { openaiReply, scriptedServer, type RecordedRequest, type Reply } from '../agents/model-server.js';

const out = tempDir('silo-gw-cli-');
afterAll(() => out.remove());

const AGENT = 'fixtures/agents/llm/openai-chat.mjs';

/** A model that closes the ticket its instruction names, then says so: the same answer for the same request. */
function closer(req: RecordedRequest): Reply {
  const messages = req.body.messages as { role: string; content: string }[];
  if (messages.at(-1)!.role === 'user') return openaiReply({ toolCalls: [{ id: 'c1', name: 'update_ticket', args: { ticket_id: 't3', status: 'closed' } }], usage: { prompt: 100, completion: 10 } });
  return openaiReply({ content: 'Closed t3.', usage: { prompt: 130, completion: 4 } });
}

const namespaces = process.platform === 'linux' && spawnSync('unshare', ['--user', '--map-root-user', '--net', 'true']).status === 0;

describe('silo run --provider openai', () => {
  it.each([[[] as string[]], ...(namespaces ? [[['--no-network']]] : [])])(
    'runs an LLM agent module through the gateway with the shell’s key only %j',
    async (extra) => {
      const server = await scriptedServer(Array.from({ length: 2 }, () => closer));
      try {
        const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', AGENT, '--provider', 'openai', '--task', 'helpdesk/close-ticket', '--json', '--out', out.dir, ...extra], {
          OPENAI_BASE_URL: `${server.origin}/v1`,
          OPENAI_API_KEY: 'sk-host-only',
        });
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const [row] = JSON.parse(r.stdout) as { runDir: string; status: string }[];
        expect(row!.status).toBe('passed');
        expect(server.requests.map((q) => q.headers.authorization)).toEqual(['Bearer sk-host-only', 'Bearer sk-host-only']);
        const files = readRunFiles(row!.runDir);
        expect(files.run.usage).toEqual({ inputTokens: 230, outputTokens: 14, requests: 2, source: 'gateway' });
        expect(readFileSync(join(row!.runDir, 'trace.jsonl'), 'utf8')).not.toContain('sk-host-only');
        expect(readFileSync(join(row!.runDir, 'models.jsonl'), 'utf8')).not.toContain('sk-host-only');

        const shown = await runSilo(['show', row!.runDir]);
        expect(shown.stdout).toMatch(/model gpt-test openai chat\/completions #1 → 200 100 in \/ 10 out/);
        expect(shown.stdout).toMatch(/^model {7}2 requests · 230 input tokens · 14 output tokens \(measured by the gateway\)$/m);
        expect(shown.stdout).toMatch(/Conversation[^\n]*\n {2}\[user\] The monitor requested in ticket t3[^\n]*\n {2}\[model #1\] → update_ticket\(\{"ticket_id":"t3","status":"closed"\}\)\n {2}\[tool\] /);
      } finally {
        await server.close();
      }
    },
    // Two commands (run, then show) of the built CLI, each a process of its own.
    90_000,
  );

  it('ends a greedy agent at --max-model-requests as model_limit', async () => {
    const server = await scriptedServer(Array.from({ length: 2 }, () => () => openaiReply({ content: 'more', usage: { prompt: 1, completion: 1 } })));
    try {
      const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', 'fixtures/agents/hostile/greedy.mjs', '--provider', 'openai', '--max-model-requests', '2', '--task', 'helpdesk/close-ticket', '--json', '--out', out.dir], {
        OPENAI_BASE_URL: `${server.origin}/v1`,
        OPENAI_API_KEY: 'sk-host-only',
      });
      expect(r.code).toBe(1);
      const [row] = JSON.parse(r.stdout) as { termination: string; runDir: string }[];
      expect(row!.termination).toBe('model_limit');
      expect(server.requests).toHaveLength(2);
      expect(readRunFiles(row!.runDir).run.limits).toMatchObject({ maxModelRequests: 2 });
    } finally {
      await server.close();
    }
  }, 60_000);

  it("says which runs the agent's model failed, and why, without counting them against the agent", async () => {
    const refused = (): Reply => ({ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } });
    const server = await scriptedServer(Array.from({ length: 2 }, () => refused));
    let evalId = '';
    try {
      const r = await runSilo(
        ['eval', 'fixtures/helpdesk/tasks.ts', '--agent', AGENT, '--provider', 'openai', '--task', 'helpdesk/close-ticket', '--trials', '2', '--out', out.dir],
        { OPENAI_BASE_URL: `${server.origin}/v1`, OPENAI_API_KEY: 'sk-wrong' },
      );
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/2 runs · 0 passed · 0 failed · 2 errors/);
      expect(r.stderr).toContain(
        "silo: 2 runs ended in error (model_error), the first because the agent's model could not answer: the openai upstream answered 401 (Incorrect API key provided): check OPENAI_API_KEY on this machine\n",
      );
      evalId = /eval ([0-9A-Z]{26})/.exec(r.stdout)![1]!;
      expect(r.stderr).toContain(`→ silo eval --resume ${evalId} --out ${out.dir}   (runs the 2 runs again, once that is fixed)\n`);
      // Graded again, they still fail: still the provider's doing.
      const regraded = await runSilo(['regrade', evalId, '--out', out.dir, '--json']);
      expect(JSON.parse(regraded.stdout)).toMatchObject({ runs: 2, changed: [], refused: [] });
    } finally {
      await server.close();
    }
    // The key fixed, a resume runs them again.
    const good = await scriptedServer(Array.from({ length: 4 }, () => closer));
    try {
      const resumed = await runSilo(['eval', '--resume', evalId, '--out', out.dir, '--reporter', 'json'], { OPENAI_BASE_URL: `${good.origin}/v1`, OPENAI_API_KEY: 'sk-right' });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'completed', totals: { passed: 2, failed: 0, errors: 0 } });
      // The runs it replaced are retries now, for what silo eval says after it too.
      expect(resumed.stderr).not.toContain('model_error');
    } finally {
      await good.close();
    }
  }, 90_000);

  it('says once when the shell has no key for a granted provider', async () => {
    const server = await scriptedServer(Array.from({ length: 2 }, () => closer));
    try {
      const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', AGENT, '--provider', 'openai', '--task', 'helpdesk/close-ticket', '--out', out.dir], {
        OPENAI_BASE_URL: `${server.origin}/v1`,
      });
      expect(r.code).toBe(0);
      expect(r.stderr).toBe(`silo: OPENAI_API_KEY is not set here, so openai requests go to ${server.origin}/v1 without a key (a local server may need none; otherwise set OPENAI_API_KEY in this shell)\n`);
      expect(server.requests.map((q) => q.headers.authorization)).toEqual([undefined, undefined]);
    } finally {
      await server.close();
    }
  }, 60_000);

  it.each([
    [['--provider', 'nope'], /--provider <name>.*expected openai or anthropic, got 'nope'/],
    [['--provider', 'openai', '--model-cache', 'no/such/folder', '--model-cache-mode', 'read'], /the model cache \/\S*no\/such\/folder is not a folder: mode read replays a cache written before/],
    [['--model-cache', 'x'], /--model-cache apply to model calls through the gateway; grant the agent a provider with --provider/],
    [['--provider', 'openai', '--env', 'OPENAI_API_KEY'], /env OPENAI_API_KEY would sit next to the gateway's .*drop it/],
    [['--model-cache-mode', 'sometimes', '--provider', 'openai'], /expected read, write, readwrite, got 'sometimes'/],
  ])('exits 2 with one line for %j', async (flags, message) => {
    const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', AGENT, '--task', 'helpdesk/close-ticket', '--out', out.dir, ...flags], { OPENAI_API_KEY: 'sk-x' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('silo eval --model-cache', () => {
  it('replays a rerun with no upstream request and the same results, run by run', async () => {
    const server = await scriptedServer(Array.from({ length: 40 }, () => closer));
    const cache = join(out.dir, 'model-cache');
    const evalOnce = async (): Promise<{ summary: any; runs: { taskId: string; trial: number; status: string; runId: string }[] }> => {
      const r = await runSilo(
        ['eval', 'fixtures/helpdesk/tasks.ts', '--agent', AGENT, '--provider', 'openai', '--task', 'helpdesk/close-ticket', '--trials', '3', '--model-cache', cache, '--reporter', 'json', '--out', out.dir],
        { OPENAI_BASE_URL: `${server.origin}/v1`, OPENAI_API_KEY: 'sk-host-only' },
      );
      expect(r.code, r.stderr).toBe(0);
      const summary = JSON.parse(r.stdout);
      const runs = readFileSync(join(out.dir, 'evals', summary.evalId, 'runs.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      return { summary, runs };
    };
    try {
      const first = await evalOnce();
      expect(server.requests).toHaveLength(6);
      expect(first.summary.totals.usage).toEqual({ inputTokens: 690, outputTokens: 42, requests: 6 });
      const second = await evalOnce();
      // Nothing went upstream the second time, and every run came out the same.
      expect(server.requests).toHaveLength(6);
      const key = (r: { taskId: string; trial: number; status: string }) => `${r.taskId}#${r.trial}:${r.status}`;
      expect(second.runs.map(key).sort()).toEqual(first.runs.map(key).sort());
      expect(second.summary.totals).toMatchObject({ passed: 3, usage: { inputTokens: 690, outputTokens: 42, requests: 6 } });
      for (const run of second.runs) {
        const files = readRunFiles(join(out.dir, 'runs', run.runId));
        expect(files.result.output).toBe('Closed t3.');
        expect(files.run.usage).toEqual({ inputTokens: 230, outputTokens: 14, requests: 2, source: 'gateway', cachedRequests: 2 });
      }
    } finally {
      await server.close();
    }
    // Two evals of three rollouts, through the built CLI.
  }, 120_000);
});
