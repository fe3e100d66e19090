/** What the built-in agents read from their options, checked, and the prompt they share. Runs in agent workers. */
import { DEFAULT_MAX_TURNS } from '../options.js';
import type { AgentArgs, AgentOptions } from '../types.js';

/** Told to the model before the instruction. */
export const SYSTEM_PROMPT =
  'You are an agent acting in a simulated environment through the tools you are given. ' +
  'Use the tools to find out what you need and to make the changes the task asks for; never guess what a tool would return. ' +
  'If a tool call fails, read the error and correct the call. ' +
  'When the task is done, reply with your final answer as plain text, without calling a tool.';

/** Told to the model instead when the task has a user to talk to. */
export const CONVERSATION_PROMPT =
  'You are an agent acting in a simulated environment through the tools you are given, on behalf of a user you are talking with. ' +
  'Use the tools to find out what you need and to make the changes the user asks for; never guess what a tool would return. ' +
  'If a tool call fails, read the error and correct the call. ' +
  'A reply without a tool call is sent to the user as your message, and the user\'s answer comes back to you: ask the user for what you need to know, ' +
  'and tell them what you did. The conversation ends when the user ends it.';

/**
 * One turn of a conversation for a built-in agent: `text` (its reply without tool calls) goes to
 * the user. The user's answer, or null when the conversation is over (the user ended it, or the
 * message was refused): the agent then returns `text` as its output.
 */
export async function talk(user: AgentArgs['user'], text: string): Promise<string | null> {
  if (!user || text.trim() === '') return null;
  const r = await user.send(text);
  return r.ok && !r.ended ? r.reply : null;
}

/** Tokens an Anthropic model may write per turn unless `maxTokens` says otherwise (the API requires a value). */
export const DEFAULT_MAX_TOKENS = 4096;

export interface AgentSettings {
  model: string;
  /** Model requests before the agent gives up. */
  maxTurns: number;
  maxTokens: number;
}

/** The built-in agents' settings from their options; throws on a value that makes no sense. */
export function agentSettings(options: AgentOptions): AgentSettings {
  const { model, maxTurns = DEFAULT_MAX_TURNS, maxTokens = DEFAULT_MAX_TOKENS } = options;
  if (typeof model !== 'string' || model === '') throw new Error('a built-in agent needs options.model (use --agent openai:<model>)');
  for (const [name, value] of [['maxTurns', maxTurns], ['maxTokens', maxTokens]] as const) {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new Error(`options.${name} must be an integer >= 1 (got ${String(value)})`);
  }
  return { model, maxTurns: maxTurns as number, maxTokens: maxTokens as number };
}

/** The input of a tool call whose arguments came as JSON text; a failed result when they are not JSON. */
export function parseArguments(text: string): { ok: true; input: unknown } | { ok: false; message: string } {
  if (text.trim() === '') return { ok: true, input: {} };
  try {
    return { ok: true, input: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, message: `Error (invalid_input): the arguments are not valid JSON (${(err as Error).message}); send a JSON object` };
  }
}
