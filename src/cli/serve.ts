/** `silo serve`: one rollout's world over MCP; the MCP client is the agent. */
import type { Command } from 'commander';
import { SiloError } from '../errors.js';
import { requireOptional } from '../optional.js';
import type { RunResult } from '../types.js';
import { INIT_EXAMPLES_HELP, integer, limitsFromFlags } from './options.js';
import { onInterrupt } from './signals.js';

interface ServeFlags {
  task?: string;
  http?: number;
  timeout?: number;
  maxToolCalls?: number;
  seed?: number;
  out: string;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description("serve one rollout's world over MCP: the MCP client is the agent; finishing or disconnecting grades it")
    .argument('<task-file>', 'a module that default-exports a task or an array of tasks (.js, .mjs, .ts)')
    .option('-t, --task <id>', 'the task to serve (an id, or a glob matching one task); needed when the file has several')
    .option('--http <port>', 'serve streamable HTTP on 127.0.0.1:<port>/mcp instead of stdio (0 picks a free port)', integer(0))
    .option('--timeout <ms>', 'wall-clock limit from the client connecting, ms (default 300000)', integer(1))
    .option('--max-tool-calls <n>', 'tool calls allowed (default 500)', integer(0))
    .option('--seed <n>', 'seed of ctx.random() (default: drawn and recorded)', integer(0))
    .option('-o, --out <dir>', 'artifact folder: writes <dir>/runs/<runId>/', '.silo')
    .addHelpText(
      'after',
      "\nThe client gets the task's tools plus finish({ output }), and the instruction as the server's\n" +
        "instructions and as the prompt 'task'. A failed call comes back as a tool error (isError) with\n" +
        "Silo's message. finish, or the client disconnecting, ends the rollout; it is graded and written to\n" +
        '.silo/runs/<runId>/ like any run. Over stdio, stdout carries MCP only: messages go to stderr.\n' +
        'Exit codes: 0 passed, 1 failed or error, 2 usage or set-up error, 130 cancelled.\n' +
        `${INIT_EXAMPLES_HELP}\n` +
        '  silo serve evals/tasks.ts --task shop/refund-damaged\n' +
        '  silo serve evals/tasks.ts --task shop/refund-damaged --http 8765   # then connect to the URL it prints\n' +
        'Over HTTP, every request needs the token in the URL printed (http://127.0.0.1:<port>/mcp?token=...),\n' +
        'or as an Authorization: Bearer <token> header; others get 401 (any local process can reach the port).',
    )
    .action(async (taskFile: string, flags: ServeFlags) => {
      process.exitCode = await serveCommand(taskFile, flags);
    });
}

async function serveCommand(taskFile: string, flags: ServeFlags): Promise<number> {
  // Before anything is built or printed: without the MCP SDK there is nothing to serve.
  requireOptional('mcp');
  const [{ loadTasks }, { selectTasks }, { serveTask }] = await Promise.all([import('../load.js'), import('../filter.js'), import('../serve/serve.js')]);
  const tasks = await loadTasks([taskFile]);
  const selected = flags.task === undefined ? tasks : selectTasks(tasks, { task: [flags.task] });
  if (selected.length !== 1) {
    const ids = selected.slice(0, 10).map((t) => t.task.id).join(', ');
    throw new SiloError('SILO_USAGE', `silo serve runs one task; ${flags.task === undefined ? 'this file has' : `--task ${flags.task} matches`} ${selected.length} (${ids}${selected.length > 10 ? ', …' : ''}): pick one with --task <id>`);
  }
  const { task, file } = selected[0]!;
  const http = flags.http !== undefined;
  // Over stdio, stdout is the MCP channel: anything printed (by a tool, say) goes to stderr instead.
  const restore = http ? () => {} : consoleToStderr();
  const say = (line: string): void => void process.stderr.write(`silo serve: ${line}\n`);
  const cancel = new AbortController();
  const stopListening = onInterrupt(() => cancel.abort());
  let result: RunResult;
  try {
    if (!http) say(`${task.id} over MCP on stdio`);
    result = await serveTask({
      task,
      taskFile: file,
      transport: http ? { kind: 'http', port: flags.http! } : { kind: 'stdio' },
      limits: limitsFromFlags(flags),
      outDir: flags.out,
      signal: cancel.signal,
      onListening: (url) => say(`${task.id} over MCP at ${url}`),
      ...(flags.seed === undefined ? {} : { seed: flags.seed }),
    });
  } finally {
    stopListening();
    restore();
  }
  const score = result.score === null ? '-' : result.score.toFixed(2);
  say(`${result.taskId} ${result.status} (score ${score}, ${result.termination}, ${result.toolCalls} call${result.toolCalls === 1 ? '' : 's'}); run ${result.runId} in ${result.runDir}`);
  if (result.error) say(`${result.error.code}: ${result.error.message}`);
  if (cancel.signal.aborted) return 130;
  return result.status === 'passed' ? 0 : 1;
}

/** Sends console output meant for stdout to stderr; returns the undo. */
function consoleToStderr(): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = console.error;
  return () => Object.assign(console, saved);
}
