/**
 * How a run went wrong, in words: rules over the trace, the diff and the checks. Each finding has
 * a stable code and, where one event is to blame, the `seq` of that event in trace.jsonl. A clean
 * passing run has no findings.
 */
import { changePath, type Change } from '../rollout/diff.js';
import { isAllowed } from '../rollout/may-change.js';
import type { Check, Diagnosis, Task, Termination, TraceEvent } from '../types.js';
import { ms } from './show.js';
import { SAID_EXPECTED } from '../define.js';

export interface DiagnoseInput {
  trace: readonly TraceEvent[];
  changes: readonly Change[];
  checks: readonly Check[];
  output: string | null;
  termination: Termination;
  status: 'passed' | 'failed' | 'error';
  /** The task, for its tools' readOnly hints and its solution. */
  task?: Pick<Task, 'environment' | 'solution' | 'mayChange'>;
}

/** Words an answer uses to claim it changed something. */
const CLAIMS_ACTION =
  /\b(closed|cancell?ed|deactivated|activated|assigned|updated|changed|modified|created|deleted|removed|refunded|returned|exchanged|escalated|added|sent|resolved)\b/i;
/**
 * Words that say the work is finished, not that anything changed: "Done. There are 3 pending
 * orders." answers a question that needed no change. They claim an action only in an answer that
 * says nothing else ("Done.", "All done!", "Task completed successfully.").
 */
const CLAIMS_DONE = /\b(done|completed?)\b/i;
/** What a bare claim of being done may hold besides the word (see CLAIMS_DONE). */
const DONE_FILLER = /\b(all|everything|the|this|that|your|task|tasks|request|it|its|s|is|has|have|ve|been|i|now|successfully|as|requested|ok|okay|sure|here|you|go|thanks|thank|done|complete|completed)\b/gi;

type Call = Extract<TraceEvent, { type: 'tool_call' }>;
type Result = Extract<TraceEvent, { type: 'tool_result' }>;

