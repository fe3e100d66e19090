// The entry of every agent worker. All it does lives in src/pool/worker-runtime.ts.
//
// CommonJS on purpose: piscina loads a worker's handler with require() first, and on Node 20.19+
// require() of an ES module goes through require(esm), which was seen here to abort the whole
// process now and then ("v8::Module::IsGraphAsync must be used on an instantiated module"). A
// CommonJS entry is loaded by plain require and reaches the ES modules with import().
import type { WorkerTask } from '../src/protocol.js';

// Loaded while the worker is warm, before it takes a rollout; what an agent could change of the
// whole process (V8 flags, reports, signals, channels to other threads) is closed at once.
const runtime = import('../src/pool/worker-runtime.js').then((m) => {
  m.closeProcessWide(require);
  return m;
});

async function handler(task: WorkerTask): Promise<void> {
  const { runAgentTask } = await runtime;
  return runAgentTask(task);
}

export = handler;
