// The entry of every agent worker. All it does lives in src/pool/worker-runtime.ts.
//
// `npm run build` bundles this file and the runtime into one CommonJS file
// (scripts/bundle-worker.mjs), loaded by plain require: no ES module loader starts in the worker
// before the agent's own code needs one, and no module graph is resolved and read file by file.
// That was ~13 ms of each worker's start. (require() of the ES modules themselves would go
// through require(esm), which was seen here to abort the process now and then on Node 20.19+.)
//
// A worker started by src/pool/fresh.ts (single use) takes its one task from its parent port. One
// started by src/pool/reused.ts (--reuse-workers) takes a port of its own there, which only this
// runtime holds; its tasks come on that port, and each task's messages both ways travel on it too,
// tagged with the task's id.
import type { HostMessage, TaskPort, WorkerTask } from '../src/protocol.js';
import type { FromReusedThread, ReusedTaskEnd, ReusedWorkerStart, ToReusedThread } from '../src/pool/reused.js';
import type { MessagePort } from 'node:worker_threads';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- bundled (see above)
const runtime = require('../src/pool/worker-runtime.js') as typeof import('../src/pool/worker-runtime.js');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parentPort } = require('node:worker_threads') as typeof import('node:worker_threads');

// Loaded while the worker is warm, before it takes a rollout; what an agent could change of the
// whole process (V8 flags, reports, signals, channels to other threads) is closed at once.
runtime.closeProcessWide(require);

/**
 * Runs the tasks that come on `port`, several at once, each with its share of the port as its own
 * (TaskPort), and says on it when each has ended: after the last of its messages.
 */
function serve(port: MessagePort): void {
  /** What the host sends each running task goes to its runtime's listener. */
  const listeners = new Map<number, (message: HostMessage) => void>();
  port.on('message', (msg: ToReusedThread) => {
    if ('to' in msg) return void listeners.get(msg.id)?.(msg.to);
    const { id, task } = msg;
    let open = true;
    const own: TaskPort = {
      postMessage: (m: unknown) => {
        if (open) port.postMessage({ id, m } satisfies FromReusedThread);
      },
      on: (_event: 'message', listener: (message: HostMessage) => void) => void listeners.set(id, listener),
      close: () => {
        open = false;
        listeners.delete(id);
      },
    };
    const end = (error?: string): void => {
      own.close();
      const message: ReusedTaskEnd = { brand: runtime.BRAND, id, ...(error === undefined ? {} : { error }) };
      port.postMessage(message);
    };
    runtime.runAgentTask({ ...task, port: own } satisfies WorkerTask).then(
      () => end(),
      (err: unknown) => end(err instanceof Error ? err.message : String(err)),
    );
  });
}

if (require.main === module && parentPort) {
  // The parent port is closed once the first message is taken: the pool needs nothing more from
  // it, and nothing the agent posts on it reaches the host (or, in the sandbox, its main thread).
  const parent = parentPort;
  parent.once('message', (first: WorkerTask | ReusedWorkerStart) => {
    parent.close();
    if ('type' in first && first.type === 'reuse') serve(first.port);
    // One task, then the thread ends (runAgentTask's exitAfter).
    else void runtime.runAgentTask(first as WorkerTask);
  });
}
