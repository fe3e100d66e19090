/**
 * The conversation flags of `silo run` and `silo eval` through the built binary (`npm run build`
 * first): scripted users by default, `--solo`, `--user` and `--solo` refused together, the solo
 * note for users with neither script nor model, `silo show` rendering the dialogue.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runSilo } from './silo.js';
import { tempDir } from '../helpers.js';

const out = tempDir('silo-cli-conversation-');
afterAll(() => out.remove());

const CHAT = 'fixtures/helpdesk-chat';
const ASKS = 'fixtures/agents/chat/asks-first.ts';

describe('silo and conversations', () => {
  it('eval runs the scripted users: the agent that asks first passes all three; show renders the dialogue', async () => {
    const ran = await runSilo(['eval', CHAT, '--agent', ASKS, '--isolation', 'thread', '--reporter', 'json', '--out', out.dir]);
    expect(ran.code, ran.stderr).toBe(0);
    const summary = JSON.parse(ran.stdout);
    expect(summary.totals).toMatchObject({ runs: 3, passed: 3 });
    expect(ran.stderr).not.toMatch(/run solo/);

    const json = await runSilo(['run', `${CHAT}/tasks.ts`, '--agent', ASKS, '--task', 'helpdesk-chat/close-ticket', '--isolation', 'thread', '--json', '--out', out.dir]);
    const [row] = JSON.parse(json.stdout);
    const shown = await runSilo(['show', row.runDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/user {8}scripted user · 7 messages · ended by the user · replies took /);
    expect(shown.stdout).toMatch(/user {2}› Hi, this is Tomás from sales\. One of my tickets can be closed now\./);
    expect(shown.stdout).toMatch(/agent › Happy to help\. Could you tell me the ticket for this\?/);
    expect(shown.stdout).toMatch(/user {2}› Great, thank you\. That is all I needed\. ###STOP### {2}\(the user ended the conversation\)/);
  });

  it('--solo runs the tasks without their users: the conversing agent has nobody to ask and fails', async () => {
    const ran = await runSilo(['run', `${CHAT}/tasks.ts`, '--agent', ASKS, '--solo', '--isolation', 'thread', '--json', '--out', out.dir]);
    expect(ran.code).toBe(1);
    const rows = JSON.parse(ran.stdout) as { status: string }[];
    expect(rows.map((r) => r.status)).toEqual(['failed', 'failed', 'failed']);
  });

  it('--user and --solo together is a usage error; a malformed --user says what it takes', async () => {
    const both = await runSilo(['eval', CHAT, '--agent', ASKS, '--user', 'openai:m', '--solo', '--out', out.dir]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--user and --solo contradict each other/);
    const bad = await runSilo(['run', `${CHAT}/tasks.ts`, '--agent', ASKS, '--user', 'gpt-4o', '--out', out.dir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--user takes provider:model, e\.g\. openai:gpt-4o-mini/);
  });

  it('tasks whose user has neither script nor model run solo, and the eval says so once', async () => {
    const file = join(out.dir, 'tasks.ts');
    writeFileSync(
      file,
      `import { defineTask } from '${resolve('src/define.ts')}';
import { helpdesk } from '${resolve('fixtures/helpdesk/environment.ts')}';
export default [1, 2].map((i) => defineTask({ id: 'solo/' + i, environment: helpdesk, instruction: 'say hi', user: { instruction: 'a user' }, verify: () => [{ name: 'ok', pass: true }] }));
`,
    );
    const ran = await runSilo(['eval', file, '--agent', 'fixtures/agents/do-nothing.ts', '--isolation', 'thread', '--reporter', 'json', '--out', out.dir]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr.match(/2 tasks have users with neither a script nor a model: run solo/g)).toHaveLength(1);
  });

  it('--user (or --solo) on tasks that have no user says once that it changes nothing', async () => {
    const run = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', 'fixtures/agents/helpdesk-solver.ts', '--task', 'helpdesk/close-ticket', '--user', 'openai:x', '--isolation', 'thread', '--out', out.dir], { OPENAI_API_KEY: 'sk-unused' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('note: the task has no user, so --user openai:x changes nothing (it is for tasks that declare a simulated user)\n');
    const evaluated = await runSilo(['eval', 'fixtures/helpdesk', '--agent', 'fixtures/agents/helpdesk-solver.ts', '--trials', '2', '--solo', '--isolation', 'thread', '--reporter', 'json', '--out', out.dir]);
    expect(evaluated.code, evaluated.stderr).toBe(0);
    expect(evaluated.stderr.match(/^note: none of the 6 tasks has a user, so --solo changes nothing/gm)).toHaveLength(1);
    // Where a task has a user, --user is no note.
    const chat = await runSilo(['run', `${CHAT}/tasks.ts`, '--agent', ASKS, '--task', 'helpdesk-chat/close-ticket', '--solo', '--isolation', 'thread', '--out', out.dir]);
    expect(chat.stderr).not.toMatch(/changes nothing/);
  });
});