export function diagnose(input: DiagnoseInput): Diagnosis[] {
  const { trace, changes, checks, output, termination, status } = input;
  const findings: Diagnosis[] = [];
  const calls = trace.filter((e): e is Call => e.type === 'tool_call');
  const results = new Map(trace.filter((e): e is Result => e.type === 'tool_result').map((r) => [r.callId, r]));
  const returned = trace.find((e) => e.type === 'agent_returned');

  // The failure Silo exists to catch: an answer with nothing behind it.
  const ungrounded = ungroundedAnswer(trace, changes, output);
  if (ungrounded) findings.push(ungrounded);

  const tools = new Map((input.task?.environment.tools ?? []).map((t) => [t.name, t]));
  const failures = new Map<string, number>();
  for (const [i, call] of calls.entries()) {
    const result = results.get(call.callId);
    if (!result || result.ok) continue;
    const { code, message } = result.error;
    if (code === 'tool_not_found') {
      findings.push({ code: 'hallucinated_tool', seq: call.seq, message: `called ${call.name}, which does not exist` });
    } else if (code === 'invalid_input' && /unknown parameter/.test(message)) {
      const names = [...message.matchAll(/unknown parameter '([^']+)'/g)].map((m) => m[1]);
      findings.push({ code: 'hallucinated_parameter', seq: call.seq, message: `called ${call.name} with parameters it does not take: ${names.join(', ')}` });
    }
    // A failed call followed by a successful one to the same tool (or, for a tool that does not
    // exist, to any tool) is a correction.
    if (code === 'tool_not_found' || code === 'invalid_input' || code === 'tool_error') {
      const fix = calls.slice(i + 1).find((c) => results.get(c.callId)?.ok && (code === 'tool_not_found' || c.name === call.name));
      if (fix) findings.push({ code: 'self_corrected', seq: fix.seq, message: `${call.name} failed (${code}); the agent corrected itself with ${fix.name}` });
    }
    const key = `${call.name}\u0000${JSON.stringify(call.input)}`;
    const times = (failures.get(key) ?? 0) + 1;
    failures.set(key, times);
    if (times === 2) {
      findings.push({ code: 'repeated_failing_call', seq: call.seq, message: `repeated a call that had already failed: ${call.name} with the same input` });
    }
  }

  const lastCall = calls.at(-1);
  const lastResult = lastCall ? results.get(lastCall.callId) : undefined;
  if (status === 'failed' && lastCall && lastResult && !lastResult.ok && returned) {
    findings.push({ code: 'gave_up_after_error', seq: lastCall.seq, message: `the agent stopped after ${lastCall.name} failed (${lastResult.error.code}) and did not recover` });
  }

  const mayChange = checks.find((c) => c.name === 'mayChange' && !c.pass);
  if (mayChange) {
    // The first call whose own changes leave mayChange, when the world's writes were tracked.
    const patterns = input.task?.mayChange ?? [];
    const culprit = [...results.values()].find((r) => r.changes?.some((c) => !isAllowed(changePath(c as Change), patterns)));
    const at = culprit ? calls.find((c) => c.callId === culprit.callId) : undefined;
    findings.push({
      code: 'collateral_damage',
      ...(at ? { seq: at.seq } : {}),
      message: `${mayChange.message ?? 'the agent changed paths the task does not allow'}${at ? ` (first by call #${at.callId} ${at.name})` : ''}`,
    });
  } else if (changes.length > 0 && input.task?.solution && input.task.solution.calls.every((c) => tools.get(c.name)?.readOnly === true)) {
    const first = calls.find((c) => results.get(c.callId)?.changes !== undefined);
    findings.push({
      code: 'collateral_damage',
      ...(first ? { seq: first.seq } : {}),
      message: `the task needed no change to the world, but ${changes.length} change(s) were made${first ? ` (first by call #${first.callId} ${first.name})` : ''}`,
    });
  }

  // Failed checks: those that looked at the answer, those that looked at what the agent told the
  // user (check.said: a wrong answer too, in a conversation), and the rest (the world). Gates
  // (mayChange, grounded) have findings of their own.
  const failed = checks.filter((c) => !c.pass && c.name !== 'mayChange' && c.gate !== true);
  const aboutAnswer = (c: Check): boolean => output !== null && c.actual === output;
  const aboutSaid = (c: Check): boolean => typeof c.expected === 'string' && c.expected.startsWith(SAID_EXPECTED);
  const wrongAnswer = failed.filter(aboutAnswer);
  const notSaid = failed.filter((c) => !aboutAnswer(c) && aboutSaid(c));
  const wrongState = failed.filter((c) => !aboutAnswer(c) && !aboutSaid(c));
  const names = (list: readonly Check[]): string => list.map((c) => c.name).slice(0, 5).join('; ');
  if (wrongState.length > 0) findings.push({ code: 'wrong_final_state', message: `the world is not as expected: ${names(wrongState)}` });
  if (wrongAnswer.length > 0) findings.push({ code: 'wrong_answer', ...(returned ? { seq: returned.seq } : {}), message: `the answer is wrong: ${names(wrongAnswer)}` });
  if (notSaid.length > 0) {
    // At the agent's last message to the user; run solo, its answer (what said-checks read then).
    const lastSaid = trace.findLast((e) => e.type === 'user_message' && e.from === 'agent') ?? returned;
    findings.push({ code: 'wrong_answer', ...(lastSaid ? { seq: lastSaid.seq } : {}), message: `the agent did not tell the user what was expected: ${names(notSaid)}` });
  }

  findings.push(...conversationFindings(trace, calls, results, status, tools));

  const ending = endingFinding(trace, termination);
  if (ending) findings.push(ending);
  // A run that is an error (its user or its model failed, its verifier broke) says nothing of the
  // agent's work: only how the agent ended (it threw, a limit) is worth reading there.
  const kept = status === 'error' ? (ending ? [ending] : []) : findings;
  // In the order of the trace; findings about the whole run last. A finding repeated word for
  // word (the same hallucinated tool called five times) is kept once, where it first happened.
  const times = new Map<string, number>();
  const key = (f: Diagnosis): string => `${f.code}\u0000${f.message}`;
  for (const f of kept) times.set(key(f), (times.get(key(f)) ?? 0) + 1);
  return kept
    .sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity))
    .filter((f) => {
      const n = times.get(key(f));
      times.delete(key(f));
      if (n === undefined) return false;
      if (n > 1) f.message = `${f.message} (${n} times)`;
      return true;
    })
    .map((f) => {
      const at = findingPlace(f.seq, trace);
      return at === undefined ? f : { ...f, at };
    });
}

/** How the agent ended, when that is a finding: a limit, a crash, a throw, a module that did not load. */
function endingFinding(trace: readonly TraceEvent[], termination: Termination): Diagnosis | undefined {
  if (termination === 'timeout' || termination === 'tool_call_limit' || termination === 'model_limit' || termination === 'out_of_memory') {
    const limit = trace.find((e) => e.type === 'limit_exceeded');
    // (the limit's message starts with its own name, "timeout: …", which the finding's code already says)
    const message = limit?.type === 'limit_exceeded' ? limit.message.replace(/^(timeout|tool call limit): /, '') : termination;
    return { code: termination, ...(limit ? { seq: limit.seq } : {}), message };
  }
  const threw = trace.find((e) => e.type === 'agent_threw');
  if (termination === 'crashed') {
    return { code: 'crashed', ...(threw ? { seq: threw.seq } : {}), message: threw?.type === 'agent_threw' ? threw.error.message : "the agent's worker ended before it returned" };
  }
  if (termination === 'threw' || termination === 'load_error') {
    // No answer came: what the agent threw (or why it did not load) is the first thing to read.
    const why = threw?.type === 'agent_threw' ? threw.error.message : 'no error was recorded';
    return { code: termination, ...(threw ? { seq: threw.seq } : {}), message: termination === 'threw' ? `the agent threw: ${why}` : why };
  }
  return undefined;
}

