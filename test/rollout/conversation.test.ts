/**
 * Conversations end to end, through real rollouts (workers run the built code: `npm run build`
 * first): the helpdesk-chat fixture with an agent that asks before acting (passes), one that acts
 * first (fails: never_asked) and one that talks forever (fails at maxTurns: user_gave_up); what
 * the verifier gets; a user that fails; solo; the policy; and a hostile agent flooding the user.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { check, loadTasks, regrade, runRollout, type Message, type Task } from '../../src/index.js';
import { eventsOf, readRunFiles, tempDir } from '../helpers.js';
import { task as makeTask } from '../builders.js';

const out = tempDir('silo-conversation-');
afterAll(() => out.remove());

const chat = await loadTasks(['fixtures/helpdesk-chat/tasks.ts']);
const ECHO = 'fixtures/agents/chat/echo-user.mjs';

describe('helpdesk-chat', () => {
  it.each(chat.map((t) => t.task.id))('the agent that asks first passes %s, with the dialogue in the trace and run.json', async (id) => {
    const task = chat.find((t) => t.task.id === id)!.task;
    const r = await runRollout({ task, agent: 'fixtures/agents/chat/asks-first.ts', outDir: out.dir, isolation: 'thread' });
    expect(r.status, JSON.stringify(r.checks.filter((c) => !c.pass))).toBe('passed');
    const files = readRunFiles(r.runDir);
    const messages = eventsOf(files.trace, 'user_message');
    // Opening, at least two questions answered, the "done" message and the user's goodbye.
    expect(messages.length).toBeGreaterThanOrEqual(6);
    expect(messages[0]!.from).toBe('user');
    expect(messages.at(-1)).toMatchObject({ from: 'user', ended: 'user' });
    expect(files.run.user).toEqual({ mode: 'scripted', messages: messages.length, endedBy: 'user' });
    // The first write comes after the user's answers.
    const write = files.trace.find((e) => e.type === 'tool_call' && e.name !== 'search_users')!;
    expect(write.seq).toBeGreaterThan(messages[2]!.seq);
    expect(r.diagnosis.map((d) => d.code)).not.toContain('never_asked');
  });

  it.each(chat.map((t) => t.task.id))('the agent that acts before asking fails %s, diagnosed never_asked at its write', async (id) => {
    const task = chat.find((t) => t.task.id === id)!.task;
    const r = await runRollout({ task, agent: 'fixtures/agents/chat/acts-first.ts', outDir: out.dir, isolation: 'thread' });
    expect(r.status).toBe('failed');
    const finding = r.diagnosis.find((d) => d.code === 'never_asked');
    expect(finding?.message).toMatch(/before the user had answered anything/);
    expect(finding?.at).toMatch(/^call #\d+$/);
  });

  it('the agent that talks forever fails when the user stops answering at maxTurns: user_gave_up', async () => {
    const task = chat[0]!.task;
    const r = await runRollout({ task, agent: 'fixtures/agents/chat/talks-forever.ts', outDir: out.dir, isolation: 'thread' });
    expect(r.status).toBe('failed');
    expect(r.termination).toBe('returned');
    expect(r.output).toBe('The conversation is over (conversation_ended).');
    const files = readRunFiles(r.runDir);
    // The opening line and maxTurns (6) exchanges: the seventh message was refused, unrecorded.
    expect(eventsOf(files.trace, 'user_message')).toHaveLength(13);
    expect(files.run.user).toMatchObject({ endedBy: 'max_turns' });
    expect(r.diagnosis.find((d) => d.code === 'user_gave_up')?.message).toMatch(/maxTurns allows with the task not done/);
  });
});

describe('the user channel', () => {
  it('hands the verifier the conversation; check.said reads the agent’s messages; the policy comes before the opening line', async () => {
    let got: readonly Message[] = [];
    const task: Task = makeTask(
      ({ conversation }) => {
        got = conversation;
        return [check.said('quoted the total', conversation, '1234.5'), check.said('never said it', conversation, 'refund')];
      },
      { policy: 'Be kind.', user: { instruction: 'want help', script: (c) => (c.length === 0 ? 'Hello' : `you said ${c.at(-1)!.text}`) } },
    );
    const r = await runRollout({ task, agent: ECHO, agentOptions: { say: ['The total is 1,234.50', 'bye'] }, outDir: out.dir, isolation: 'thread' });
    expect(r.checks.map((c) => [c.name, c.pass])).toEqual([
      ['quoted the total', true],
      ['never said it', false],
    ]);
    expect(got).toEqual([
      { role: 'user', text: 'Hello' },
      { role: 'agent', text: 'The total is 1,234.50' },
      { role: 'user', text: 'you said The total is 1,234.50' },
      { role: 'agent', text: 'bye' },
      { role: 'user', text: 'you said bye' },
    ]);
    const output = JSON.parse(r.output!);
    expect(output.instruction).toBe('Be kind.\n\nHello');
    expect(output.results[0]).toEqual({ ok: true, reply: 'you said The total is 1,234.50', ended: false });
  });

  it('a task without a user gives the agent no user; a task run solo gives it the instruction and no user', async () => {
    const plain = await runRollout({ task: makeTask(() => [{ name: 'ok', pass: true }]), agent: ECHO, outDir: out.dir, isolation: 'thread' });
    expect(JSON.parse(plain.output!)).toEqual({ instruction: 'do the thing', user: 'none' });
    expect(readRunFiles(plain.runDir).run.user).toBeUndefined();

    const withUser = makeTask(() => [{ name: 'ok', pass: true }], { user: { instruction: 'brief', script: () => 'hi' } });
    const solo = await runRollout({ task: withUser, agent: ECHO, solo: true, outDir: out.dir, isolation: 'thread' });
    expect(JSON.parse(solo.output!)).toEqual({ instruction: 'do the thing', user: 'none' });
    expect(readRunFiles(solo.runDir).run.user).toEqual({ mode: 'solo' });
    expect(eventsOf(readRunFiles(solo.runDir).trace, 'user_message')).toEqual([]);

    // A user with neither script nor model, and no --user: solo too.
    const implicit = await runRollout({ task: makeTask(() => [{ name: 'ok', pass: true }], { user: { instruction: 'brief' } }), agent: ECHO, outDir: out.dir, isolation: 'thread' });
    expect(readRunFiles(implicit.runDir).run.user).toEqual({ mode: 'solo' });
  });

  it('run solo, the verifier gets the instruction as the user’s message and the answer as the agent’s: check.said reads the answer, and regrade agrees', async () => {
    let got: readonly Message[] = [];
    const said = makeTask(
      ({ conversation }) => {
        got = conversation;
        return [check.said('said it had no user', conversation, '"user":"none"')];
      },
      { user: { instruction: 'you want o2 refunded', script: () => 'hi' } },
    );
    const r = await runRollout({ task: said, agent: ECHO, solo: true, outDir: out.dir, isolation: 'thread' });
    expect(got).toEqual([
      { role: 'user', text: 'do the thing' },
      { role: 'agent', text: '{"instruction":"do the thing","user":"none"}' },
    ]);
    expect(r.status).toBe('passed');
    expect(eventsOf(readRunFiles(r.runDir).trace, 'user_message')).toEqual([]);

    // A helpdesk-chat task run solo by an agent that does the work and says so in its answer.
    const task = chat.find((t) => t.task.id === 'helpdesk-chat/close-ticket')!;
    const alone = await runRollout({ task: task.task, taskFile: task.file, agent: 'fixtures/agents/chat/works-alone.mjs', solo: true, outDir: out.dir, isolation: 'thread' });
    expect(alone.status, JSON.stringify(alone.checks.filter((c) => !c.pass))).toBe('passed');
    expect(alone.checks.find((c) => c.name === 'told the user which ticket was closed')).toMatchObject({ pass: true, actual: '1 message, the last: "Done: ticket t3 is closed."' });
    const report = await regrade({ target: alone.runDir, outDir: out.dir });
    expect(report.changed).toEqual([]);
    expect(readRunFiles(alone.runDir).result.status).toBe('passed');
  });

  it('a script that throws makes the run an error (user_error), never a pass or a fail; the agent is told', async () => {
    const task = makeTask(() => [{ name: 'ok', pass: true }], {
      user: { instruction: 'brief', script: (c) => { if (c.length > 0) throw new Error('the script broke'); return 'hi'; } },
    });
    const r = await runRollout({ task, agent: ECHO, agentOptions: { say: ['hello', 'again'] }, outDir: out.dir, isolation: 'thread' });
    expect(r.status).toBe('error');
    expect(r.error).toMatchObject({ code: 'user_error', message: expect.stringMatching(/the script broke/) });
    const results = JSON.parse(r.output ?? '{"results":[]}').results as { error?: { code: string } }[];
    if (results.length > 0) expect(results[0]!.error?.code).toBe('user_error');
    expect(eventsOf(readRunFiles(r.runDir).trace, 'user_error')).toHaveLength(1);
    // (the answer had no tool call behind it, but a run whose user failed says nothing of the agent)
    expect(r.diagnosis).toEqual([]);
  });

  it('a script that cannot say the opening line: an error before the agent starts', async () => {
    const task = makeTask(() => [{ name: 'ok', pass: true }], { user: { instruction: 'brief', script: () => { throw new Error('no opening'); } } });
    const r = await runRollout({ task, agent: ECHO, outDir: out.dir, isolation: 'thread' });
    expect(r).toMatchObject({ status: 'error', termination: 'not_started', error: { code: 'user_error', message: expect.stringMatching(/no opening/) } });
  });

  it('a cancel while the user writes its opening line: the run is cancelled, not a user error', async () => {
    const controller = new AbortController();
    const task = makeTask(() => [{ name: 'ok', pass: true }], { user: { instruction: 'brief', script: () => new Promise<string>(() => setTimeout(() => controller.abort(), 10)) } });
    const r = await runRollout({ task, agent: ECHO, outDir: out.dir, isolation: 'thread', signal: controller.signal });
    expect(r).toMatchObject({ status: 'error', termination: 'cancelled', error: { code: 'cancelled' } });
  });

  it('refuses what is not text; after the conversation ended, send answers conversation_ended', async () => {
    const task = makeTask(() => [{ name: 'ok', pass: true }], { user: { instruction: 'brief', script: (c) => (c.length === 0 ? 'hi' : 'thanks ###STOP###') } });
    const r = await runRollout({ task, agent: ECHO, agentOptions: { say: ['done', 'more?'] }, outDir: out.dir, isolation: 'thread' });
    const results = JSON.parse(r.output!).results;
    expect(results[0]).toEqual({ ok: true, reply: 'thanks ###STOP###', ended: true });
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'conversation_ended' } });
  });
});

describe('hostile agents and the user', () => {
  it('a flood of messages reaches the user only maxTurns times; a huge message and a non-string are refused unread', async () => {
    let asked = 0;
    const task = makeTask(() => [{ name: 'ok', pass: true }], {
      user: { instruction: 'brief', maxTurns: 5, script: () => (asked++, 'go on') },
    });
    const r = await runRollout({ task, agent: 'fixtures/agents/hostile/floods-user.ts', outDir: out.dir });
    expect(r.termination).toBe('returned');
    expect(JSON.parse(r.output!)).toEqual({ huge: 'too_large', notText: 'invalid_input', codes: { ok: 4, ended: 1, conversation_ended: 1995 } });
    // The opening line and five replies: the rest never reached the user.
    expect(asked).toBe(6);
    const files = readRunFiles(r.runDir);
    expect(eventsOf(files.trace, 'user_message')).toHaveLength(11);
    expect(files.trace.some((e) => e.type === 'user_message' && e.text.length > 100)).toBe(false);
  });

  it('messages forged on the port are checked by the host: too large, not text, a made-up refusal; the user hears only the real one', async () => {
    const heard: string[] = [];
    const task = makeTask(() => [{ name: 'ok', pass: true }], {
      user: { instruction: 'brief', script: (c) => { if (c.length > 0) heard.push(c.at(-1)!.text); return 'go on'; } },
    });
    const r = await runRollout({ task, agent: 'fixtures/agents/hostile/forges-user-messages.ts', outDir: out.dir });
    const { replies, ordinary } = JSON.parse(r.output!);
    expect(replies[900]).toMatchObject({ ok: false, error: { code: 'too_large' } });
    expect(replies[901]).toMatchObject({ ok: false, error: { code: 'invalid_input' } });
    expect(replies[902]).toEqual({ ok: false, error: { code: 'invalid_input', message: 'user.send takes a string' } });
    expect(ordinary).toEqual({ ok: true, reply: 'go on', ended: false });
    expect(heard).toEqual(['an ordinary message']);
    expect(eventsOf(readRunFiles(r.runDir).trace, 'user_message')).toHaveLength(3);
  });
});
