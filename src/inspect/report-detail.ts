/**
 * One run as the HTML report shows it: the header, the diagnosis, a timeline where each call
 * carries its input, its result or error, its duration and the changes it made, the run's state
 * diff, and the checks. Every value becomes a short text (JSON, clipped), so the report's size
 * follows the caps, not what an agent chose to send.
 */
import { changePath, type Change } from '../rollout/diff.js';
import type { Diagnosis, ErrorInfo, RunRecord, RunStatus, Termination, TraceEvent } from '../types.js';
import type { LoadedRun } from './runs.js';
import { findingPlace } from './diagnose.js';
import { timeLine } from './show.js';
import { conversationOf } from './conversation.js';

/** Messages of a run's conversation the report keeps (the last ones). */
const CONVERSATION_MESSAGES = 100;

/** Caps on what one run's detail may hold. */
export interface DetailCaps {
  /** Characters of one value (an input, a result, an expected or actual, a log line, the output). */
  maxValueChars: number;
  /** Timeline events kept: the first ones and the last few, with a count of those left out. */
  maxEvents: number;
  /** Change records kept per tool result, and for the run's state diff. */
  maxChanges: number;
}

/** One change to the world: `+` added, `-` removed, `~` edited. */
export interface ChangeView {
  op: '+' | '-' | '~';
  /** Dot-separated path, array indexes included. */
  path: string;
  before?: string;
  after?: string;
}

/** A tool call and what came of it. */
export interface CallView {
  kind: 'call';
  seq: number;
  /** ms since the run started. */
  t: number;
  callId: number;
  name: string;
  input: string;
  /** Absent when the run ended before the call returned. */
  ok?: boolean;
  /** The value (JSON text) of a call that succeeded. */
  value?: string;
  /** The error code and message of a call that failed. */
  error?: { code: string; message: string };
  durationMs?: number;
  /** Changes this call made, when the trace records them. */
  changes?: ChangeView[];
  /** Changes left out by the cap. */
  moreChanges?: number;
}

/** Any other event, as one line of text. */
export interface EventView {
  /** `gap` stands where events were left out by the cap (its seq is that of the next event kept). */
  kind: 'start' | 'log' | 'model' | 'limit' | 'returned' | 'threw' | 'finished' | 'gap' | 'said' | 'heard' | 'user_error';
  seq: number;
  t: number;
  text: string;
}

/** A check, its sides as text. */
export interface CheckView {
  name: string;
  pass: boolean;
  /** A gate (mayChange, grounded): scored only when it fails. */
  gate?: true;
  expected?: string;
  actual?: string;
  message?: string;
}

/** Everything the report shows about one run. */
export interface RunDetail {
  runId: string;
  taskId: string;
  agent: string;
  status: RunStatus;
  score: number | null;
  termination: Termination | null;
  startedAt: string;
  durationMs: number | null;
  /** Time the agent spent outside tools, ms. */
  agentTimeMs: number | null;
  toolTimeMs: number;
  toolCalls: number;
  refusedCalls: number;
  seed: number;
  /** Where the time went, in words (see timeLine in show.ts). */
  time?: string;
  error?: { code: string; message: string };
  diagnosis: Diagnosis[];
  timeline: (CallView | EventView)[];
  /** Events left out of the middle of the timeline by the cap. */
  omittedEvents: number;
  /** Null while the run had no diff yet. */
  diff: ChangeView[] | null;
  moreDiff: number;
  checks: CheckView[];
  output: string | null;
  outputTruncated: boolean;
  /** Model usage the gateway measured (and what the agent reported, apart). */
  usage?: { inputTokens: number; outputTokens: number; requests: number };
  reportedUsage?: { inputTokens: number; outputTokens: number; requests: number };
  /** The simulated user, in one line (mode, messages, how it ended), when the task has one. */
  user?: string;
  /** The LLM user's model usage, apart from the agent's. */
  userUsage?: { inputTokens: number; outputTokens: number; requests: number };
  /** The model's side of the run, from models.jsonl: each message's role and text (the last ones). */
  conversation?: { role: string; text: string; requestId: number }[];
  /** Messages left out of the conversation by the cap. */
  omittedMessages?: number;
}

/** How many of the kept events come from the end of the trace (the rest from the start). */
const TAIL_SHARE = 0.2;

