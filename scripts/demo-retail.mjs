// `npm run demo:retail`: a sample of the tau-bench retail world. The oracle replays the gold
// actions of the 20 dev tasks (all should pass); then an agent that does nothing tries three of
// them, and the trace of one failure shows what was expected.
import { main } from '../dist/src/cli/main.js';

const tasks = 'fixtures/retail/tasks.ts';
const say = (text) => process.stdout.write(`\n== ${text}\n\n`);

say('1. The oracle on the 20 dev tasks (replays each task\'s gold actions).');
const oracle = await main(['eval', tasks, '--agent', 'fixtures/retail/gold/oracle.ts', '--task', 'retail/dev/*', '--concurrency', '8']);

say('2. An agent that does nothing, on three dev tasks.');
await main(['run', tasks, '--agent', 'fixtures/agents/do-nothing.ts', '--task', 'retail/dev/0', '--task', 'retail/dev/1', '--task', 'retail/dev/2']);

say('3. The last of those runs, read back (silo show).');
await main(['show']);

process.stdout.write('\nAll runs are in .silo/; `npx silo ls` lists them.\n');
process.exitCode = oracle === 0 ? 0 : 1;
