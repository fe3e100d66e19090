/**
 * A run made readable: a header (task, agent, status, score, termination, think/tool split),
 * then the timeline (each call with its input, result or error, duration and the changes it
 * made), the diff, and the checks with expected and actual.
 */
import type { Style } from './style.js';
import { changePath, type Change } from '../rollout/diff.js';
import type { Check, RunRecord, TraceEvent } from '../types.js';
import { findingPlace, suspicion } from './diagnose.js';
import type { LoadedRun } from './runs.js';
import { conversationOf } from './conversation.js';
import { ms } from '../time.js';

/** Messages of the conversation shown (the last ones; models.jsonl holds all), and characters of each. */
const CONVERSATION_MESSAGES = 60;
const MESSAGE_CHARS = 600;

/** Longest JSON shown inline for an input, a value or a check side. */
const INLINE_CHARS = 240;
/** Changes listed under one call in the timeline. */
const CHANGES_PER_CALL = 20;

export function formatRun(loaded: LoadedRun, s: Style): string {
  const { run, result } = loaded;
  const out: string[] = [];
  const status = result?.status ?? run.status;
  const suspicious = suspicion(status, result?.diagnosis ?? []);
  const paint = suspicious ? s.yellow : status === 'passed' ? s.green : status === 'failed' ? s.red : s.yellow;
  out.push(
    `${s.bold(run.taskId)}  ${paint(status.toUpperCase())}${result?.score == null ? '' : `  score ${result.score.toFixed(2)}`}` +
      (suspicious ? `  ${s.yellow(`⚠ suspicious: ${suspicious.message} (--strict fails it)`)}` : ''),
  );
  out.push(`${s.dim('run')}         ${run.runId}  ${s.dim(loaded.dir)}`);
  out.push(`${s.dim('agent')}       ${run.agent}`);
  out.push(`${s.dim('termination')} ${run.termination ?? 'running'}`);
  if (run.regradedAt) out.push(`${s.dim('regraded')}    ${run.regradedAt} (the earlier results are kept as result.<n>.json)`);
  if (run.durationMs !== null) out.push(`${s.dim('time')}        ${timeLine(run)}`);
  out.push(`${s.dim('tool calls')}  ${run.toolCalls}${run.refusedCalls > 0 ? ` (+${run.refusedCalls} refused)` : ''}  ${s.dim(`seed ${run.seed}`)}`);
  if (run.usage) {
    const u = run.usage;
    const extra = [u.cachedRequests ? `${u.cachedRequests} from the cache` : '', u.refusedRequests ? `${u.refusedRequests} refused` : ''].filter(Boolean).join(', ');
    out.push(`${s.dim('model')}       ${u.requests} request${u.requests === 1 ? '' : 's'}${extra ? ` (${extra})` : ''} · ${u.inputTokens} input tokens · ${u.outputTokens} output tokens${u.source === 'gateway' ? s.dim(' (measured by the gateway)') : ''}`);
  }
  if (run.user) {
    const u = run.user;
    const how = u.mode === 'solo' ? 'solo (the task has a user; the agent got the instruction instead)' : u.mode === 'model' ? `LLM user ${u.model ?? ''}` : 'scripted user';
    const said = u.messages === undefined ? '' : ` · ${u.messages} message${u.messages === 1 ? '' : 's'}`;
    const ended = u.endedBy === 'user' ? ' · ended by the user' : u.endedBy === 'max_turns' ? ' · ended at maxTurns' : '';
    const waited = run.userTimeMs === undefined ? '' : ` · replies took ${ms(run.userTimeMs)}`;
    out.push(`${s.dim('user')}        ${how}${said}${ended}${waited}`);
  }
  if (run.userUsage) {
    const u = run.userUsage;
    out.push(`${s.dim('user model')}  ${u.requests} request${u.requests === 1 ? '' : 's'} · ${u.inputTokens} input tokens · ${u.outputTokens} output tokens ${s.dim('(the simulated user: not in the agent\'s usage)')}`);
  }
  if (run.reportedUsage) {
    const u = run.reportedUsage;
    out.push(`${s.dim('reported')}    ${u.requests} request${u.requests === 1 ? '' : 's'} · ${u.inputTokens} input tokens · ${u.outputTokens} output tokens ${s.dim('(what the agent says, with reportUsage)')}`);
  }
  if (loaded.abandoned) {
    out.push(s.yellow(`this run crashed: ${loaded.abandoned}; its files stop where that process did`));
  } else if (run.status === 'running') {
    out.push(s.yellow('this run has not finished: it is still going, or the process running it stopped before the end'));
  }
  if (result?.error) out.push(`${s.yellow('error')}       ${result.error.code}: ${hang(result.error.message, 14)}`);

  const diagnosis = result?.diagnosis ?? [];
  if (diagnosis.length > 0) {
    out.push('', s.bold('Diagnosis'));
    for (const d of diagnosis) {
      const paint = d.code === 'self_corrected' ? s.green : s.yellow;
      // Pointed at as the timeline below names it: `call #3` is the line `#3 <tool>`.
      const at = d.at ?? findingPlace(d.seq, loaded.trace);
      out.push(`  ${paint(d.code)}${at === undefined ? '' : s.dim(` (${at})`)}: ${d.message}`);
    }
  }

  out.push('', s.bold('Timeline'));
  out.push(...formatTimeline(loaded.trace, s));

  const conversation = conversationOf(loaded.models ?? []);
  if (conversation.length > 0) {
    out.push('', s.bold('Conversation') + s.dim(' (from models.jsonl)'));
    const shown = conversation.slice(-CONVERSATION_MESSAGES);
    if (shown.length < conversation.length) out.push(s.dim(`  … ${conversation.length - shown.length} earlier messages (all in models.jsonl)`));
    for (const m of shown) {
      const label = m.role === 'assistant' ? s.cyan(`[model #${m.requestId}]`) : s.dim(`[${m.role}]`);
      out.push(`  ${label} ${indentAfterFirst(clip(m.text, MESSAGE_CHARS), 4)}`);
    }
  }

  out.push('', s.bold('Changes to the world'));
  out.push(...formatDiff(loaded.diff, s));

  out.push('', s.bold('Checks'));
  out.push(...formatChecks(result?.checks ?? [], s));
  if (result && result.output !== null) {
    out.push('', s.bold('Output') + (result.outputTruncated ? s.yellow(' (truncated)') : ''), indent(clip(result.output, 2000)));
  }
  return out.join('\n');
}