/** The detail of a loaded run, within the caps. */
export function runDetail(loaded: LoadedRun, caps: DetailCaps): RunDetail {
  const { run, result } = loaded;
  const { kept, omitted } = keepEvents(loaded.trace, caps.maxEvents);
  const diff = loaded.diff === null ? null : loaded.diff.slice(0, caps.maxChanges).map((c) => changeView(c, caps.maxValueChars));
  const error = result?.error ?? errorOf(loaded.trace);
  return {
    runId: run.runId,
    taskId: run.taskId,
    agent: run.agent,
    status: result?.status ?? run.status,
    score: result?.score ?? null,
    termination: result?.termination ?? run.termination,
    startedAt: run.startedAt,
    durationMs: run.durationMs,
    agentTimeMs: run.agentTimeMs,
    toolTimeMs: run.toolTimeMs,
    toolCalls: run.toolCalls,
    refusedCalls: run.refusedCalls,
    seed: run.seed,
    ...(run.durationMs === null ? {} : { time: timeLine(run) }),
    ...(error ? { error: { code: error.code, message: clip(error.message, caps.maxValueChars) } } : {}),
    // Each finding names its place as the timeline does (`call #3`, `the answer`).
    diagnosis: (result?.diagnosis ?? []).map((d) => {
      const at = d.at ?? findingPlace(d.seq, loaded.trace);
      return { ...d, message: clip(d.message, caps.maxValueChars), ...(at === undefined ? {} : { at }) };
    }),
    timeline: withGap(timeline(kept, loaded.trace, caps), caps.maxEvents - Math.floor(caps.maxEvents * TAIL_SHARE), omitted),
    omittedEvents: omitted,
    diff,
    moreDiff: loaded.diff === null ? 0 : Math.max(0, loaded.diff.length - caps.maxChanges),
    checks: (result?.checks ?? []).map((c) => ({
      name: clip(c.name, caps.maxValueChars),
      pass: c.pass,
      ...(c.gate === true ? { gate: true as const } : {}),
      ...('expected' in c ? { expected: text(c.expected, caps.maxValueChars) } : {}),
      ...('actual' in c ? { actual: text(c.actual, caps.maxValueChars) } : {}),
      ...(c.message === undefined ? {} : { message: clip(c.message, caps.maxValueChars) }),
    })),
    output: result?.output == null ? null : clip(result.output, caps.maxValueChars),
    outputTruncated: result?.outputTruncated === true || (result?.output != null && result.output.length > caps.maxValueChars),
    ...(run.usage ? { usage: { inputTokens: run.usage.inputTokens, outputTokens: run.usage.outputTokens, requests: run.usage.requests } } : {}),
    ...(run.reportedUsage ? { reportedUsage: { ...run.reportedUsage } } : {}),
    ...(run.user ? { user: userLine(run.user) } : {}),
    ...(run.userUsage ? { userUsage: { inputTokens: run.userUsage.inputTokens, outputTokens: run.userUsage.outputTokens, requests: run.userUsage.requests } } : {}),
    ...conversationView(loaded, caps.maxValueChars),
  };
}

function userLine(u: NonNullable<RunRecord['user']>): string {
  const how = u.mode === 'solo' ? 'solo (the agent got the instruction instead)' : u.mode === 'model' ? `LLM user ${u.model ?? ''}` : 'scripted user';
  const ended = u.endedBy === 'user' ? ' · ended by the user' : u.endedBy === 'max_turns' ? ' · ended at maxTurns' : '';
  return `${how}${u.messages === undefined ? '' : ` · ${u.messages} messages`}${ended}`;
}

function conversationView(loaded: LoadedRun, max: number): Pick<RunDetail, 'conversation' | 'omittedMessages'> {
  const all = conversationOf(loaded.models ?? []);
  if (all.length === 0) return {};
  const kept = all.slice(-CONVERSATION_MESSAGES).map((m) => ({ role: m.role, text: clip(m.text, max), requestId: m.requestId }));
  return { conversation: kept, ...(all.length > kept.length ? { omittedMessages: all.length - kept.length } : {}) };
}

/** The first events and the last few, when there are more than `max`; `seq` keeps their place. */
function keepEvents(trace: readonly TraceEvent[], max: number): { kept: TraceEvent[]; omitted: number } {
  // tool_result events are shown with their call, so they do not count against the cap.
  const shown = trace.filter((e) => e.type !== 'tool_result');
  if (shown.length <= max) return { kept: shown, omitted: 0 };
  const tail = Math.floor(max * TAIL_SHARE);
  return { kept: [...shown.slice(0, max - tail), ...(tail > 0 ? shown.slice(-tail) : [])], omitted: shown.length - max };
}

/** Marks the place of the events left out, after the first `head` views. */
function withGap(views: (CallView | EventView)[], head: number, omitted: number): (CallView | EventView)[] {
  if (omitted === 0) return views;
  const next = views[head];
  const gap: EventView = { kind: 'gap', seq: next?.seq ?? -1, t: next?.t ?? 0, text: `${omitted} events left out (see trace.jsonl)` };
  return [...views.slice(0, head), gap, ...views.slice(head)];
}

type ResultEvent = Extract<TraceEvent, { type: 'tool_result' }>;

