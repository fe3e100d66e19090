import { describe, expect, it } from 'vitest';
import { changeView, clip, runDetail, type CallView, type DetailCaps, type EventView } from '../../src/inspect/report-detail.js';
import type { LoadedRun } from '../../src/inspect/runs.js';
import type { Change } from '../../src/rollout/diff.js';
import { DEFAULT_LIMITS } from '../../src/options.js';
import type { TraceEvent } from '../../src/types.js';

const CAPS: DetailCaps = { maxValueChars: 200, maxEvents: 100, maxChanges: 5 };

function loaded(trace: TraceEvent[], extra: Partial<LoadedRun> = {}): LoadedRun {
  return {
    dir: '/tmp/run',
    run: {
      version: 1,
      runId: '01DETAIL',
      taskId: 'demo/task',
      taskFile: null,
      agent: 'agent.mjs',
      status: 'failed',
      termination: 'returned',
      startedAt: '2026-01-01T00:00:00.000Z',
      finishedAt: '2026-01-01T00:00:01.000Z',
      durationMs: 40,
      toolTimeMs: 4,
      agentTimeMs: 36,
      toolCalls: 2,
      refusedCalls: 0,
      limits: { ...DEFAULT_LIMITS },
      seed: 3,
      silo: '0.0.0',
      node: '20',
      worldHash: null,
    },
    result: {
      version: 1,
      runId: '01DETAIL',
      taskId: 'demo/task',
      status: 'failed',
      score: 0,
      checks: [
        { name: 'status is closed', pass: false, expected: 'closed', actual: 'open', message: 'still open' },
        { name: 'answered', pass: true },
      ],
      output: 'Done.',
      outputTruncated: false,
      termination: 'returned',
      diagnosis: [{ code: 'ungrounded_answer', seq: 5, message: 'claims an action' }],
    },
    trace,
    diff: [],
    ...extra,
  };
}

const started: TraceEvent = { seq: 0, t: 0, type: 'run_started', taskId: 'demo/task', agent: 'agent.mjs', seed: 3 };

