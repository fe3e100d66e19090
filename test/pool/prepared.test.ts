/** Agents prepared once per eval (src/pool/compile.ts PreparedAgents). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PreparedAgents } from '../../src/pool/compile.js';
import { tempDir } from '../helpers.js';

const folder = tempDir('silo-prepared-');
afterAll(() => folder.remove());

describe('PreparedAgents', () => {
  it('prepares an agent once and hands the same preparation to every rollout', async () => {
    const agent = join(folder.dir, 'once.ts');
    writeFileSync(agent, 'export default async function agent(): Promise<string> { return "one"; }\n');
    const prepared = new PreparedAgents();
    const first = prepared.get(agent);
    expect(prepared.get(agent)).toBe(first);
    expect((await first).modulePath).not.toBe(agent);
  });

  it('tries again after a failure, which may pass (the agent written meanwhile, a disk no longer full)', async () => {
    const agent = join(folder.dir, 'later.ts');
    const prepared = new PreparedAgents();
    await expect(prepared.get(agent)).rejects.toThrow();
    writeFileSync(agent, 'export default async function agent(): Promise<string> { return "later"; }\n');
    await expect(prepared.get(agent)).resolves.toMatchObject({ readable: expect.any(Array) });
  });
});
