// The entry of every agent worker. All it does lives in src/pool/worker-runtime.ts.
import { runAgentTask } from '../src/pool/worker-runtime.js';

export default runAgentTask;
