// Part of `npm run build`, after tsc: the agent workers' entry (dist/workers/agent.cjs) and the
// worker runtime it requires, bundled into that one CommonJS file (see workers/agent.cts). Only
// Node's built-in modules stay outside it.
import { build } from 'esbuild';

const entry = new URL('../dist/workers/agent.cjs', import.meta.url).pathname;
const result = await build({
  entryPoints: [entry],
  outfile: entry,
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  metafile: true,
});
const outside = Object.values(result.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external && !i.path.startsWith('node:')));
if (outside.length > 0) throw new Error(`the worker bundle imports more than built-in modules: ${outside.map((i) => i.path).join(', ')}`);