type UserMessage = Extract<TraceEvent, { type: 'user_message' }>;

/**
 * In a conversation: `never_asked`, a failed run whose agent changed the world before the user had
 * answered anything (it acted on the opening line alone); `user_gave_up`, a failed run whose user
 * ended the conversation (a stop token, or maxTurns) with the task not done.
 */
function conversationFindings(
  trace: readonly TraceEvent[],
  calls: readonly Call[],
  results: ReadonlyMap<number, Result>,
  status: DiagnoseInput['status'],
  tools: ReadonlyMap<string, { readOnly?: boolean }>,
): Diagnosis[] {
  const messages = trace.filter((e): e is UserMessage => e.type === 'user_message');
  if (messages.length === 0 || status !== 'failed') return [];
  const findings: Diagnosis[] = [];
  // The user's first reply: the opening line is the user's first message, not a reply.
  const firstReply = messages.filter((m) => m.from === 'user')[1];
  const write = calls.find((c) => {
    const r = results.get(c.callId);
    // Tracked worlds say what each call changed; otherwise a tool marked as writing counts.
    return r?.ok === true && (r.changes === undefined ? tools.get(c.name)?.readOnly === false : r.changes.length > 0);
  });
  if (write && (firstReply === undefined || write.seq < firstReply.seq)) {
    const asked = messages.some((m) => m.from === 'agent' && m.seq < write.seq);
    findings.push({
      code: 'never_asked',
      seq: write.seq,
      message: `the agent changed the world (${write.name}) before the user had answered anything${asked ? '' : ' — it had not asked yet'}: it acted on the opening line alone`,
    });
  }
  const ended = messages.find((m) => m.ended !== undefined);
  if (ended) {
    const why = ended.ended === 'user' ? 'the user ended the conversation' : 'the user gave the last reply maxTurns allows';
    findings.push({ code: 'user_gave_up', seq: ended.seq, message: `${why} with the task not done (after ${messages.filter((m) => m.from === 'agent').length} message(s) from the agent)` });
  }
  return findings;
}

/**
 * `ungrounded_answer`: an answer with no successful tool call behind it, or one that claims an
 * action when the world did not change (the agent only looked things up). Grading uses it too
 * (`strict`: a failed `grounded` check).
 */
export function ungroundedAnswer(trace: readonly TraceEvent[], changes: readonly unknown[], output: string | null): Diagnosis | undefined {
  const returned = trace.find((e) => e.type === 'agent_returned');
  if (output === null || output.trim() === '' || !returned) return undefined;
  const ok = new Set(trace.filter((e): e is Result => e.type === 'tool_result' && e.ok).map((r) => r.callId));
  const succeeded = trace.filter((e) => e.type === 'tool_call' && ok.has(e.callId)).length;
  if (succeeded === 0) {
    return { code: 'ungrounded_answer', seq: returned.seq, message: 'the agent answered without a single successful tool call: nothing it says was looked up' };
  }
  if (changes.length > 0) return undefined;
  const word = output.match(CLAIMS_ACTION)?.[0] ?? (isBareDone(output) ? output.match(CLAIMS_DONE)?.[0] : undefined);
  if (word === undefined) return undefined;
  const calls = succeeded === 1 ? 'its one successful tool call' : `its ${succeeded} successful tool calls`;
  return { code: 'ungrounded_answer', seq: returned.seq, message: `the answer claims an action ("${word}") but the agent only looked things up: ${calls} changed nothing in the world` };
}

/** An answer that only says the work is done (see CLAIMS_DONE). */
function isBareDone(output: string): boolean {
  return CLAIMS_DONE.test(output) && output.replace(DONE_FILLER, '').replace(/[\W_]+/g, '') === '';
}

/** Whether a passed run is one to look at: its answer had nothing behind it. */
export function suspicion(status: string, diagnosis: readonly Diagnosis[]): Diagnosis | undefined {
  return status === 'passed' ? diagnosis.find((d) => d.code === 'ungrounded_answer') : undefined;
}

/**
 * Where a finding points, in the words the timelines use: `call #3` for a tool call (the number
 * \`silo show\` and the report print next to it), `the answer`, `the throw`, `the limit`, or the
 * event's time. Undefined when the finding is about the whole run or its event is not in the trace.
 */
export function findingPlace(seq: number | undefined, trace: readonly TraceEvent[]): string | undefined {
  if (seq === undefined) return undefined;
  const event = trace.find((e) => e.seq === seq);
  if (!event) return undefined;
  switch (event.type) {
    case 'tool_call':
    case 'tool_result':
      return `call #${event.callId}`;
    case 'agent_returned':
      return 'the answer';
    case 'agent_threw':
      return 'the throw';
    case 'limit_exceeded':
      return 'the limit';
    default:
      return `at ${ms(event.t)}`;
  }
}
