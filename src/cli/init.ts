/** `silo init`: a working example to start from. */
import type { Command } from 'commander';
import { relative } from 'node:path';
import { INIT_FILES, initProject } from '../init.js';

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('write a working example into a folder: a world, three tasks, a scripted agent that passes them and an LLM agent')
    .argument('[dir]', 'the folder to write evals/ into', '.')
    .addHelpText('after', `\nWrites ${INIT_FILES.join(', ')}; refuses if any of them exists.`)
    .action((dir: string) => {
      const { files, dir: root } = initProject(dir);
      const at = relative(process.cwd(), root);
      const evals = at === '' ? 'evals' : `${at}/evals`;
      const lines = [
        ...files.map((file) => `  created ${relative(process.cwd(), file)}`),
        '',
        'Next:',
        `  npx silo check ${evals}                                   # lint the tasks (0 errors expected)`,
        `  npx silo eval ${evals} --agent ${evals}/agents/solver.ts   # the scripted agent passes all three`,
        '',
        'The LLM agent needs the OpenAI SDK and a model:',
        '  npm install openai',
        `  OPENAI_API_KEY=... npx silo eval ${evals} --agent ${evals}/agents/llm.ts --provider openai`,
        '',
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