function timeline(kept: readonly TraceEvent[], trace: readonly TraceEvent[], caps: DetailCaps): (CallView | EventView)[] {
  const results = new Map<number, ResultEvent>();
  for (const e of trace) if (e.type === 'tool_result') results.set(e.callId, e);
  const max = caps.maxValueChars;
  const views: (CallView | EventView)[] = [];
  for (const e of kept) {
    const at = { seq: e.seq, t: e.t };
    switch (e.type) {
      case 'tool_call':
        views.push(callView(e, results.get(e.callId), caps));
        break;
      case 'run_started':
        views.push({ kind: 'start', ...at, text: `started (seed ${e.seed})` });
        break;
      case 'agent_log':
        views.push({ kind: 'log', ...at, text: `${e.stream ? `[${e.stream}] ` : ''}${clip(e.message, max)}${e.data === undefined ? '' : ` ${text(e.data, max)}`}` });
        break;
      case 'limit_exceeded':
        views.push({ kind: 'limit', ...at, text: `limit ${e.limit}: ${clip(e.message, max)}` });
        break;
      case 'model_call': {
        const facts = [
          e.status === null ? 'no answer' : `HTTP ${e.status}`,
          `${e.usage.inputTokens} in / ${e.usage.outputTokens} out`,
          `${Math.round(e.durationMs)} ms${e.queuedMs >= 1 ? ` (queued ${Math.round(e.queuedMs)} ms)` : ''}`,
          ...(e.stream ? ['stream'] : []),
          ...(e.cached ? ['cached'] : []),
          ...(e.retries ? [`${e.retries} retries`] : []),
        ];
        const who = e.actor === 'user' ? 'user model' : 'model';
        views.push({ kind: 'model', ...at, text: `${who} ${clip(e.model ?? '?', max)} · ${e.provider} ${e.endpoint} #${e.requestId} · ${facts.join(' · ')}${e.error ? ` · ${clip(e.error, max)}` : ''}` });
        break;
      }
      case 'agent_returned':
        views.push({ kind: 'returned', ...at, text: `returned ${e.output === null ? 'null' : text(e.output, max)}${e.outputError ? ` (${clip(e.outputError, max)})` : ''}` });
        break;
      case 'agent_threw':
        views.push({ kind: 'threw', ...at, text: `${e.error.code}: ${clip(e.error.message, max)}` });
        break;
      case 'user_message': {
        const end = e.ended === undefined ? '' : e.ended === 'user' ? ' (the user ended the conversation)' : ' (the last reply maxTurns allows)';
        views.push({ kind: e.from === 'user' ? 'heard' : 'said', ...at, text: `${clip(e.text, max)}${end}` });
        break;
      }
      case 'user_error':
        views.push({ kind: 'user_error', ...at, text: `the simulated user failed: ${clip(e.message, max)}` });
        break;
      case 'run_finished':
        views.push({ kind: 'finished', ...at, text: `finished: ${e.status}, ${e.termination}` });
        break;
      case 'tool_result':
        break;
    }
  }
  return views;
}

function callView(call: Extract<TraceEvent, { type: 'tool_call' }>, result: ResultEvent | undefined, caps: DetailCaps): CallView {
  const max = caps.maxValueChars;
  const view: CallView = { kind: 'call', seq: call.seq, t: call.t, callId: call.callId, name: clip(call.name, max), input: text(call.input, max) };
  if (!result) return view;
  view.ok = result.ok;
  view.durationMs = result.durationMs;
  if (result.ok) view.value = text(result.value, max);
  else view.error = { code: result.error.code, message: clip(result.error.message, max) };
  // Per-call changes are recorded by newer traces; older ones have none.
  const changes = (result as { changes?: unknown }).changes;
  if (Array.isArray(changes) && changes.length > 0) {
    view.changes = (changes as Change[]).slice(0, caps.maxChanges).map((c) => changeView(c, max));
    if (changes.length > caps.maxChanges) view.moreChanges = changes.length - caps.maxChanges;
  }
  return view;
}

/** A deep-diff record as a line: what changed where, before and after. */
export function changeView(change: Change, max: number): ChangeView {
  const path = changePath(change).join('.');
  const side = (value: unknown) => text(value, max);
  const c = change.kind === 'A' ? (change.item as Change) : change;
  switch (c.kind) {
    case 'N':
      return { op: '+', path, after: side(c.rhs) };
    case 'D':
      return { op: '-', path, before: side(c.lhs) };
    default: {
      const edit = c as { lhs?: unknown; rhs?: unknown };
      return { op: '~', path, before: side(edit.lhs), after: side(edit.rhs) };
    }
  }
}

function errorOf(trace: readonly TraceEvent[]): ErrorInfo | undefined {
  const threw = trace.find((e) => e.type === 'agent_threw');
  return threw?.type === 'agent_threw' ? threw.error : undefined;
}

/** A value (read back from JSON) as JSON text, clipped; `undefined` as the word. */
export function text(value: unknown, max: number): string {
  return clip(JSON.stringify(value) ?? 'undefined', max);
}

/** The first `max` characters of a text, and how long it was when it is longer. */
export function clip(value: string, max: number): string {
  if (value.length <= max) return value;
  // Never cut a surrogate pair in two.
  let end = max;
  const code = value.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${value.slice(0, end)}… (${value.length} chars)`;
}
