/** `silo init`: a working example to start from. */
import type { Command } from 'commander';
import { isAbsolute, join, relative, sep } from 'node:path';
import { INIT_FILES, initProject } from '../init.js';

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('write a working example into a folder: a world, three tasks, a scripted agent that passes them and an LLM agent')
    .argument('[dir]', 'the folder to write evals/ into', '.')
    .addHelpText('after', `\nWrites ${INIT_FILES.join(', ')}; refuses if any of them exists.`)
    .action((dir: string) => {
      const { files, dir: root } = initProject(dir);
      const evals = shown(join(root, 'evals'));
      // Each command with what it does, the comments in one column.
      const next: [string, string][] = [
        [`npx silo check ${evals}`, 'lint the tasks (0 errors expected)'],
        [`npx silo eval ${evals} --agent ${evals}/agents/solver.ts`, 'the scripted agent passes all three'],
      ];
      const width = Math.max(...next.map(([command]) => command.length));
      const lines = [
        ...files.map((file) => `  created ${shown(file)}`),
        '',
        'Next:',
        ...next.map(([command, what]) => `  ${command.padEnd(width)}  # ${what}`),
        '',
        'The LLM agent needs the OpenAI SDK and a model:',
        '  npm install openai',
        `  OPENAI_API_KEY=... npx silo eval ${evals} --agent ${evals}/agents/llm.ts --provider openai`,
        '',
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}

/** A path as the user would type it from here: relative below the working folder, else absolute. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? path : rel;
}
