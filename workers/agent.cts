// The entry of every agent worker. All it does lives in src/pool/worker-runtime.ts.
//
// `npm run build` bundles this file and the runtime into one CommonJS file
// (scripts/bundle-worker.mjs), loaded by plain require: no ES module loader starts in the worker
// before the agent's own code needs one, and no module graph is resolved and read file by file.
// That was ~13 ms of each worker's start. (require() of the ES modules themselves would go
// through require(esm), which was seen here to abort the process now and then on Node 20.19+.)
//
// A worker started by src/pool/fresh.ts (single use) runs this file as its main module and takes
// its one task from its parent port. A reused worker is piscina's, which loads this file for its
// handler.
import type { WorkerTask } from '../src/protocol.js';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- bundled (see above)
const runtime = require('../src/pool/worker-runtime.js') as typeof import('../src/pool/worker-runtime.js');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parentPort } = require('node:worker_threads') as typeof import('node:worker_threads');

// Loaded while the worker is warm, before it takes a rollout; what an agent could change of the
// whole process (V8 flags, reports, signals, channels to other threads) is closed at once.
runtime.closeProcessWide(require);

function handler(task: WorkerTask): Promise<void> {
  return runtime.runAgentTask(task);
}

if (require.main === module && parentPort) {
  // One task, then the thread ends (runAgentTask's exitAfter). The parent port is closed once the
  // task is taken: the pool needs nothing more from it, and nothing the agent posts on it reaches
  // the host (or, in the sandbox, its main thread).
  const port = parentPort;
  port.once('message', (task: WorkerTask) => {
    port.close();
    void handler(task);
  });
}

export = handler;
