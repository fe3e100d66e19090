// `npm run demo`: the helpdesk tasks with a solver (a clean pass) and with a confident liar
// (a legible failure), through the real CLI. Artifacts land in .silo/runs/.
import { main } from '../dist/src/cli/main.js';

const tasks = 'fixtures/helpdesk/tasks.ts';
const say = (text) => process.stdout.write(`\n== ${text}\n\n`);

say('1. A solver that uses the tools: every task should pass.');
const solved = await main(['run', tasks, '--agent', 'fixtures/agents/helpdesk-solver.ts']);

say('2. A confident liar: it answers without calling a single tool.');
await main(['run', tasks, '--agent', 'fixtures/agents/confident-liar.ts', '--task', 'helpdesk/count-open-for-user']);

say('3. Its trace: an answer with nothing behind it (silo show).');
await main(['show']);

process.stdout.write('\nEvery run above is in .silo/runs/; list them with `npx silo ls`, read one with `npx silo show <runId>`.\n');
process.exitCode = solved === 0 ? 0 : 1;
