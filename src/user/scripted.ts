/** A scripted user: the task's own function of the conversation so far (tests, fixed dialogues). */
import type { Message, UserSpec } from '../types.js';
import type { Speaker } from './conversation.js';

export function scriptedUser(spec: UserSpec & { script: NonNullable<UserSpec['script']> }, seed: number): Speaker {
  return {
    next: async (conversation: readonly Message[], turn: number) => spec.script(conversation, { instruction: spec.instruction, turn, seed }),
  };
}
