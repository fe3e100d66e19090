/** `silo tools`: exactly the schemas an agent receives, once per distinct environment. */
import type { Command } from 'commander';
import type { Environment, ToolSchema } from '../types.js';
import { collect } from './options.js';
import { createStyle } from '../inspect/style.js';

export function registerTools(program: Command): void {
  program
    .command('tools')
    .description('print the tool schemas an agent receives, once per environment, with the tasks that use it')
    .argument('<task-file>', 'a task module')
    .option('-t, --task <id>', 'only tasks with this id or glob (repeatable)', collect)
    .option('--json', 'print [{ environment, tasks, tools, readOnly }] as JSON (readOnly: the tools marked readOnly)')
    .action(async (taskFile: string, flags: { task?: string[]; json?: boolean }) => {
      const [{ loadTasks }, { selectTasks }, { toolSchemas }] = await Promise.all([import('../load.js'), import('../filter.js'), import('../rollout/tools.js')]);
      const tasks = selectTasks(await loadTasks([taskFile]), flags.task ? { task: flags.task } : {});
      const groups = new Map<Environment, string[]>();
      for (const { task } of tasks) groups.set(task.environment, [...(groups.get(task.environment) ?? []), task.id]);
      // `tools` is exactly what agents receive; which tools are read-only is Silo's to know, not theirs.
      const rows = [...groups].map(([env, ids]) => ({
        environment: env.name,
        tasks: ids,
        tools: toolSchemas(env),
        readOnly: env.tools.filter((t) => t.readOnly === true).map((t) => t.name),
      }));
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
        return;
      }
      const s = createStyle(process.stdout);
      for (const row of rows) {
        process.stdout.write(`${s.bold(row.environment)}  ${s.dim(`${row.tools.length} tools · tasks: ${row.tasks.join(', ')}`)}\n`);
        for (const tool of row.tools) process.stdout.write(`${formatTool(tool, row.readOnly.includes(tool.name), s)}\n`);
        process.stdout.write('\n');
      }
    });
}

function formatTool(tool: ToolSchema, readOnly: boolean, s: ReturnType<typeof createStyle>): string {
  const props = (tool.inputSchema.properties ?? {}) as Record<string, { type?: unknown; description?: string; enum?: unknown[] }>;
  const required = new Set((tool.inputSchema.required ?? []) as string[]);
  const params = Object.entries(props).map(([name, p]) => {
    const type = p.enum ? p.enum.map((v) => JSON.stringify(v)).join('|') : Array.isArray(p.type) ? p.type.join('|') : String(p.type ?? 'any');
    return `    ${name}${required.has(name) ? '' : '?'}: ${type}${p.description ? s.dim(`  ${p.description}`) : ''}`;
  });
  return [`  ${s.cyan(tool.name)}${readOnly ? s.dim(' (read-only)') : ''}  ${tool.description}`, ...params].join('\n');
}
