import { describe, expect, it } from 'vitest';
import { formatRun } from '../../src/inspect/show.js';
import type { LoadedRun } from '../../src/inspect/runs.js';
import { createStyle } from '../../src/inspect/style.js';
import { DEFAULT_LIMITS } from '../../src/options.js';

const plain = createStyle({ isTTY: false });

function runningRun(): LoadedRun {
  return {
    dir: '/tmp/x',
    run: {
      version: 1,
      runId: '01TEST',
      taskId: 'demo/task',
      taskFile: null,
      agent: 'agent.ts',
      status: 'running',
      termination: null,
      startedAt: '2026-01-01T00:00:00.000Z',
      finishedAt: null,
      durationMs: null,
      toolTimeMs: 0,
      agentTimeMs: null,
      toolCalls: 0,
      refusedCalls: 0,
      limits: { ...DEFAULT_LIMITS },
      seed: 1,
      silo: '0.0.0',
      node: '20',
      worldHash: null,
    },
    result: null,
    trace: [{ seq: 0, t: 0, type: 'run_started', taskId: 'demo/task', agent: 'agent.ts', seed: 1 }],
    diff: null,
  };
}

describe('formatRun', () => {
  it('says plainly that a run marked running has not finished', () => {
    const text = formatRun(runningRun(), plain);
    expect(text).toMatch(/^demo\/task {2}RUNNING/);
    expect(text).toMatch(/has not finished: it is still going, or the process running it stopped/);
    expect(text).toMatch(/no diff recorded yet/);
  });

  it('indents the lines after the first of a multi-line message, so the timeline stays one column of times', () => {
    const loaded = runningRun();
    loaded.trace.push(
      { seq: 1, t: 5, type: 'tool_call', callId: 1, name: 'lookup', input: {} },
      { seq: 2, t: 6, type: 'tool_result', callId: 1, durationMs: 1, ok: false, error: { code: 'tool_error', message: 'lookup failed:\n  table users is locked\n' } },
      { seq: 3, t: 7, type: 'agent_log', message: 'thinking\r\nstill thinking' },
      { seq: 4, t: 8, type: 'agent_threw', error: { code: 'agent_threw', message: 'Error: gave up\n    at agent (agent.ts:3:9)' } },
    );
    loaded.result = { version: 1, runId: '01TEST', taskId: 'demo/task', status: 'error', score: null, checks: [], output: null, outputTruncated: false, termination: 'threw', diagnosis: [], error: { code: 'internal_error', message: 'first\nsecond' } };
    const text = formatRun(loaded, plain);
    const timeline = text.slice(text.indexOf('Timeline\n') + 'Timeline\n'.length, text.indexOf('\n\nChanges'));
    expect(timeline.split('\n')).toEqual([
      '   0.00ms  started (seed 1)',
      '      5ms  #1 lookup {}',
      '             → tool_error (1ms) lookup failed:',
      '                 table users is locked',
      '      7ms  [log] thinking',
      '             still thinking',
      '      8ms  threw: Error: gave up',
      '                 at agent (agent.ts:3:9)',
    ]);
    expect(text).toContain('error       internal_error: first\n              second\n');
  });

  it('shows a call with no result as cut short', () => {
    const loaded = runningRun();
    loaded.trace.push({ seq: 1, t: 5, type: 'tool_call', callId: 1, name: 'get_user', input: { user_id: 'u1' } });
    const text = formatRun(loaded, plain);
    expect(text).toMatch(/#1 get_user \{"user_id":"u1"\}\n.*no result \(the run ended first\)/);
  });

  it('lists under each call the changes it made, and how many more there were', () => {
    const loaded = runningRun();
    const changes = Array.from({ length: 23 }, (_, i) => ({ kind: 'N' as const, path: ['tags', `t${i}`], rhs: i }));
    loaded.trace.push(
      { seq: 1, t: 5, type: 'tool_call', callId: 1, name: 'tag_all', input: {} },
      { seq: 2, t: 6, type: 'tool_result', callId: 1, durationMs: 1, ok: true, value: null, changes: [{ kind: 'E', path: ['n'], lhs: 1, rhs: 2 }, ...changes] },
    );
    const text = formatRun(loaded, plain);
    expect(text).toMatch(/#1 tag_all \{\}\n.*→ ok.*\n +~ n: 1 → 2\n +\+ tags\.t0: 0\n/);
    expect(text).toContain('… 4 more changes (all in state-diff.json)');
  });

  it('shows the usage the gateway measured and, apart, what the agent reported; no usage line without them', () => {
    const loaded = runningRun();
    expect(formatRun(loaded, plain)).not.toMatch(/^model /m);
    loaded.run.usage = { inputTokens: 1200, outputTokens: 80, requests: 3, source: 'gateway', cachedRequests: 1 };
    loaded.run.reportedUsage = { inputTokens: 5, outputTokens: 1, requests: 1 };
    const text = formatRun(loaded, plain);
    expect(text).toMatch(/^model {7}3 requests \(1 from the cache\) · 1200 input tokens · 80 output tokens \(measured by the gateway\)$/m);
    expect(text).toMatch(/^reported {4}1 request · 5 input tokens · 1 output tokens \(what the agent says, with reportUsage\)$/m);
  });

  it('shows each model call in the timeline and the conversation from models.jsonl', () => {
    const loaded = runningRun();
    loaded.trace.push(
      { seq: 1, t: 3, type: 'model_call', requestId: 1, provider: 'openai', endpoint: 'chat/completions', model: 'gpt-x', stream: false, status: 200, durationMs: 340, queuedMs: 12, usage: { inputTokens: 120, outputTokens: 12 } },
      { seq: 2, t: 400, type: 'tool_call', callId: 1, name: 'close_ticket', input: { ticket_id: 't3' } },
      { seq: 3, t: 401, type: 'tool_result', callId: 1, durationMs: 1, ok: true, value: 'closed' },
      { seq: 4, t: 402, type: 'model_call', requestId: 2, provider: 'openai', endpoint: 'chat/completions', model: 'gpt-x', stream: true, status: 200, durationMs: 5, queuedMs: 0, usage: { inputTokens: 150, outputTokens: 3 }, cached: true },
    );
    loaded.models = [
      {
        requestId: 1,
        endpoint: 'chat/completions',
        status: 200,
        request: { model: 'gpt-x', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Close t3.' }] },
        response: { choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'close_ticket', arguments: '{"ticket_id":"t3"}' } }] } }] },
      },
      {
        requestId: 2,
        endpoint: 'chat/completions',
        status: 200,
        stream: true,
        request: {
          model: 'gpt-x',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Close t3.' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'close_ticket', arguments: '{"ticket_id":"t3"}' } }] },
            { role: 'tool', tool_call_id: 'c1', content: 'closed' },
          ],
        },
        response: 'data: {"choices":[{"delta":{"content":"Clo"}}]}\n\ndata: {"choices":[{"delta":{"content":"sed."}}]}\n\ndata: [DONE]\n\n',
      },
    ];
    const text = formatRun(loaded, plain);
    expect(text).toMatch(/ +3ms {2}model gpt-x openai chat\/completions #1 → 200 120 in \/ 12 out · 340ms \(queued 12ms\)\n/);
    expect(text).toMatch(/model gpt-x openai chat\/completions #2 → 200 150 in \/ 3 out · 5ms · stream · cached/);
    const conversation = text.slice(text.indexOf('Conversation'));
    expect(conversation.split('\n').slice(1, 6)).toEqual([
      '  [system] Be brief.',
      '  [user] Close t3.',
      '  [model #1] → close_ticket({"ticket_id":"t3"})',
      '  [tool] closed',
      '  [model #2] Closed.',
    ]);
  });

  /** A finished run: 690 ms in all, of which the agent ran 13 ms. */
  function finishedRun(extra: Partial<LoadedRun['run']> = {}): LoadedRun {
    const loaded = runningRun();
    Object.assign(loaded.run, { status: 'passed', termination: 'returned', durationMs: 690, agentTimeMs: 12.9, toolTimeMs: 0.1, ...extra });
    loaded.trace.push({ seq: 1, t: 680, type: 'agent_returned', output: '3' });
    loaded.result = {
      version: 1,
      runId: '01TEST',
      taskId: 'demo/task',
      status: 'passed',
      score: 1,
      checks: [
        { name: 'count', pass: true },
        { name: 'mayChange', pass: true, gate: true, expected: [] },
      ],
      output: '3',
      outputTruncated: false,
      termination: 'returned',
      diagnosis: [{ code: 'ungrounded_answer', seq: 1, message: 'the agent answered without a single successful tool call' }],
    };
    loaded.diff = [];
    return loaded;
  }

  it('says where a run\'s time went: start-up, world, agent, grading, artifacts', () => {
    const text = formatRun(finishedRun({ phases: { worldMs: 4, startupMs: 640, agentMs: 13, gradingMs: 21 } }), plain);
    expect(text).toMatch(/^time {8}690ms total · worker start-up 640ms · world 4ms · agent 13ms \(thinking 13ms, tools 0\.10ms\) · grading 21ms · artifacts 12ms$/m);
    // A run recorded before phases existed still accounts for the rest.
    expect(formatRun(finishedRun(), plain)).toMatch(/^time {8}690ms total · agent 13ms \(thinking 13ms, tools 0\.10ms\) · start-up, world, grading and artifacts 677ms$/m);
  });

  it('marks a pass whose answer had nothing behind it as suspicious, and points findings at the timeline', () => {
    const text = formatRun(finishedRun(), plain);
    expect(text).toMatch(/^demo\/task {2}PASSED {2}score 1\.00 {2}⚠ suspicious: the agent answered without a single successful tool call \(--strict fails it\)$/m);
    expect(text).toMatch(/^ {2}ungrounded_answer \(the answer\): the agent answered/m);
    expect(text).not.toMatch(/event \d/);
    expect(text).toMatch(/✓ mayChange {2}\(a gate: not scored while it holds\)/);
  });
});
