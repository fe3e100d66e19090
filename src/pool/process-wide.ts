/**
 * What a worker thread could change of the process it shares with other rollouts (the sandbox
 * process, or the host in thread mode), closed before any agent code loads.
 *
 * Node's permission model guards files, processes, workers, addons, WASI and the inspector, but
 * not these: V8 flags (a heap limit or a random seed for every later worker), diagnostic reports
 * (written anywhere the process may write, and holding the process's whole environment), process
 * priorities, signals, and the channels between threads (BroadcastChannel, postMessageToThread).
 * Each is replaced, in the CommonJS exports that `require`, `import` and `process.getBuiltinModule`
 * all hand out, and then in the ES module namespaces (syncBuiltinESMExports). The stand-ins throw
 * ERR_ACCESS_DENIED, as the permission model does, except `process.report`, which libraries read
 * (detect-libc sets `excludeNetwork` and reads a report): its settings read their defaults and
 * ignore writes, and `getReport()` describes the worker alone.
 *
 * SECURITY.md lists every API audited, what each could reach and what is done about it; the
 * hostile agent fixtures/agents/hostile/process-wide.mjs tries each by every route.
 */
/** Loads a built-in's CommonJS exports: `process.getBuiltinModule` (Node 20.16+), or a `require`. */
type Load = (id: string) => unknown;

/**
 * The built-ins' CommonJS exports are taken without importing them as ES modules: each namespace
 * made costs the worker's start-up, and those that exist are brought in line at the end anyway.
 */
const getBuiltinModule = (process as { getBuiltinModule?: Load }).getBuiltinModule?.bind(process);

/** Why an API is closed, by what it would reach. */
const WHY = {
  flags: 'V8 flags are process-wide: they would reach every later rollout in this process',
  write: 'it writes files, and agents may not write',
  priority: 'priorities reach the threads of other rollouts',
  signal: 'agents may not signal processes',
  channel: 'it reaches other threads of this process, which run other rollouts',
  hooks: 'module hooks and caches are not for agents',
  internals: "Node's internal bindings are not for agents",
} as const;

/** An error like the permission model's, naming the API and why it is closed. */
function denied(api: string, why: string): Error {
  return Object.assign(new Error(`${api} is not available to agents in Silo: ${why}`), { code: 'ERR_ACCESS_DENIED', permission: 'ProcessWide', resource: api });
}

function refuse(api: string, why: string): (...args: unknown[]) => never {
  const stub = (): never => {
    throw denied(api, why);
  };
  Object.defineProperty(stub, 'name', { value: api.slice(api.lastIndexOf('.') + 1) });
  return stub;
}

/** How built-ins are loaded here (set by closeProcessWide). */
let builtin: Load = (id) => {
  throw new Error(`${id} was asked for before the process-wide controls were closed`);
};

/** What could not be closed (a property Node made unchangeable): the worker then refuses the agent. */
const failures: string[] = [];
let closed = false;

/** Replaces `object[key]` (keeping its enumerability); notes a failure instead of throwing. */
function replace(object: object, key: string, value: unknown, api: string): void {
  try {
    const had = Object.getOwnPropertyDescriptor(object, key);
    Object.defineProperty(object, key, { value, writable: true, configurable: true, enumerable: had?.enumerable ?? true });
    if ((object as Record<string, unknown>)[key] !== value) failures.push(api);
  } catch {
    failures.push(api);
  }
}

/** Replaces `object[key]` with a refusal, where the key exists (some are newer than Node 20). */
function close(object: object, key: string, api: string, why: string): void {
  if (key in object) replace(object, key, refuse(api, why), api);
}

/** The settings of `process.report` as they are by default; writes are ignored. */
const REPORT_DEFAULTS = {
  directory: '',
  filename: '',
  compact: false,
  excludeNetwork: false,
  signal: 'SIGUSR2',
  reportOnFatalError: false,
  reportOnSignal: false,
  reportOnUncaughtException: false,
} as const;

/** A stand-in for `process.report`: fixed settings, no files, and a report of this worker only. */
function reportStandIn(): object {
  const report: Record<string, unknown> = {
    writeReport: refuse('process.report.writeReport', WHY.write),
    getReport: (err?: unknown) => workerReport(err),
  };
  for (const [key, value] of Object.entries(REPORT_DEFAULTS)) {
    Object.defineProperty(report, key, {
      enumerable: true,
      get: () => value,
      // Ignored rather than refused: libraries set excludeNetwork before they read a report.
      set: () => {},
    });
  }
  return Object.freeze(report);
}

/**
 * What `process.report.getReport()` returns in an agent's worker: the shape of Node's report
 * with what the worker may know anyway (versions, platform, its own environment), and nothing of
 * the process (its environment, command line, handles, loaded libraries, network interfaces).
 */