function formatTimeline(trace: readonly TraceEvent[], s: Style): string[] {
  const lines: string[] = [];
  const results = new Map<number, Extract<TraceEvent, { type: 'tool_result' }>>();
  for (const e of trace) if (e.type === 'tool_result') results.set(e.callId, e);
  for (const e of trace) {
    const at = s.dim(`${ms(e.t).padStart(9)}`);
    switch (e.type) {
      case 'run_started':
        lines.push(`${at}  started (seed ${e.seed})`);
        break;
      case 'tool_call': {
        const r = results.get(e.callId);
        lines.push(`${at}  ${s.cyan(`#${e.callId} ${e.name}`)} ${inline(e.input)}`);
        if (!r) lines.push(`             ${s.yellow('… no result (the run ended first)')}`);
        else if (r.ok) lines.push(`             ${s.green('→ ok')} ${s.dim(`(${ms(r.durationMs)})`)} ${inline(r.value)}`);
        else lines.push(`             ${s.red(`→ ${r.error.code}`)} ${s.dim(`(${ms(r.durationMs)})`)} ${hang(r.error.message, RESULT_HANG)}`);
        if (r?.changes && r.changes.length > 0) {
          const shown = r.changes.slice(0, CHANGES_PER_CALL) as Change[];
          lines.push(...formatDiff(shown, s).map((l) => `           ${l}`));
          const more = r.changes.length - shown.length;
          if (more > 0) lines.push(`             ${s.dim(`… ${more} more change${more === 1 ? '' : 's'} (all in state-diff.json)`)}`);
        }
        break;
      }
      case 'agent_log':
        lines.push(`${at}  ${s.dim(e.stream ? `[${e.stream}]` : '[log]')} ${hang(clip(e.message, INLINE_CHARS), EVENT_HANG)}${e.data === undefined ? '' : ` ${inline(e.data)}`}`);
        break;
      case 'limit_exceeded':
        lines.push(`${at}  ${s.yellow(`limit ${e.limit}`)}: ${hang(e.message, EVENT_HANG)}`);
        break;
      case 'model_call':
        lines.push(`${at}  ${modelCallLine(e, s)}`);
        break;
      case 'agent_returned':
        lines.push(`${at}  ${s.bold('returned')} ${e.output === null ? s.dim('null') : inline(e.output)}${e.outputError ? s.yellow(` (${e.outputError})`) : ''}`);
        break;
      case 'agent_threw':
        lines.push(`${at}  ${s.red(e.error.code === 'agent_load_error' ? 'did not load' : e.error.code === 'crashed' || e.error.code === 'agent_exit' ? 'crashed' : 'threw')}: ${hang(e.error.message, EVENT_HANG)}`);
        break;
      case 'user_message': {
        // The dialogue with the simulated user, interleaved with the calls it led to.
        const who = e.from === 'user' ? s.bold('user  ›') : s.cyan('agent ›');
        const end = e.ended === undefined ? '' : s.dim(e.ended === 'user' ? '  (the user ended the conversation)' : '  (the last reply maxTurns allows)');
        lines.push(`${at}  ${who} ${indentAfterFirst(clip(e.text, MESSAGE_CHARS), 21)}${end}`);
        break;
      }
      case 'user_error':
        lines.push(`${at}  ${s.red('user failed')}: ${hang(e.message, EVENT_HANG)}`);
        break;
      case 'run_finished':
        lines.push(`${at}  finished: ${e.status}, ${e.termination}`);
        break;
      case 'tool_result':
        break;
    }
  }
  return lines;
}

/** A model request in one line: model, status, tokens, latency (and the wait for a slot), cached. */
export function modelCallLine(e: Extract<TraceEvent, { type: 'model_call' }>, s: Style): string {
  const who = e.actor === 'user' ? 'user model' : 'model';
  const status = e.status === null ? s.red('no answer') : e.status >= 400 ? s.red(String(e.status)) : s.green(String(e.status));
  const parts = [
    `${e.usage.inputTokens} in / ${e.usage.outputTokens} out`,
    `${ms(e.durationMs)}${e.queuedMs >= 1 ? ` (queued ${ms(e.queuedMs)})` : ''}`,
    ...(e.stream ? ['stream'] : []),
    ...(e.cached ? ['cached'] : []),
    ...(e.retries ? [`${e.retries} retr${e.retries === 1 ? 'y' : 'ies'}`] : []),
  ];
  const error = e.error ? ` ${s.yellow(clip(e.error, INLINE_CHARS))}` : '';
  return `${s.bold(`${who} ${e.model ?? '?'}`)} ${s.dim(`${e.provider} ${e.endpoint} #${e.requestId}`)} → ${status} ${s.dim(parts.join(' · '))}${error}`;
}

function indentAfterFirst(text: string, spaces: number): string {
  return text.split('\n').join(`\n${' '.repeat(spaces)}`);
}

/**
 * Where the continuation lines of a multi-line message start: two columns right of the text of
 * its event (after the 9-column time and two spaces), or of a call's result (`→ ...`), so the time
 * column stays empty but for the events' own lines.
 */
const EVENT_HANG = 13;
const RESULT_HANG = 15;

/** A message of several lines (a stack, a tool's error): its lines after the first indented, blank ones at the end dropped. */
function hang(text: string, spaces: number): string {
  return text
    .replace(/\s+$/, '')
    .split(/\r?\n/)
    .join(`\n${' '.repeat(spaces)}`);
}

function formatDiff(diff: readonly Change[] | null, s: Style): string[] {
  if (diff === null) return [s.dim('  (no diff recorded yet)')];
  if (diff.length === 0) return [s.dim('  none')];
  return diff.map((c) => {
    const path = changePath(c).join('.');
    switch (c.kind) {
      case 'E':
        return `  ${s.yellow('~')} ${path}: ${inline(c.lhs)} → ${inline(c.rhs)}`;
      case 'N':
        return `  ${s.green('+')} ${path}: ${inline(c.rhs)}`;
      case 'D':
        return `  ${s.red('-')} ${path}: ${inline(c.lhs)}`;
      case 'A': {
        const item = c.item;
        if (item.kind === 'N') return `  ${s.green('+')} ${path}: ${inline(item.rhs)}`;
        if (item.kind === 'D') return `  ${s.red('-')} ${path}: ${inline(item.lhs)}`;
        return `  ${s.yellow('~')} ${path}: ${inline((item as { lhs?: unknown }).lhs)} → ${inline((item as { rhs?: unknown }).rhs)}`;
      }
    }
  });
}

function formatChecks(checks: readonly Check[], s: Style): string[] {
  if (checks.length === 0) return [s.dim('  none (the run was not graded)')];
  const lines: string[] = [];
  for (const c of checks) {
    const gate = c.gate === true && c.pass ? s.dim('  (a gate: not scored while it holds)') : '';
    lines.push(`  ${c.pass ? s.green('✓') : s.red('✗')} ${c.name}${gate}`);
    if (!c.pass) {
      if ('expected' in c) lines.push(`      expected ${inline(c.expected)}`);
      if ('actual' in c) lines.push(`      actual   ${inline(c.actual)}`);
    }
    if (c.message !== undefined && !c.pass) lines.push(`      ${c.message}`);
  }
  return lines;
}

function inline(value: unknown): string {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return clip(text, INLINE_CHARS);
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}

/**
 * Where a run's time went. Agent time alone would leave most of a short run unexplained (the
 * worker starting, the world being built, grading), so each part is named; older runs without
 * `phases` say what the rest was.
 */
export function timeLine(run: RunRecord): string {
  const total = run.durationMs ?? 0;
  const think = run.agentTimeMs ?? 0;
  const tool = run.toolTimeMs;
  const agent = `agent ${ms(think + tool)} (thinking ${ms(think)}, tools ${ms(tool)})`;
  const p = run.phases;
  if (!p) return `${ms(total)} total · ${agent} · start-up, world, grading and artifacts ${ms(Math.max(0, total - think - tool))}`;
  const writing = Math.max(0, total - p.worldMs - p.startupMs - p.agentMs - p.gradingMs);
  return `${ms(total)} total · worker start-up ${ms(p.startupMs)} · world ${ms(p.worldMs)} · ${agent} · grading ${ms(p.gradingMs)} · artifacts ${ms(writing)}`;
}

/** Re-exported for the commands that print durations. */
export { ms };
