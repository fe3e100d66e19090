import { describe, it, expect, vi, afterEach } from 'vitest';
import { LimitGuard, type FiredLimit } from '../../src/rollout/limits.js';
import { resolveLimits } from '../../src/options.js';

function guard(limits: Parameters<typeof resolveLimits>[0]) {
  const fired: FiredLimit[] = [];
  return { guard: new LimitGuard(resolveLimits(limits), (f) => fired.push(f)), fired };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('LimitGuard', () => {
  it('admits calls up to maxToolCalls', () => {
    const { guard: g, fired } = guard({ maxToolCalls: 3 });
    expect([g.admit(), g.admit(), g.admit()]).toEqual([null, null, null]);
    expect(g.toolCalls).toBe(3);
    expect(fired).toEqual([]);
  });

  it('refuses the call past the limit with limit_exceeded and fires tool_call_limit once', () => {
    const { guard: g, fired } = guard({ maxToolCalls: 2 });
    g.admit();
    g.admit();
    const refusal = g.admit();
    expect(refusal).toEqual({
      ok: false,
      error: { code: 'limit_exceeded', message: expect.stringContaining('maxToolCalls') as string, limit: 'maxToolCalls' },
    });
    expect(g.admit()).toMatchObject({ ok: false, error: { code: 'limit_exceeded', limit: 'maxToolCalls' } });
    expect(g.admit()).toMatchObject({ ok: false, error: { code: 'limit_exceeded' } });
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ termination: 'tool_call_limit', limit: 'maxToolCalls' });
    expect(g.fired).toBe(fired[0]);
    expect(g.toolCalls).toBe(2);
    expect(g.refusedCalls).toBe(3);
  });

  it('says "more than 1 call" of a limit of 1, and "calls" of any other', () => {
    const one = guard({ maxToolCalls: 1 });
    one.guard.admit();
    expect(one.guard.admit()).toMatchObject({ error: { message: 'call refused: tool call limit: the agent made more than 1 call (maxToolCalls)' } });
    const two = guard({ maxToolCalls: 2 });
    two.guard.admit();
    two.guard.admit();
    expect(two.fired).toEqual([]);
    expect(two.guard.admit()).toMatchObject({ error: { message: 'call refused: tool call limit: the agent made more than 2 calls (maxToolCalls)' } });
  });

  it('refuses the very first call when maxToolCalls is 0', () => {
    const { guard: g, fired } = guard({ maxToolCalls: 0 });
    expect(g.admit()).toMatchObject({ ok: false, error: { code: 'limit_exceeded' } });
    expect(fired).toHaveLength(1);
    expect(g.toolCalls).toBe(0);
  });

  it('fires timeout when the wall clock runs out, then refuses calls as aborted', async () => {
    const { guard: g, fired } = guard({ timeoutMs: 10 });
    g.startClock();
    expect(g.admit()).toBeNull();
    await vi.waitFor(() => expect(fired).toHaveLength(1), { timeout: 20_000, interval: 5 });
    expect(fired[0]).toMatchObject({ termination: 'timeout', limit: 'timeoutMs' });
    expect(fired[0]!.reason).toContain('10 ms');
    expect(g.admit()).toEqual({
      ok: false,
      error: { code: 'aborted', message: `call refused: ${fired[0]!.reason}`, limit: 'timeoutMs' },
    });
    expect(g.refusedCalls).toBe(1);
  });

  it('does not start the clock before startClock', () => {
    vi.useFakeTimers();
    const { fired } = guard({ timeoutMs: 10 });
    vi.advanceTimersByTime(1_000);
    expect(fired).toEqual([]);
  });

  it('fires at exactly timeoutMs (fake timers)', () => {
    vi.useFakeTimers();
    const { guard: g, fired } = guard({ timeoutMs: 5_000 });
    g.startClock();
    g.startClock(); // a second start does not restart the clock
    vi.advanceTimersByTime(4_999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired.map((f) => f.termination)).toEqual(['timeout']);
  });

  it('lets the first limit win: a later timeout or cancel changes nothing', () => {
    vi.useFakeTimers();
    const { guard: g, fired } = guard({ timeoutMs: 100, maxToolCalls: 0 });
    g.startClock();
    g.admit();
    g.fire({ termination: 'cancelled', limit: 'cancel', reason: 'cancelled' });
    vi.advanceTimersByTime(1_000);
    expect(fired.map((f) => f.termination)).toEqual(['tool_call_limit']);
  });

  it('refuses calls as aborted after a cancel', () => {
    const { guard: g } = guard({});
    g.fire({ termination: 'cancelled', limit: 'cancel', reason: 'cancelled' });
    expect(g.admit()).toMatchObject({ ok: false, error: { code: 'aborted', limit: 'cancel' } });
  });

  it('never fires the timer after stop()', () => {
    vi.useFakeTimers();
    const { guard: g, fired } = guard({ timeoutMs: 10 });
    g.startClock();
    g.stop();
    vi.advanceTimersByTime(1_000);
    expect(fired).toEqual([]);
  });
});
