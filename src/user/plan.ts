/**
 * Who the agent of a task talks to: nobody (no user), the task's script, an LLM user (the task's
 * `user.model`, or `--user` over it), or nobody although the task has a user (solo: `--solo`, a
 * rollout driven from outside, or a user with neither script nor model and no `--user`).
 */
import { SiloError } from '../errors.js';
import type { Task, UserSpec } from '../types.js';
import { parseUserModel, type UserModel } from './model-user.js';

export type UserPlan =
  | { mode: 'none' }
  | { mode: 'solo'; spec: UserSpec; /** no script or model, nothing said: today's command keeps working */ implicit: boolean }
  | { mode: 'scripted'; spec: UserSpec & { script: NonNullable<UserSpec['script']> } }
  | { mode: 'model'; spec: UserSpec; model: UserModel };

export function userPlan(task: Task, { user, solo }: { user?: string | undefined; solo: boolean }): UserPlan {
  const spec = task.user;
  if (spec === undefined) return { mode: 'none' };
  if (solo) return { mode: 'solo', spec, implicit: false };
  const model = user ?? spec.model;
  if (model !== undefined) return { mode: 'model', spec, model: parseUserModel(model, user === undefined ? `task ${task.id}: user.model` : '--user') };
  if (spec.script) return { mode: 'scripted', spec: spec as UserSpec & { script: NonNullable<UserSpec['script']> } };
  return { mode: 'solo', spec, implicit: true };
}

/**
 * The note an eval or a run prints once about its tasks' users: `--user` (or `--solo`) given where
 * no task has a user, which changes nothing; or tasks whose user has neither script nor model, no
 * `--user` given: they run solo, as they did before conversations existed.
 */
export function userNote(tasks: readonly Task[], options: { user?: string | undefined; solo?: boolean | undefined }): string | null {
  if ((options.user !== undefined || options.solo) && !tasks.some((t) => t.user !== undefined)) {
    const flag = options.user !== undefined ? `--user ${options.user}` : '--solo';
    const none = tasks.length === 1 ? 'the task has no user' : `none of the ${tasks.length} tasks has a user`;
    return `${none}, so ${flag} changes nothing (it is for tasks that declare a simulated user)`;
  }
  if (options.user !== undefined || options.solo) return null;
  const n = tasks.filter((t) => t.user !== undefined && t.user.script === undefined && t.user.model === undefined).length;
  if (n === 0) return null;
  return `${n} task${n === 1 ? ' has a user' : 's have users'} with neither a script nor a model: run solo (the agent gets the task's instruction); pass --user openai:<model> (or anthropic:<model>) to have an LLM play the user, or --solo to say so`;
}

/** Checks a task's `user` as loaded (a one-line reason, or null when it is well-formed). */
export function userProblem(user: unknown): string | null {
  if (user === undefined) return null;
  if (typeof user !== 'object' || user === null) return 'has a user that is not an object: { instruction, script?, model?, maxTurns? }';
  const u = user as Partial<Record<keyof UserSpec, unknown>>;
  if (typeof u.instruction !== 'string') return "has a user without an instruction (a string: the user's private brief)";
  if (u.script !== undefined && typeof u.script !== 'function') return 'has a user whose script is not a function (conversation, ctx) => string';
  if (u.model !== undefined) {
    if (typeof u.model !== 'string') return "has a user whose model is not a string such as 'openai:gpt-4o-mini'";
    try {
      parseUserModel(u.model, 'user.model');
    } catch (err) {
      return `has a bad user: ${(err as SiloError).message}`;
    }
  }
  if (u.maxTurns !== undefined && (typeof u.maxTurns !== 'number' || !Number.isInteger(u.maxTurns) || u.maxTurns < 1)) {
    return 'has a user whose maxTurns is not an integer >= 1';
  }
  return null;
}
