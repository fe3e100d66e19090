/**
 * The built-in agents and a module agent through the built CLI: the shell's base URL and key are
 * the gateway's upstream (the agent gets a token), --max-turns and --provider too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readRunFiles, tempDir } from '../helpers.js';
import { runSilo } from '../cli/silo.js';
import { anthropicReply, openaiReply, scriptedServer } from './model-server.js';

const out = tempDir('silo-agents-cli-');
afterAll(() => out.remove());

describe('silo run --agent openai:<model>', () => {
  it("sends the agent's requests to the shell's OPENAI_BASE_URL with its OPENAI_API_KEY, and --max-turns", async () => {
    const server = await scriptedServer([
      () => openaiReply({ toolCalls: [{ id: 'c1', name: 'update_ticket', args: { ticket_id: 't3', status: 'closed' } }], usage: { prompt: 12, completion: 3 } }),
      () => openaiReply({ toolCalls: [{ id: 'c2', name: 'get_ticket', args: { ticket_id: 't3' } }], usage: { prompt: 20, completion: 4 } }),
    ]);
    try {
      const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', 'openai:my-model', '--task', 'helpdesk/close-ticket', '--max-turns', '2', '--json', '--out', out.dir], {
        OPENAI_BASE_URL: `${server.origin}/v1`,
        OPENAI_API_KEY: 'sk-from-shell',
      });
      expect(r.stderr).toBe('');
      const [row] = JSON.parse(r.stdout) as { runDir: string; termination: string }[];
      // Two turns, both with tool calls: no final answer, but the world was changed and is graded.
      expect(row!.termination).toBe('threw');
      expect(server.requests).toHaveLength(2);
      expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-from-shell');
      expect(server.requests[0]!.body.model).toBe('my-model');
      const files = readRunFiles(row!.runDir);
      expect(files.run.agent).toBe('openai:my-model');
      expect(files.run.usage).toEqual({ inputTokens: 32, outputTokens: 7, requests: 2, source: 'gateway' });
      expect(files.result.checks.find((c) => c.name === 't3 is closed')?.pass).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe('silo eval --agent anthropic:<model>', () => {
  it('runs every trial against the model server and records the built-in agent in the summary', async () => {
    const server = await scriptedServer(Array.from({ length: 2 }, () => () => anthropicReply({ text: '4', usage: { input: 9, output: 1 } })));
    try {
      const r = await runSilo(
        ['eval', 'fixtures/helpdesk/tasks.ts', '--agent', 'anthropic:my-model', '--task', 'helpdesk/count-open-for-user', '--trials', '2', '--reporter', 'json', '--out', out.dir],
        { ANTHROPIC_BASE_URL: server.origin, ANTHROPIC_API_KEY: 'ak-test' },
      );
      const summary = JSON.parse(r.stdout) as { agent: string; options: { env?: string[] }; totals: { runs: number; usage?: unknown }; tasks: { usage?: unknown }[] };
      expect(summary.agent).toBe('anthropic:my-model');
      // The agent was handed no variable of the shell: the key stays in the gateway.
      expect(summary.options.env).toBeUndefined();
      expect(r.stdout).not.toContain('ak-test');
      expect(summary.totals.runs).toBe(2);
      expect(summary.totals.usage).toEqual({ inputTokens: 18, outputTokens: 2, requests: 2 });
      expect(summary.tasks[0]!.usage).toEqual({ inputTokens: 18, outputTokens: 2, requests: 2 });
      expect(server.requests).toHaveLength(2);
      expect(server.requests.every((q) => q.body.model === 'my-model' && q.headers['x-api-key'] === 'ak-test')).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe('--help', () => {
  it.each(['run', 'eval'])('silo %s --help names the built-in agents, --env and --max-turns', async (command) => {
    const r = await runSilo([command, '--help']);
    expect(r.code).toBe(0);
    // Commander wraps help to the terminal width.
    expect(r.stdout).toMatch(/openai:<model>\s+or\s+anthropic:<model>/);
    expect(r.stdout).toMatch(/-e, --env <name> +pass\s+this\s+variable\s+from\s+the\s+shell\s+into\s+the\s+agent\s+as\s+it\s+is/);
    expect(r.stdout).toMatch(/--provider <name> +let the agent reach this provider's models\s+through\s+Silo's\s+gateway/);
    expect(r.stdout).toMatch(/--max-model-requests <n>/);
    expect(r.stdout).toMatch(/--model-cache <dir>/);
    expect(r.stdout).toMatch(/--max-turns <n> +model\s+requests\s+a\s+built-in\s+agent\s+makes\s+before\s+giving\s+up/);
  });

  it('silo serve --help says what the client gets and how the rollout ends', async () => {
    const r = await runSilo(['serve', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--http <port> +serve streamable HTTP on\s+127\.0\.0\.1:<port>\/mcp/);
    expect(r.stdout).toMatch(/finish\(\{ output \}\)/);
    expect(r.stdout).toMatch(/Exit codes: 0 passed, 1 failed or error, 2 usage or set-up error, 130 cancelled/);
  });
});
