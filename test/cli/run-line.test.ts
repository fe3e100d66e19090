import { describe, expect, it } from 'vitest';
import { formatLine } from '../../src/cli/run-line.js';
import { createStyle } from '../../src/inspect/style.js';
import type { RunResult } from '../../src/types.js';

const plain = createStyle({ isTTY: false });

describe('formatLine', () => {
  it("indents the lines after the first of a multi-line finding or error under it, not at the left edge", () => {
    const r: RunResult = {
      runId: '01TEST',
      runDir: '/tmp/x',
      taskId: 'shop/refund',
      status: 'failed',
      score: 0,
      termination: 'threw',
      checks: [{ name: 'refunded', pass: false }],
      output: null,
      diagnosis: [{ code: 'threw', message: 'the agent threw: gave up:\n  no order nope\n' }],
      error: { code: 'agent_exit', message: 'first\r\nsecond' },
      durationMs: 12,
      toolCalls: 1,
    };
    expect(formatLine(r, plain).split('\n')).toEqual([
      '✗ shop/refund  failed  0.00  threw  1 call  12ms',
      '    agent_exit: first',
      '      second',
      '    threw: the agent threw: gave up:',
      '        no order nope',
      '    ✗ refunded',
      '    → silo show 01TEST',
    ]);
  });
});
