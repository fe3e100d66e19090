/**
 * An LLM user: `openai:<model>` or `anthropic:<model>`, called on the host through the gateway's
 * upstream, cache and recording (HostModelClient, actor `user`), never from the agent's worker.
 * The model gets the simulator prompt (prompt.ts) as its system message and the conversation with
 * the roles turned round: the agent's messages are its user turns, its own are the assistant's.
 */
import { SiloError } from '../errors.js';
import type { HostModelClient } from '../gateway/call.js';
import type { Provider } from '../gateway/providers.js';
import type { Message } from '../types.js';
import type { Speaker } from './conversation.js';
import { AGENT_GREETING, userPrompt } from './prompt.js';

/** Tokens an Anthropic user model may write per reply (the API needs a value; a customer's message is short). */
const USER_MAX_TOKENS = 1024;

/** A user model named `provider:model`. */
export interface UserModel {
  provider: Provider;
  model: string;
}

/** Parses `--user openai:<model>` (or a task's `user.model`); a usage error says what is expected. */
export function parseUserModel(value: string, where = '--user'): UserModel {
  const m = /^(openai|anthropic):(.+)$/s.exec(value.trim());
  if (!m || m[2]!.trim() === '') {
    throw new SiloError('SILO_USAGE', `${where} takes provider:model, e.g. openai:gpt-4o-mini or anthropic:claude-sonnet-4-5 (got '${value}')`);
  }
  return { provider: m[1] as Provider, model: m[2]!.trim() };
}

export function modelUser(client: HostModelClient, { provider, model }: UserModel, instruction: string): Speaker {
  const system = userPrompt(instruction);
  return {
    async next(conversation: readonly Message[], _turn: number, signal: AbortSignal): Promise<string> {
      const turns = [
        { role: 'user' as const, content: AGENT_GREETING },
        ...conversation.map((m) => ({ role: m.role === 'agent' ? ('user' as const) : ('assistant' as const), content: m.text })),
      ];
      const answer =
        provider === 'openai'
          ? await client.request('openai', 'chat/completions', { model, messages: [{ role: 'system', content: system }, ...turns] }, signal)
          : await client.request('anthropic', 'messages', { model, max_tokens: USER_MAX_TOKENS, system, messages: turns }, signal);
      if (answer.status !== 200) {
        const why = answer.call.error ?? (answer.status === null ? 'no answer' : `HTTP ${answer.status}`);
        throw new Error(`the user's model (${provider}:${model}) failed${answer.call.retries ? ` after ${answer.call.retries} retries` : ''}: ${why}`);
      }
      const text = provider === 'openai' ? openaiText(answer.body) : anthropicText(answer.body);
      if (text === null || text.trim() === '') throw new Error(`the user's model (${provider}:${model}) returned no text`);
      return text.trim();
    },
  };
}

function openaiText(body: unknown): string | null {
  const content = (body as { choices?: { message?: { content?: unknown } }[] } | null)?.choices?.[0]?.message?.content;
  return typeof content === 'string' ? content : null;
}

function anthropicText(body: unknown): string | null {
  const content = (body as { content?: { type?: unknown; text?: unknown }[] } | null)?.content;
  if (!Array.isArray(content)) return null;
  return content.map((b) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('');
}