function workerReport(err?: unknown): object {
  const os = builtin('node:os') as typeof import('node:os');
  return {
    header: {
      reportVersion: 3,
      event: 'JavaScript API',
      trigger: 'GetReport',
      filename: null,
      nodejsVersion: process.version,
      wordSize: process.arch.endsWith('64') ? 64 : 32,
      arch: process.arch,
      platform: process.platform,
      componentVersions: { ...process.versions },
      release: { ...process.release },
      osName: os.type(),
      osMachine: os.machine(),
      cwd: process.cwd(),
      commandLine: [],
      networkInterfaces: [],
      cpus: [],
      host: '',
    },
    javascriptStack: { message: err instanceof Error ? err.message : 'No stack.', stack: err instanceof Error ? (err.stack ?? '').split('\n').slice(1) : [] },
    javascriptHeap: {},
    nativeStack: [],
    resourceUsage: {},
    libuv: [],
    workers: [],
    environmentVariables: { ...process.env },
    userLimits: {},
    sharedObjects: [],
  };
}

/** A BroadcastChannel that cannot be opened: every thread of the process shares their names. */
function closedBroadcastChannel(): unknown {
  return class BroadcastChannel {
    constructor() {
      throw denied('BroadcastChannel', WHY.channel);
    }
  };
}

/**
 * Closes the process-wide controls of this worker thread (see the file comment). Idempotent; must
 * run before the agent module loads. Never call it in a main thread: it disables process.kill.
 */
export function closeProcessWide(load: Load | undefined = getBuiltinModule): void {
  if (closed) return;
  closed = true;
  if (!load) {
    failures.push('every process-wide API (this Node has no process.getBuiltinModule)');
    return;
  }
  builtin = load;
  const v8 = builtin('node:v8') as object;
  const os = builtin('node:os') as typeof import('node:os');
  const workerThreads = builtin('node:worker_threads') as object;
  const modules = builtin('node:module') as typeof import('node:module');
  // V8: flags for every later isolate of the process; files written without write permission.
  close(v8, 'setFlagsFromString', 'v8.setFlagsFromString', WHY.flags);
  close(v8, 'setHeapSnapshotNearHeapLimit', 'v8.setHeapSnapshotNearHeapLimit', WHY.write);
  close(v8, 'writeHeapSnapshot', 'v8.writeHeapSnapshot', WHY.write);
  close(v8, 'takeCoverage', 'v8.takeCoverage', WHY.write);
  close(v8, 'stopCoverage', 'v8.stopCoverage', WHY.write);

  // Reports: process-wide settings, files, and the process's environment.
  replace(process, 'report', reportStandIn(), 'process.report');

  // Signals (process._kill is what process.kill calls) and priorities.
  close(process, 'kill', 'process.kill', WHY.signal);
  close(process, '_kill', 'process._kill', WHY.signal);
  close(process, '_debugProcess', 'process._debugProcess', WHY.signal);
  close(os, 'setPriority', 'os.setPriority', WHY.priority);
  // Node's internals (the permission model refuses process.binding already).
  close(process, 'binding', 'process.binding', WHY.internals);
  close(process, '_linkedBinding', 'process._linkedBinding', WHY.internals);

  // Channels to the other threads of the process.
  const channel = closedBroadcastChannel();
  replace(globalThis, 'BroadcastChannel', channel, 'BroadcastChannel');
  replace(workerThreads, 'BroadcastChannel', channel, 'worker_threads.BroadcastChannel');
  close(workerThreads, 'postMessageToThread', 'worker_threads.postMessageToThread', WHY.channel);
  // Web Locks (newer Node versions): one lock manager for every thread of the process.
  close(workerThreads, 'locks', 'worker_threads.locks', WHY.channel);
  const nav = (globalThis as { navigator?: object }).navigator;
  if (nav && 'locks' in nav) replace(nav, 'locks', undefined, 'navigator.locks');

  // Module hooks and the on-disk compile cache (the permission model refuses register() on Node 20).
  for (const key of ['register', 'registerHooks', 'enableCompileCache', 'flushCompileCache']) close(modules, key, `module.${key}`, WHY.hooks);

  // The ES module namespaces of node:v8, node:os, node:process ... take the stand-ins too.
  modules.syncBuiltinESMExports();
}

/** Why this worker must not run an agent: something process-wide could not be closed; or null. */
export function processWideProblem(): string | null {
  if (!closed) return 'its worker did not close the process-wide controls (V8 flags, reports, signals) before loading it, so it is not run';
  if (failures.length > 0) return `its worker could not close ${failures.join(', ')}, which would reach other rollouts, so it is not run`;
  return null;
}
