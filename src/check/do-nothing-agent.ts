/**
 * The built-in agent of `silo check`: it makes no tool calls and gives a fixed answer. Rollouts
 * load it from dist/ (workers run built JavaScript), so it works wherever Silo is installed.
 */

/** What it answers: a plain sentence with no numbers or names a verifier might be looking for. */
export const DO_NOTHING_ANSWER = 'I did not do anything.';

export default async function doNothing(): Promise<string> {
  return DO_NOTHING_ANSWER;
}
