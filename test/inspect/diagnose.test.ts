import { describe, expect, it } from 'vitest';
import { diagnose, findingPlace, type DiagnoseInput } from '../../src/inspect/diagnose.js';
import { check } from '../../src/define.js';
import type { Check, Termination, ToolResult, TraceEvent, TraceEventInput } from '../../src/types.js';

/** Builds a trace in one line per event: seq and t are filled in. */
function traceOf(...events: TraceEventInput[]): TraceEvent[] {
  return events.map((e, i) => ({ seq: i, t: i, ...e }) as TraceEvent);
}

let nextId = 0;
/** A tool_call and its tool_result. */
function call(name: string, input: unknown, result: ToolResult): TraceEventInput[] {
  const callId = ++nextId;
  return [
    { type: 'tool_call', callId, name, input },
    { type: 'tool_result', callId, durationMs: 0.1, ...result },
  ];
}
const ok = (value: unknown = null): ToolResult => ({ ok: true, value });
const fail = (code: 'tool_not_found' | 'invalid_input' | 'tool_error', message: string): ToolResult => ({ ok: false, error: { code, message } });
const started: TraceEventInput = { type: 'run_started', taskId: 't', agent: 'a', seed: 1 };
const returned = (output: string | null): TraceEventInput => ({ type: 'agent_returned', output });

function run(partial: Partial<DiagnoseInput> & { trace: TraceEvent[] }): ReturnType<typeof diagnose> {
  return diagnose({ changes: [], checks: [{ name: 'ok', pass: true }], output: null, termination: 'returned', status: 'passed', ...partial });
}
const codes = (findings: ReturnType<typeof diagnose>): string[] => findings.map((f) => f.code);
const change = { kind: 'E', path: ['tickets', 't3', 'status'], lhs: 'open', rhs: 'closed' } as never;

