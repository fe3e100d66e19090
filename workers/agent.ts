// The entry of every agent worker. All it does lives in src/pool/worker-runtime.ts.
import { workerData } from 'node:worker_threads';
import { prepareWorker, runAgentTask } from '../src/pool/worker-runtime.js';

await prepareWorker(workerData);

export default runAgentTask;
