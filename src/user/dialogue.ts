/** The conversation a verifier is handed: as a run's trace holds it, or a solo run's stand-in. */
import type { Message, TraceEvent } from '../types.js';

/** The conversation as a run's trace holds it (its `user_message` events): what regrade hands the verifier again. */
export function conversationFromTrace(events: readonly TraceEvent[]): Message[] {
  const messages: Message[] = [];
  for (const e of events) {
    if (e.type === 'user_message' && typeof e.text === 'string') messages.push({ role: e.from === 'agent' ? 'agent' : 'user', text: e.text });
  }
  return messages;
}

/**
 * The conversation of a task that has a user, run solo (`--solo`, a user with neither script nor
 * model, `silo serve`): nobody talked, so the verifier gets the instruction the agent was given as
 * the user's message and the agent's answer as its one message (none when it returned nothing).
 * `check.said` then reads the answer, as tau2's solo mode grades the agent's final output.
 */
export function soloConversation(instruction: string, output: string | null): Message[] {
  const messages: Message[] = [{ role: 'user', text: instruction }];
  if (output !== null && output.trim() !== '') messages.push({ role: 'agent', text: output });
  return messages;
}
