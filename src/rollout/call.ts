/**
 * The tool-call path as the host runs it for each call from the agent: abort/limit check →
 * (lookup → validation → run → clone, in the toolbox) → a `tool_call` and a `tool_result`
 * event sharing a callId, with durationMs. Nothing is ever thrown into the agent.
 */
import { performance } from 'node:perf_hooks';
import type { CallMessage } from '../pool/channel.js';
import { CALLS_WAITING_MAX_CHARS } from '../options.js';
import type { StateChange, ToolResult } from '../types.js';
import type { Change } from './diff.js';
import type { LimitGuard } from './limits.js';
import type { Toolbox } from './tools.js';
import { round, type Trace } from './trace.js';

export interface CallPath {
  /** The call's result: at once when the tool answered at once, else a promise of it. Never throws. */
  handle(msg: CallMessage): ToolResult | Promise<ToolResult>;
  /**
   * A call that came while too much was already waiting for the host (CALLS_WAITING_MAX_CHARS):
   * refused unrun and counted; the first is recorded.
   */
  busy(msg: CallMessage, waitingChars: number): ToolResult;
  /** Sum of the durations of calls that ran, ms. */
  readonly toolTimeMs: number;
}

/** With a tracked world, each tool_result of a call that changed it carries its `changes`. */
export function createCallPath(guard: LimitGuard, toolbox: Toolbox, trace: Trace): CallPath {
  const { tracker } = toolbox;
  let callId = 0;
  let refusalRecorded = false;
  let busyRecorded = false;
  let toolTimeMs = 0;

  const record = (name: string, input: unknown, result: ToolResult, durationMs: number): void => {
    const id = ++callId;
    trace.add({ type: 'tool_call', callId: id, name, input });
    trace.add({ type: 'tool_result', callId: id, durationMs, ...result });
  };

  return {
    get toolTimeMs() {
      return round(toolTimeMs);
    },
    busy(msg, waitingChars) {
      guard.refusedCalls++;
      const message = `call refused: ${waitingChars} characters of this agent's calls were already waiting for their turn (the host keeps at most ${CALLS_WAITING_MAX_CHARS}); wait for results before sending more`;
      const result: ToolResult = { ok: false, error: { code: 'limit_exceeded', message, limit: 'callsWaiting' } };
      if (!busyRecorded) record(msg.name, { omitted: 'not kept: too many calls were waiting' }, result, 0);
      busyRecorded = true;
      return result;
    },
    handle(msg) {
      // Set by the worker or, for inputs it did not measure honestly, by the host's channel.
      const { inputError } = msg;
      const oversized = inputError?.kind === 'too_large';
      const refusal = guard.admit(oversized ? { bytes: Number(msg.inputBytes) || 0 } : undefined);
      if (refusal) {
        // Refused calls run nothing and are counted. After a limit fired only the first is
        // recorded (a flood stays one line); each oversized input is recorded, without it.
        if (oversized || !refusalRecorded) {
          record(msg.name, inputError ? { omitted: describeProblem(inputError) } : (msg.input ?? null), refusal, 0);
        }
        if (!oversized) refusalRecorded = true;
        return refusal;
      }
      if (inputError) {
        const message = describeProblem(inputError);
        const result: ToolResult = { ok: false, error: { code: 'invalid_input', message: `invalid input for ${msg.name}: ${message}` } };
        record(msg.name, { omitted: message }, result, 0);
        return result;
      }
      const id = ++callId;
      trace.add({ type: 'tool_call', callId: id, name: msg.name, input: msg.input });
      const scope = tracker?.beginCall();
      const start = performance.now();
      const finish = (result: ToolResult): ToolResult => {
        const durationMs = performance.now() - start;
        toolTimeMs += durationMs;
        // Found after the duration is taken (the copies a tool's writes take count as the tool's).
        const changes = scope ? changesOf(() => tracker?.endCall(scope)) : undefined;
        const event = { type: 'tool_result' as const, callId: id, durationMs: round(durationMs), ...result };
        trace.add(changes && changes.length > 0 ? { ...event, changes: changes as StateChange[] } : event);
        return result;
      };
      const result = toolbox.call(msg.name, msg.input);
      return result instanceof Promise ? result.then(finish) : finish(result);
    },
  };
}

/** A call's changes; none (rather than a failed call) if they cannot be worked out. */
function changesOf(find: () => StateChange[] | Change[] | undefined): StateChange[] | undefined {
  try {
    return find() as StateChange[] | undefined;
  } catch {
    return undefined;
  }
}

/** The worker's account of a bad input is not trusted to be text. */
function describeProblem(problem: NonNullable<CallMessage['inputError']>): string {
  return typeof problem.message === 'string' ? problem.message : 'the input could not be sent';
}