describe('diagnose, conversations', () => {
  const said = (from: 'agent' | 'user', text: string, ended?: 'user' | 'max_turns'): TraceEventInput => ({ type: 'user_message', from, text, ...(ended ? { ended } : {}) });
  const write = (id: string): TraceEventInput[] => {
    const [c, r] = call('update_ticket', { ticket_id: id }, ok());
    return [c!, { ...(r as object), changes: [change] } as unknown as TraceEventInput];
  };
  const failedCheck: Check[] = [{ name: 't3 is closed', pass: false }];

  it('flags a write before the user answered anything (never_asked), at the write', () => {
    const trace = traceOf(started, said('user', 'close my ticket'), ...write('t1'), said('agent', 'Done.'), said('user', 'bye ###STOP###', 'user'), returned('Done.'));
    const findings = run({ trace, changes: [change], checks: failedCheck, output: 'Done.', status: 'failed' });
    expect(findings.find((f) => f.code === 'never_asked')).toEqual({ code: 'never_asked', seq: 2, at: 'call #' + nextId, message: expect.stringMatching(/before the user had answered anything — it had not asked yet/) });
    expect(findings.find((f) => f.code === 'user_gave_up')?.message).toMatch(/^the user ended the conversation with the task not done \(after 1 message\(s\)/);
  });

  it('no never_asked when the write came after a reply, nor in a run that passed; user_gave_up names maxTurns', () => {
    const trace = traceOf(started, said('user', 'close my ticket'), said('agent', 'Which?'), said('user', 't1', 'max_turns'), ...write('t1'), returned('Done.'));
    const failed = run({ trace, changes: [change], checks: failedCheck, output: 'Done.', status: 'failed' });
    expect(codes(failed)).not.toContain('never_asked');
    expect(failed.find((f) => f.code === 'user_gave_up')?.message).toMatch(/the last reply maxTurns allows/);
    const early = traceOf(started, said('user', 'close t3'), ...write('t3'), returned('Closed t3.'));
    expect(codes(run({ trace: early, changes: [change], output: 'Closed t3.' }))).toEqual([]);
  });
});

describe('diagnose', () => {
  it('finds nothing in a clean passing run', () => {
    const trace = traceOf(started, ...call('update_ticket', { ticket_id: 't3' }, ok()), returned('Closed t3.'));
    expect(run({ trace, changes: [change], output: 'Closed t3.' })).toEqual([]);
  });

  it('flags an answer given without a single successful tool call (ungrounded_answer), pointing at the answer', () => {
    const trace = traceOf(started, returned('There are 3 open tickets.'));
    const findings = run({ trace, output: 'There are 3 open tickets.', status: 'failed' });
    expect(findings[0]).toEqual({ code: 'ungrounded_answer', seq: 1, at: 'the answer', message: expect.stringMatching(/without a single successful tool call/) });
  });

  it('flags an answer that claims an action when the world did not change (ungrounded_answer), saying the agent only looked things up', () => {
    const trace = traceOf(started, ...call('get_ticket', { ticket_id: 't3' }, ok({})), returned('Done, I closed t3.'));
    expect(run({ trace, output: 'Done, I closed t3.' })[0]).toMatchObject({
      code: 'ungrounded_answer',
      message: 'the answer claims an action ("closed") but the agent only looked things up: its one successful tool call changed nothing in the world',
    });
  });

  it('takes "Done" after a lookup as the work finished, not a claimed change: a claim only when the answer says nothing else', () => {
    const looked = (output: string) => traceOf(started, ...call('list_orders', { status: 'pending' }, ok([1, 2, 3])), ...call('list_orders', {}, ok([])), returned(output));
    for (const output of ['Done. There are 3 pending orders.', 'Completed: 3 orders are pending.', 'done — 3']) {
      expect(codes(run({ trace: looked(output), output })), output).toEqual([]);
    }
    for (const output of ['Done.', 'All done!', "I've completed the task successfully.", 'Done. Refunded o2.']) {
      const [finding] = run({ trace: looked(output), output });
      expect(finding, output).toMatchObject({ code: 'ungrounded_answer', message: expect.stringMatching(/^the answer claims an action \("\w+"\) but the agent only looked things up: its 2 successful tool calls changed nothing in the world$/) });
    }
  });

  it('flags a call to a tool that does not exist (hallucinated_tool) and the correction after it (self_corrected)', () => {
    const trace = traceOf(started, ...call('close_ticket', {}, fail('tool_not_found', "no tool named 'close_ticket'")), ...call('update_ticket', {}, ok()), returned('ok'));
    const findings = run({ trace, changes: [change], output: 'ok' });
    expect(findings).toEqual([
      { code: 'hallucinated_tool', seq: 1, at: expect.stringMatching(/^call #\d+$/), message: 'called close_ticket, which does not exist' },
      expect.objectContaining({ code: 'self_corrected', seq: 3 }),
    ]);
  });

  it('flags parameters a tool does not take (hallucinated_parameter), naming them', () => {
    const message = "invalid input for update_ticket: unknown parameter 'ticketId' (did you mean 'ticket_id'?). update_ticket takes: ticket_id (string, required).";
    const trace = traceOf(started, ...call('update_ticket', { ticketId: 't3' }, fail('invalid_input', message)), returned('gave up'));
    expect(run({ trace, output: 'gave up', status: 'failed', checks: [{ name: 't3 closed', pass: false }] })).toContainEqual({
      code: 'hallucinated_parameter',
      seq: 1,
      at: expect.stringMatching(/^call #\d+$/),
      message: 'called update_ticket with parameters it does not take: ticketId',
    });
  });

  it('flags an agent that stopped right after a failed call (gave_up_after_error)', () => {
    const trace = traceOf(started, ...call('update_ticket', { ticket_id: 't99' }, fail('tool_error', "No ticket with id 't99'")), returned('Sorry.'));
    expect(codes(run({ trace, output: 'Sorry.', status: 'failed', checks: [{ name: 'x', pass: false }] }))).toContain('gave_up_after_error');
  });

  it('flags the same failing call made twice (repeated_failing_call), at the second one', () => {
    const failing = (): TraceEventInput[] => call('get_user', { user_id: 'jordan' }, fail('tool_error', 'No user'));
    const trace = traceOf(started, ...failing(), ...failing(), returned('?'));
    expect(run({ trace, output: '?' })).toContainEqual(expect.objectContaining({ code: 'repeated_failing_call', seq: 3 }));
  });

  it('flags changes outside mayChange (collateral_damage) with the check message', () => {
    const checks: Check[] = [{ name: 'mayChange', pass: false, message: 'changes outside mayChange: users.u1.email' }];
    const findings = run({ trace: traceOf(started, returned('ok')), checks, status: 'failed' });
    expect(findings).toContainEqual({ code: 'collateral_damage', message: 'changes outside mayChange: users.u1.email' });
  });

  it('points collateral_damage at the first call whose own changes left mayChange', () => {
    const checks: Check[] = [{ name: 'mayChange', pass: false, message: 'changes outside mayChange: users.u1.email' }];
    const email = { kind: 'E', path: ['users', 'u1', 'email'], lhs: 'a', rhs: 'b' } as never;
    const trace = traceOf(
      started,
      { type: 'tool_call', callId: 1, name: 'update_ticket', input: {} },
      { type: 'tool_result', callId: 1, durationMs: 0.1, ok: true, value: null, changes: [change] },
      { type: 'tool_call', callId: 2, name: 'update_user', input: {} },
      { type: 'tool_result', callId: 2, durationMs: 0.1, ok: true, value: null, changes: [email] },
      returned('ok'),
    );
    const task = { environment: { name: 'e', createState: () => ({}), tools: [] }, mayChange: ['tickets.*.status'] };
    expect(run({ trace, task, checks, status: 'failed' })).toContainEqual({
      code: 'collateral_damage',
      seq: 3,
      at: 'call #2',
      message: 'changes outside mayChange: users.u1.email (first by call #2 update_user)',
    });
  });

  it('flags changes in a task whose solution only reads (collateral_damage)', () => {
    const task = {
      environment: { name: 'e', createState: () => ({}), tools: [{ name: 'get', description: '', inputSchema: {}, readOnly: true, run: () => null }] },
      solution: { calls: [{ name: 'get', input: {} }] },
    };
    const trace = traceOf(started, ...call('get', {}, ok()), returned('4'));
    expect(codes(run({ trace, task, changes: [change], output: '4' }))).toContain('collateral_damage');
  });

  it('tells a wrong world (wrong_final_state) from a wrong answer (wrong_answer)', () => {
    const output = 'There are 3.';
    const checks: Check[] = [
      { name: 't3 is closed', pass: false, expected: 'closed', actual: 'open' },
      { name: 'answer states the count', pass: false, expected: 'the number 4', actual: output },
    ];
    const trace = traceOf(started, ...call('list', {}, ok([])), returned(output));
    const findings = run({ trace, checks, output, status: 'failed' });
    expect(findings).toContainEqual({ code: 'wrong_final_state', message: 'the world is not as expected: t3 is closed' });
    expect(findings).toContainEqual({ code: 'wrong_answer', seq: 3, at: 'the answer', message: 'the answer is wrong: answer states the count' });
  });

  it('calls a failed check.said a wrong answer about what the agent told the user, not a wrong world, at its last message', () => {
    const conversation = [
      { role: 'user' as const, text: 'close my ticket' },
      { role: 'agent' as const, text: 'Which one?' },
    ];
    const checks = [{ name: 't3 is closed', pass: true }, check.said('told the user', conversation, 't3')];
    const trace = traceOf(started, { type: 'user_message', from: 'user', text: 'close my ticket' }, { type: 'user_message', from: 'agent', text: 'Which one?' }, ...call('list', {}, ok([])), returned('bye'));
    const findings = run({ trace, changes: [change], checks, output: 'bye', status: 'failed' });
    expect(codes(findings)).not.toContain('wrong_final_state');
    expect(findings).toContainEqual({ code: 'wrong_answer', seq: 2, at: 'at 2ms', message: 'the agent did not tell the user what was expected: told the user' });
    // Run solo, nothing was said but the answer: the finding points at it.
    const solo = traceOf(started, ...call('list', {}, ok([])), returned('Refunded o2.'));
    const alone = run({ trace: solo, changes: [change], checks: [check.said('told the user', [], 't3')], output: 'Refunded o2.', status: 'failed' });
    expect(alone).toEqual([{ code: 'wrong_answer', seq: 3, at: 'the answer', message: 'the agent did not tell the user what was expected: told the user' }]);
  });

  it('keeps only how the agent ended in a run that is an error (its user or model failed): the rest says nothing of the agent', () => {
    const checks: Check[] = [{ name: 't3 is closed', pass: false }];
    const answered = traceOf(started, returned('Done, I closed t3.'));
    expect(run({ trace: answered, checks, output: 'Done, I closed t3.', status: 'error' })).toEqual([]);
    const limited = traceOf(started, ...call('nope', {}, fail('tool_not_found', 'no')), { type: 'limit_exceeded', limit: 'maxModelRequests', message: 'model request limit: the agent made more than 3 model requests' }, returned('Done.'));
    expect(codes(run({ trace: limited, checks, output: 'Done.', termination: 'model_limit', status: 'error' }))).toEqual(['model_limit']);
    const threw = traceOf(started, { type: 'agent_threw', error: { code: 'agent_threw', message: 'boom' } });
    expect(run({ trace: threw, checks, termination: 'threw', status: 'error' })).toEqual([{ code: 'threw', seq: 1, at: 'the throw', message: 'the agent threw: boom' }]);
  });

  it.each([
    ['timeout', 'timeoutMs'],
    ['tool_call_limit', 'maxToolCalls'],
    ['out_of_memory', 'memoryMb'],
  ] as [Termination, string][])('reports the %s that ended the run, pointing at the limit event', (termination, limit) => {
    const trace = traceOf(started, { type: 'limit_exceeded', limit, message: `${limit} went over` });
    expect(run({ trace, termination, status: 'failed' })).toContainEqual({ code: termination, seq: 1, at: 'the limit', message: `${limit} went over` });
  });

  it('reports what an agent threw, and why an agent did not load, pointing at the error', () => {
    const threw = traceOf(started, ...call('get_ticket', { ticket_id: 't3' }, ok()), { type: 'agent_threw', error: { code: 'agent_threw', message: 'model returned 500' } });
    expect(run({ trace: threw, termination: 'threw', status: 'failed' })).toContainEqual({ code: 'threw', seq: 3, at: 'the throw', message: 'the agent threw: model returned 500' });
    const unloaded = traceOf(started, { type: 'agent_threw', error: { code: 'agent_load_error', message: 'cannot load agent.mjs: no default export' } });
    expect(run({ trace: unloaded, termination: 'load_error', status: 'failed' })).toContainEqual({ code: 'load_error', seq: 1, at: 'the throw', message: 'cannot load agent.mjs: no default export' });
  });

  it('reports a crash with what the trace says about it', () => {
    const trace = traceOf(started, { type: 'agent_threw', error: { code: 'agent_exit', message: 'the agent called process.exit(3)' } });
    expect(run({ trace, termination: 'crashed', status: 'failed' })).toContainEqual({ code: 'crashed', seq: 1, at: 'the throw', message: 'the agent called process.exit(3)' });
  });

  it('says why a limit ended the run without naming the limit twice (the code names it)', () => {
    const timedOut = traceOf(started, { type: 'limit_exceeded', limit: 'timeoutMs', message: 'timeout: the agent ran for 1000 ms (timeoutMs)' });
    const [finding] = run({ trace: timedOut, termination: 'timeout', status: 'failed' }).filter((f) => f.code === 'timeout');
    expect(finding?.message).toBe('the agent ran for 1000 ms (timeoutMs)');
    const tooMany = traceOf(started, { type: 'limit_exceeded', limit: 'maxToolCalls', message: 'tool call limit: the agent made more than 2 calls (maxToolCalls)' });
    const [limited] = run({ trace: tooMany, termination: 'tool_call_limit', status: 'failed' }).filter((f) => f.code === 'tool_call_limit');
    expect(limited?.message).toBe('the agent made more than 2 calls (maxToolCalls)');
  });

  it('names the place of each finding as the timelines number it: call #n, not the event number', () => {
    // The timeline prints calls as #1, #2 ...; event seq 4 is call #2 here.
    const trace = traceOf(
      started,
      { type: 'tool_call', callId: 1, name: 'get', input: {} },
      { type: 'tool_result', callId: 1, durationMs: 0.1, ok: true, value: null },
      { type: 'agent_log', message: 'thinking' },
      { type: 'tool_call', callId: 2, name: 'nope', input: {} },
      { type: 'tool_result', callId: 2, durationMs: 0.1, ok: false, error: { code: 'tool_not_found', message: 'no' } },
      returned('done'),
    );
    const found = run({ trace, output: 'done' }).find((f) => f.code === 'hallucinated_tool');
    expect(found).toMatchObject({ seq: 4, at: 'call #2' });
    expect(findingPlace(3, trace)).toBe('at 3ms');
    expect(findingPlace(undefined, trace)).toBeUndefined();
  });

  it('keeps a finding repeated word for word once, where it first happened, saying how often', () => {
    const nope = (): TraceEventInput[] => call('delete_all', {}, fail('tool_not_found', 'no'));
    const trace = traceOf(started, ...nope(), ...nope(), ...nope(), ...call('list', {}, ok([])), returned('ok'));
    const findings = run({ trace, output: 'ok' }).filter((f) => f.code === 'hallucinated_tool');
    expect(findings).toEqual([expect.objectContaining({ seq: 1, message: 'called delete_all, which does not exist (3 times)' })]);
  });

  it('leaves the failed checks of gates (mayChange, grounded) to their own findings', () => {
    const checks: Check[] = [
      { name: 'count', pass: true },
      { name: 'grounded', pass: false, gate: true, message: 'the agent answered without a single successful tool call' },
    ];
    const trace = traceOf(started, returned('4'));
    expect(codes(run({ trace, checks, output: '4', status: 'failed' }))).toEqual(['ungrounded_answer']);
  });
});
