/** The conversation as a run's trace holds it (its `user_message` events): what regrade hands the verifier again. */
import type { Message, TraceEvent } from '../types.js';

export function conversationFromTrace(events: readonly TraceEvent[]): Message[] {
  const messages: Message[] = [];
  for (const e of events) {
    if (e.type === 'user_message' && typeof e.text === 'string') messages.push({ role: e.from === 'agent' ? 'agent' : 'user', text: e.text });
  }
  return messages;
}