describe('runDetail', () => {
  it('interleaves the dialogue with the simulated user with the calls, and says who the user was and what it cost', () => {
    const trace = [
      started,
      { seq: 1, t: 1, type: 'user_message', from: 'user', text: 'Close my ticket' },
      { seq: 2, t: 2, type: 'user_message', from: 'agent', text: 'Which one?' },
      { seq: 3, t: 3, type: 'user_message', from: 'user', text: 't1' },
      { seq: 4, t: 5, type: 'tool_call', callId: 1, name: 'close', input: { id: 't1' } },
      { seq: 5, t: 7, type: 'tool_result', callId: 1, durationMs: 2, ok: true, value: true },
      { seq: 6, t: 8, type: 'user_message', from: 'agent', text: 'Closed.' },
      { seq: 7, t: 9, type: 'user_message', from: 'user', text: '###STOP###', ended: 'user' },
      { seq: 8, t: 10, type: 'user_error', message: 'boom' },
    ] as TraceEvent[];
    const base = loaded(trace);
    const d = runDetail({ ...base, run: { ...base.run, user: { mode: 'model', model: 'openai:u', messages: 5, endedBy: 'user' }, userUsage: { inputTokens: 9, outputTokens: 2, requests: 2 } } }, CAPS);
    expect(d.timeline.map((v) => (v.kind === 'call' ? `call ${v.name}` : `${v.kind} ${v.text}`)).slice(1)).toEqual([
      'heard Close my ticket',
      'said Which one?',
      'heard t1',
      'call close',
      'said Closed.',
      'heard ###STOP### (the user ended the conversation)',
      'user_error the simulated user failed: boom',
    ]);
    expect(d.user).toBe('LLM user openai:u · 5 messages · ended by the user');
    expect(d.userUsage).toEqual({ inputTokens: 9, outputTokens: 2, requests: 2 });
  });

  it('shows each call with its input, its result or error, its duration and the changes it made', () => {
    const changes: Change[] = [
      { kind: 'E', path: ['tickets', 't1', 'status'], lhs: 'open', rhs: 'closed' },
      { kind: 'N', path: ['log', 'n1'], rhs: { by: 'agent' } },
    ];
    const trace = [
      started,
      { seq: 1, t: 5, type: 'tool_call', callId: 1, name: 'close', input: { id: 't1' } },
      { seq: 2, t: 7, type: 'tool_result', callId: 1, durationMs: 2, ok: true, value: { closed: true }, changes },
      { seq: 3, t: 9, type: 'tool_call', callId: 2, name: 'clse', input: {} },
      { seq: 4, t: 9.5, type: 'tool_result', callId: 2, durationMs: 0.1, ok: false, error: { code: 'tool_not_found', message: 'no tool named clse' } },
      { seq: 5, t: 20, type: 'agent_returned', output: 'Done.' },
    ] as TraceEvent[];
    const d = runDetail(loaded(trace), CAPS);
    const calls = d.timeline.filter((v): v is CallView => v.kind === 'call');
    expect(calls).toEqual([
      {
        kind: 'call',
        seq: 1,
        t: 5,
        callId: 1,
        name: 'close',
        input: '{"id":"t1"}',
        ok: true,
        value: '{"closed":true}',
        durationMs: 2,
        changes: [
          { op: '~', path: 'tickets.t1.status', before: '"open"', after: '"closed"' },
          { op: '+', path: 'log.n1', after: '{"by":"agent"}' },
        ],
      },
      { kind: 'call', seq: 3, t: 9, callId: 2, name: 'clse', input: '{}', ok: false, error: { code: 'tool_not_found', message: 'no tool named clse' }, durationMs: 0.1 },
    ]);
    expect(d.timeline.map((v) => v.kind)).toEqual(['start', 'call', 'call', 'returned']);
    // A finding names its event as the timeline does (results stored before `at` existed get it here).
    expect(d.diagnosis).toEqual([{ code: 'ungrounded_answer', seq: 5, at: 'the answer', message: 'claims an action' }]);
    const blamed = runDetail(loaded(trace, { result: { ...loaded(trace).result!, diagnosis: [{ code: 'hallucinated_tool', seq: 3, message: 'called clse' }] } }), CAPS);
    expect(blamed.diagnosis[0]!.at).toBe('call #2');
    expect(d.time).toBe('40ms total · agent 40ms (thinking 36ms, tools 4ms) · start-up, world, grading and artifacts 0.00ms');
    expect(d).toMatchObject({ runId: '01DETAIL', status: 'failed', agentTimeMs: 36, toolTimeMs: 4, output: 'Done.', outputTruncated: false });
  });

  it('works on traces that record no per-call changes', () => {
    const trace = [
      started,
      { seq: 1, t: 5, type: 'tool_call', callId: 1, name: 'close', input: { id: 't1' } },
      { seq: 2, t: 7, type: 'tool_result', callId: 1, durationMs: 2, ok: true, value: null },
    ] as TraceEvent[];
    const [, call] = runDetail(loaded(trace), CAPS).timeline as [EventView, CallView];
    expect(call.changes).toBeUndefined();
    expect(call.value).toBe('null');
  });

  it('shows a call that the run ended before as having no result', () => {
    const trace = [started, { seq: 1, t: 5, type: 'tool_call', callId: 1, name: 'slow', input: {} }] as TraceEvent[];
    const call = runDetail(loaded(trace), CAPS).timeline[1] as CallView;
    expect(call.ok).toBeUndefined();
    expect(call.durationMs).toBeUndefined();
  });

  it('gives the checks with expected and actual as JSON text', () => {
    const d = runDetail(loaded([started]), CAPS);
    expect(d.checks).toEqual([
      { name: 'status is closed', pass: false, expected: '"closed"', actual: '"open"', message: 'still open' },
      { name: 'answered', pass: true },
    ]);
  });

  it('cuts every long value to maxValueChars and says how long it was', () => {
    const huge = 'x'.repeat(50_000);
    const trace = [
      started,
      { seq: 1, t: 1, type: 'tool_call', callId: 1, name: 'put', input: { text: huge } },
      { seq: 2, t: 2, type: 'tool_result', callId: 1, durationMs: 1, ok: false, error: { code: 'tool_error', message: huge } },
      { seq: 3, t: 3, type: 'agent_log', message: huge, data: { more: huge } },
      { seq: 4, t: 4, type: 'agent_returned', output: huge },
    ] as TraceEvent[];
    const base = loaded(trace);
    base.result!.output = huge;
    base.result!.checks = [{ name: huge, pass: false, expected: huge, actual: { huge } }];
    const d = runDetail(base, CAPS);
    const json = JSON.stringify(d);
    expect(json.length).toBeLessThan(4_000);
    const call = d.timeline[1] as CallView;
    expect(call.input).toMatch(/^\{"text":"x{191}… \(50011 chars\)$/);
    expect(call.error!.message).toBe(`${'x'.repeat(200)}… (50000 chars)`);
    expect(d.output).toBe(`${'x'.repeat(200)}… (50000 chars)`);
    expect(d.outputTruncated).toBe(true);
    expect(d.checks[0]!.expected!.length).toBeLessThan(230);
  });

  it('keeps the first events and the last ones, and marks where the rest were left out', () => {
    const trace: TraceEvent[] = [started];
    for (let i = 1; i <= 1000; i++) {
      trace.push({ seq: 2 * i - 1, t: i, type: 'tool_call', callId: i, name: 'noop', input: { i } });
      trace.push({ seq: 2 * i, t: i, type: 'tool_result', callId: i, durationMs: 0, ok: true, value: i });
    }
    trace.push({ seq: 2001, t: 2000, type: 'agent_returned', output: 'ok' });
    const d = runDetail(loaded(trace), CAPS);
    // 1002 events shown (results ride with their calls), 100 kept: 80 from the start, 20 from the end.
    expect(d.omittedEvents).toBe(902);
    expect(d.timeline).toHaveLength(101);
    expect(d.timeline[80]).toEqual({ kind: 'gap', seq: (d.timeline[81] as CallView).seq, t: d.timeline[81]!.t, text: '902 events left out (see trace.jsonl)' });
    expect((d.timeline[79] as CallView).callId).toBe(79);
    expect((d.timeline[81] as CallView).callId).toBe(982);
    expect((d.timeline[99] as CallView).value).toBe('1000');
    expect(d.timeline[100]!.kind).toBe('returned');
  });

  it('caps the changes of a call and of the run, counting those left out', () => {
    const many: Change[] = Array.from({ length: 12 }, (_, i) => ({ kind: 'N', path: ['items', `i${i}`], rhs: i }));
    const trace = [
      started,
      { seq: 1, t: 1, type: 'tool_call', callId: 1, name: 'fill', input: {} },
      { seq: 2, t: 2, type: 'tool_result', callId: 1, durationMs: 1, ok: true, value: 12, changes: many },
    ] as TraceEvent[];
    const d = runDetail(loaded(trace, { diff: many }), CAPS);
    const call = d.timeline[1] as CallView;
    expect(call.changes).toHaveLength(5);
    expect(call.moreChanges).toBe(7);
    expect(d.diff).toHaveLength(5);
    expect(d.moreDiff).toBe(7);
  });

  it('says when a run has no diff yet', () => {
    const d = runDetail(loaded([started], { diff: null, result: null }), CAPS);
    expect(d.diff).toBeNull();
    expect(d.checks).toEqual([]);
    expect(d.status).toBe('failed');
  });
});

describe('changeView', () => {
  it('turns each kind of deep-diff record into an operation on a path', () => {
    expect(changeView({ kind: 'N', path: ['a', 'b'], rhs: 1 }, 100)).toEqual({ op: '+', path: 'a.b', after: '1' });
    expect(changeView({ kind: 'D', path: ['a'], lhs: { x: 1 } }, 100)).toEqual({ op: '-', path: 'a', before: '{"x":1}' });
    expect(changeView({ kind: 'E', path: ['a'], lhs: 'p', rhs: 'q' }, 100)).toEqual({ op: '~', path: 'a', before: '"p"', after: '"q"' });
    expect(changeView({ kind: 'A', path: ['list'], index: 3, item: { kind: 'N', rhs: 'new' } }, 100)).toEqual({ op: '+', path: 'list.3', after: '"new"' });
    expect(changeView({ kind: 'A', path: ['list'], index: 0, item: { kind: 'D', lhs: 'old' } }, 100)).toEqual({ op: '-', path: 'list.0', before: '"old"' });
  });
});

describe('model calls in the detail', () => {
  it('puts each model call in the timeline, the gateway usage in the header, and the conversation from models.jsonl', () => {
    const trace: TraceEvent[] = [
      { seq: 0, t: 0, type: 'run_started', taskId: 'demo/task', agent: 'agent.mjs', seed: 3 },
      { seq: 1, t: 2, type: 'model_call', requestId: 1, provider: 'anthropic', endpoint: 'messages', model: 'claude-x', stream: true, status: 200, durationMs: 812.4, queuedMs: 40, usage: { inputTokens: 90, outputTokens: 7 }, retries: 1 },
      { seq: 2, t: 900, type: 'model_call', requestId: 2, provider: 'anthropic', endpoint: 'messages', model: 'claude-x', stream: false, status: 403, durationMs: 0, queuedMs: 0, usage: { inputTokens: 0, outputTokens: 0 }, error: 'model request refused: budget' },
    ];
    const run = loaded(trace, {
      models: [
        { requestId: 1, endpoint: 'messages', status: 200, request: { messages: [{ role: 'user', content: 'Count.' }] }, response: { content: [{ type: 'text', text: 'x'.repeat(500) }] } },
      ],
    });
    run.run.usage = { inputTokens: 90, outputTokens: 7, requests: 1, source: 'gateway', refusedRequests: 1 };
    run.run.reportedUsage = { inputTokens: 1, outputTokens: 1, requests: 1 };
    const detail = runDetail(run, CAPS);
    const models = detail.timeline.filter((e): e is EventView => e.kind === 'model');
    expect(models.map((e) => e.text)).toEqual([
      'model claude-x · anthropic messages #1 · HTTP 200 · 90 in / 7 out · 812 ms (queued 40 ms) · stream · 1 retries',
      'model claude-x · anthropic messages #2 · HTTP 403 · 0 in / 0 out · 0 ms · model request refused: budget',
    ]);
    expect(detail.usage).toEqual({ inputTokens: 90, outputTokens: 7, requests: 1 });
    expect(detail.reportedUsage).toEqual({ inputTokens: 1, outputTokens: 1, requests: 1 });
    expect(detail.conversation).toEqual([
      { role: 'user', text: 'Count.', requestId: 1 },
      { role: 'assistant', text: clip('x'.repeat(500), 200), requestId: 1 },
    ]);
    expect(runDetail(loaded(trace), CAPS).conversation).toBeUndefined();
  });
});

describe('clip', () => {
  it('leaves short text alone and never cuts a surrogate pair in two', () => {
    expect(clip('short', 10)).toBe('short');
    expect(clip('a😀b', 2)).toBe('a… (4 chars)');
  });
});
