#!/usr/bin/env node
/**
 * Agent frameworks as a user runs them: packs Silo, installs the tarball with the OpenAI Agents
 * SDK, the Vercel AI SDK, LangChain, LangGraph and Mastra into a temporary project outside this repository,
 * writes `silo init`'s example there, and runs an agent written with each framework
 * (scripts/frameworks/agents/) in the default isolation, granted `--provider openai`, with and
 * without `--no-network`, against a scripted Chat Completions server on 127.0.0.1. Each run must
 * pass, with usage measured by the gateway and the host's key the only one the server saw.
 *
 *   node scripts/frameworks/try.mjs [--keep]
 *
 * Not part of `npm test`: it installs ~250 packages from the registry (or npm's cache).
 */
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const AGENTS = join(REPO, 'scripts', 'frameworks', 'agents');
/** Versions tried; each supports Node 20. */
const PACKAGES = ['@openai/agents@0.14.3', 'openai@6.49.0', 'ai@5.0.277', '@ai-sdk/openai@2.0.131', '@langchain/openai@1.5.8', '@langchain/core@1.4.0', '@langchain/langgraph@1.7.3', '@mastra/core@0.24.9', 'zod@4.6.7'];
const HOST_KEY = 'sk-host-key-never-in-the-sandbox';

/** A scripted Chat Completions server: first a call of list_orders, then the count it returned. */
function startServer() {
  const keys = new Set();
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      keys.add(req.headers.authorization ?? '');
      const body = text ? JSON.parse(text) : {};
      const last = (body.messages ?? []).at(-1);
      let message;
      if (last?.role === 'tool') {
        const content = typeof last.content === 'string' ? last.content : last.content.map((p) => p.text).join('');
        message = { role: 'assistant', content: `${JSON.parse(content).length} orders are pending.` };
      } else {
        message = { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'list_orders', arguments: '{"status":"pending"}' } }] };
      }
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      const finish = message.tool_calls ? 'tool_calls' : 'stop';
      if (body.stream) {
        const delta = message.tool_calls ? { role: 'assistant', tool_calls: message.tool_calls.map((t, index) => ({ index, ...t })) } : { role: 'assistant', content: message.content };
        const chunk = (choice, extra = {}) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: body.model, choices: [choice], ...extra })}\n\n`;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk({ index: 0, delta, finish_reason: null }));
        res.write(chunk({ index: 0, delta: {}, finish_reason: finish }, { usage }));
        res.end('data: [DONE]\n\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: body.model, choices: [{ index: 0, message, finish_reason: finish, logprobs: null }], usage }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, keys, origin: `http://127.0.0.1:${server.address().port}` })));
}

/** Runs a command without blocking this process (the scripted server answers from it meanwhile). */
const run = (command, args, cwd, env = {}) =>
  new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...process.env, NO_COLOR: '1', ...env }, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 }, (err, stdout, stderr) => {
      resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });

const home = mkdtempSync(join(tmpdir(), 'silo-frameworks-'));
const project = join(home, 'project');
mkdirSync(project);
let failed = 0;
try {
  process.stderr.write(`packing Silo and installing it with ${PACKAGES.length} packages into ${project} ...\n`);
  execFileSync('npm', ['run', 'build'], { cwd: REPO, stdio: 'ignore' });
  const tarball = join(home, execFileSync('npm', ['pack', '--pack-destination', home], { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n').at(-1));
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'frameworks', private: true, type: 'module' }, null, 2)}\n`);
  // @openai/agents wants zod 4 as a peer, LangChain 1 brings its own: npm's strict peer check refuses the set.
  const installed = await run('npm', ['install', '-E', '--prefer-offline', '--no-audit', '--no-fund', '--legacy-peer-deps', tarball, ...PACKAGES], project);
  if (installed.status !== 0) throw new Error(`npm install failed:\n${installed.stderr}`);
  const init = await run('npx', ['--no', '--', 'silo', 'init'], project);
  if (init.status !== 0) throw new Error(`silo init failed:\n${init.stderr}`);
  mkdirSync(join(project, 'evals', 'fw'));
  for (const file of readdirSync(AGENTS)) copyFileSync(join(AGENTS, file), join(project, 'evals', 'fw', file));

  const { server, keys, origin } = await startServer();
  try {
    for (const file of readdirSync(AGENTS)) {
      for (const network of [[], ['--no-network']]) {
        // A run that hangs must not hold the script for the default 5 minutes.
        const args = ['--no', '--', 'silo', 'run', 'evals/tasks.ts', '--agent', `evals/fw/${file}`, '--task', 'shop/count-pending', '--provider', 'openai', ...network, '--timeout', '60000', '--json'];
        const ran = await run('npx', args, project, { OPENAI_BASE_URL: `${origin}/v1`, OPENAI_API_KEY: HOST_KEY });
        let row;
        try {
          row = JSON.parse(ran.stdout)[0];
        } catch {
          row = undefined;
        }
        const record = row ? JSON.parse(readFileSync(join(row.runDir, 'run.json'), 'utf8')) : undefined;
        const ok = ran.status === 0 && row?.status === 'passed' && record?.usage?.source === 'gateway' && record.usage.requests === 2;
        if (!ok) failed++;
        const what = record ? `${row.status}, isolation ${record.isolation}, ${record.usage?.requests ?? 0} model requests measured by the gateway` : (ran.stderr.trim().split('\n').at(-1) ?? `exit ${ran.status}`);
        process.stdout.write(`${ok ? '✓' : '✗'} ${file.padEnd(14)} ${(network[0] ?? '').padEnd(13)} ${what}\n`);
        if (!ok && row) process.stdout.write((await run('npx', ['--no', '--', 'silo', 'show', row.runId], project)).stdout);
      }
    }
  } finally {
    server.close();
  }
  const foreign = [...keys].filter((key) => key !== `Bearer ${HOST_KEY}`);
  if (foreign.length > 0) {
    failed++;
    process.stdout.write(`✗ the server saw credentials other than the host's key: ${foreign.join(', ')}\n`);
  } else process.stdout.write(`✓ the server saw only the host's key; no agent held it\n`);
} finally {
  if (process.argv.includes('--keep')) process.stderr.write(`kept ${project}\n`);
  else rmSync(home, { recursive: true, force: true });
}
process.exitCode = failed > 0 ? 1 : 0;
