/**
 * One rollout: the nine steps, in order. Each step lives in its own file of this folder; this
 * one only calls them and records what happened. Whatever goes wrong, every artifact is written.
 */
import { statSync, type Stats } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { dirname, join, resolve } from 'node:path';
import { randomInt } from 'node:crypto';
import { newId } from '../ids.js';
import { thisProcess } from '../owner.js';
import { SiloError, toErrorInfo } from '../errors.js';
import { DEFAULT_OUT_DIR, resolveLimits, resolveSeed } from '../options.js';
import { SILO_VERSION } from '../paths.js';
import type { PreparedAgents } from '../pool/compile.js';
import type { AgentRunner, Isolation } from '../pool/pool.js';
import { sharedPool } from '../pool/runners.js';
import type { AgentOptions, ErrorInfo, Limits, Message, ResultRecord, RunRecord, RunResult, Task, Termination } from '../types.js';
import { runAgent, type AgentDriver, type AgentPhase } from './agent.js';
import { agentNotFound, parseBuiltinAgent, requireAgentSdk } from '../agents/builtin.js';
import { RunArtifacts } from './artifacts.js';
import type { Change } from './diff.js';
import { grade, type Grade } from './grade.js';
import { buildWorld, EnvironmentError, type World } from './state.js';
import { bindTools, type Toolbox } from './tools.js';
import { prepareValidators } from './validate.js';
import { privateFolderPath } from '../pool/private-folder.js';
import { Trace, round } from './trace.js';
import { diagnose } from '../inspect/diagnose.js';
import { outDirAccess } from '../out-dir.js';
import type { Gateway, GatewayGrant } from '../gateway/gateway.js';
import { sharedGateway } from '../gateway/shared.js';
import { checkProviders, variableNames, type Provider } from '../gateway/providers.js';
import type { CacheMode } from '../gateway/cache.js';
import { ModelLog } from '../gateway/record.js';
import { Conversation, UserError } from '../user/conversation.js';
import { userPlan, type UserPlan } from '../user/plan.js';
import { soloConversation } from '../user/dialogue.js';
import { scriptedUser } from '../user/scripted.js';
import { modelUser } from '../user/model-user.js';

/** Options of one rollout. */
export interface RolloutOptions {
  /** The task to run (see loadTasks). */
  task: Task;
  /** The file the task came from, recorded in run.json (absolute: a relative one is resolved against the working folder). */
  taskFile?: string | null;
  /**
   * Path of the agent module (only ever loaded inside the agent's worker), or a built-in agent:
   * `openai:<model>` or `anthropic:<model>`.
   */
  agent: string;
  /**
   * The agent worker's whole `process.env`; nothing else from the host reaches the agent. A
   * built-in agent needs its base URL and key here (the CLI adds them from the shell).
   */
  env?: Record<string, string>;
  /** Handed to the agent as `options` (JSON). For built-in agents: `maxTurns`, `maxTokens`. */
  agentOptions?: AgentOptions;
  /**
   * Providers the agent reaches through the model gateway (`--provider`): its worker gets
   * OPENAI_BASE_URL / OPENAI_API_KEY (or the Anthropic pair) naming the gateway and a token valid
   * while the rollout runs, never the host's key. A built-in agent gets its own provider.
   */
  providers?: Provider[];
  /** The gateway to use; by default a process-wide one with the upstreams of this process's environment. */
  gateway?: Gateway;
  /** Without `gateway`: store and replay model responses in this folder (see ModelCache). */
  modelCache?: string;
  /** `read`, `write` or `readwrite` (default). */
  modelCacheMode?: CacheMode;
  /**
   * Drives steps 4–6 instead of an agent module in a worker (`silo serve` lets an MCP client act).
   * With it, `agent` is only a label for run.json.
   */
  drive?: AgentDriver;
  /** Overrides of the task's limits (CLI flags). */
  limits?: Partial<Limits>;
  /** Seed of ctx.random(); a random one is drawn and recorded when absent. */
  seed?: number;
  /** Artifacts go to `<outDir>/runs/<runId>/`. Default `.silo`. */
  outDir?: string;
  /** Cancels the rollout: the agent is stopped and the run is recorded as `cancelled`. */
  signal?: AbortSignal;
  /** The worker pool; the process-wide one by default. */
  pool?: AgentRunner;
  /**
   * Where the agent's worker lives when no `pool` is given: `process` (default), a sandbox process
   * the host outlives; `thread`, a thread of this process (trusted agents, less overhead).
   */
  isolation?: Isolation;
  /** Set by evals. */
  evalId?: string;
  trial?: number;
  /** Set by evals: each agent's folder is scanned and a TypeScript agent compiled once per eval. */
  preparedAgents?: PreparedAgents;
  /** An ungrounded answer fails the run (a failed `grounded` check), as `strict: true` on the task does. */
  strict?: boolean;
  /**
   * The LLM user (`provider:model`) of a task that has a user, over its own script or model
   * (`--user`); called on the host through the gateway's upstream.
   */
  user?: string;
  /** Runs a task that has a user without one: the agent gets the task's instruction (`--solo`). */
  solo?: boolean;
}

/** Runs one task with one agent and writes its artifacts. Throws only for set-up errors. */
export async function runRollout(options: RolloutOptions): Promise<RunResult> {
  // Three functions, not one: the set-up, steps 1–8, and step 9. Besides reading better, each is
  // small enough for V8 to optimize cheaply. As one async function of 300 lines, it became hot as
  // an eval's runs finished, and its TurboFan compile (100 ms of CPU on this 2-core machine) held
  // the process's exit until it was done.
  const agent = options.drive ? null : resolveAgent(options.agent, options.agentOptions);
  const env = checkEnv(options.env);
  const providers = options.drive ? [] : grantedProviders(options.agent, options.providers ?? [], env);
  // Who the agent talks to: nobody, the task's script, a model, or nobody though there is a user (solo).
  const plan: UserPlan = userPlan(options.task, { user: options.user, solo: options.solo === true || options.drive !== undefined });
  const gateway =
    providers.length === 0 && plan.mode !== 'model'
      ? null
      : (options.gateway ?? await sharedGateway(options.modelCache === undefined ? undefined : { dir: options.modelCache, ...(options.modelCacheMode ? { mode: options.modelCacheMode } : {}) }));
  const run = startRun(options, { agent, env, providers, plan, gateway });
  const played = await playRun(run);
  return await finishRun(run, played);
}

/** A rollout once set up: what its steps share. */
interface StartedRun {
  options: RolloutOptions;
  task: Task;
  plan: UserPlan;
  gateway: Gateway | null;
  providers: Provider[];
  agent: { path: string; options: AgentOptions; recorded: string } | null;
  env: Record<string, string>;
  limits: Limits;
  seed: number;
  strict: boolean;
  guard: { path: string; what: string }[];
  runId: string;
  artifacts: RunArtifacts;
  /** performance.now() at the start. */
  t0: number;
  record: RunRecord;
  pool: AgentRunner | undefined;
  /** The agent's signal (see startRun). */
  stop: AbortController;
  /** Stops following the caller's signal. */
  disposeSignal: () => void;
  /** The run folder and run.json, made. */
  created: Promise<void>;
  trace: Trace;
  models: ModelLog | null;
}

/** What steps 1–8 left. */
interface PlayedRun {
  world?: World;
  phase?: AgentPhase;
  changes: Change[];
  graded?: Grade;
  error?: ErrorInfo;
  grant?: GatewayGrant;
  conversation?: Conversation;
  /** performance.now() as the world began, was built, and the agent's part ended. */
  worldStart: number;
  worldAt?: number;
  agentAt?: number;
}

/** The rollout's set-up: its record, its folder on the way, its trace. Throws only for set-up errors. */
function startRun(options: RolloutOptions, given: Pick<StartedRun, 'agent' | 'env' | 'providers' | 'plan' | 'gateway'>): StartedRun {
  const { task } = options;
  const { providers, plan, gateway } = given;
  const limits = resolveLimits(task.limits, options.limits);
  const seed = resolveSeed(options.seed, () => randomInt(0, 2 ** 32));
  const strict = options.strict === true || task.strict === true;

  // What the agent's worker must not be able to read: the task file's folder, Silo's private
  // folder (where task files are kept compiled, this one's and every other's) and the artifacts.
  const outRoot = resolve(options.outDir ?? DEFAULT_OUT_DIR);
  const guard = [
    ...(options.taskFile ? [{ path: dirname(resolve(options.taskFile)), what: "the task file's folder" }] : []),
    { path: privateFolderPath(), what: "Silo's private folder (task files compiled)" },
    { path: outRoot, what: 'the artifacts folder' },
  ];
  const runId = newId();
  const artifacts = new RunArtifacts(outRoot, runId);
  const started = new Date();
  const t0 = performance.now();
  const record: RunRecord = {
    version: 1,
    runId,
    ...(options.evalId === undefined ? {} : { evalId: options.evalId }),
    ...(options.trial === undefined ? {} : { trial: options.trial }),
    taskId: task.id,
    // Absolute, as the CLI records it: regrade and resume find it from any folder.
    taskFile: options.taskFile ? resolve(options.taskFile) : null,
    agent: given.agent?.recorded ?? options.agent,
    status: 'running',
    termination: null,
    startedAt: started.toISOString(),
    finishedAt: null,
    durationMs: null,
    toolTimeMs: 0,
    agentTimeMs: null,
    toolCalls: 0,
    refusedCalls: 0,
    limits,
    seed,
    silo: SILO_VERSION,
    node: process.versions.node,
    worldHash: null,
    owner: thisProcess(),
    ...(strict ? { strict: true as const } : {}),
    ...(providers.length > 0 ? { providers } : {}),
    ...(plan.mode === 'none' ? {} : { user: { mode: plan.mode, ...(plan.mode === 'model' ? { model: `${plan.model.provider}:${plan.model.model}` } : {}) } }),
  };
  // The run's folder and run.json are made at the end of this turn of the event loop: by then the
  // agent's task is on its way to its worker, which starts while they are made (creating files is
  // most of a rollout's host work on a slow disk). The trace (and models.jsonl) wait for them; so
  // do the run's last files. A folder that cannot be written (read-only, another user's) is a
  // set-up error naming --out, thrown once the agent, stopped at once, has ended.
  // (The pool first: one that cannot be made, a bad SILO_SANDBOX say, leaves no run folder behind.)
  const pool = options.drive ? undefined : (options.pool ?? sharedPool(options.isolation));
  // The agent's signal: the caller's (an eval's is shared by all its rollouts, so its listener is
  // removed once the agent is done), or the folder refused.
  const stop = new AbortController();
  const forward = (): void => stop.abort(options.signal?.reason);
  if (options.signal?.aborted) forward();
  else options.signal?.addEventListener('abort', forward, { once: true });
  const disposeSignal = (): void => options.signal?.removeEventListener('abort', forward);
  const created = new Promise<void>((resolve) => setImmediate(resolve)).then(() => outDirAccess(outRoot, () => artifacts.create(record)));
  created.catch((err: unknown) => stop.abort(err));
  // An agent in a thread of this process can write into the trace's descriptor: checked on close.
  const trace = new Trace(artifacts.traceFile, t0, { verify: pool?.inProcess === true, after: created });
  trace.add({ type: 'run_started', taskId: task.id, agent: record.agent, seed });
  // The agent's model calls, when it was granted a provider: trace events and models.jsonl.
  const models = gateway ? new ModelLog(trace, join(artifacts.dir, 'models.jsonl'), created) : null;
  // Every property named, not `...given` first: an object spread and then added to property by
  // property costs ~1 µs a property until V8 optimizes it (30 µs here, measured), at every rollout's start.
  return {
    agent: given.agent,
    env: given.env,
    providers,
    plan,
    gateway,
    options,
    task,
    limits,
    seed,
    strict,
    guard,
    runId,
    artifacts,
    t0,
    record,
    pool,
    stop,
    disposeSignal,
    created,
    trace,
    models,
  };
}

/** Steps 1–8: the world, its tools, the agent (and the user), the diff and the grade. Never throws: an error is in what it returns. */
async function playRun(run: StartedRun): Promise<PlayedRun> {
  const { options, task } = run;
  // Where the time went (run.json `phases`): marks taken as each step ends.
  const played: PlayedRun = { changes: [], worldStart: performance.now() };
  try {
    // (The tools' validators: loaded from what an earlier command kept, or ajv loaded to compile
    // them, for a task that did not come from a task file.)
    const validators = prepareValidators(task.environment.tools);
    if (validators) await validators.catch(() => undefined); // (compileTool says what went wrong)
    // 1–2. A fresh world and its snapshot.
    const world = await buildWorld(task.environment, run.seed);
    played.world = world;
    played.worldAt = performance.now();
    run.record.worldHash = world.worldHash;
    // 3. Tools bound to the live world.
    const toolbox = bindTools(task.environment, world.view, world.ctx, world.tracker);
    // 4–6. The agent (and the user, if the task has one).
    const phase = await playAgent(run, played, toolbox);
    played.agentAt = performance.now();
    if (phase.termination !== 'load_error' && phase.termination !== 'cancelled') {
      // 7. The diff. 8. The grade (also after a timeout or crash: the world as the agent left it).
      played.changes = world.diff();
      // (run solo, nobody talked: the verifier gets the instruction and the answer, see soloConversation)
      const conversation = played.conversation?.messages ?? (run.plan.mode === 'solo' ? soloConversation(task.instruction, phase.output) : []);
      played.graded = await gradeRun(run, world, phase, played.changes, conversation);
    } else if (phase.termination === 'cancelled') {
      played.changes = world.diff();
    }
  } catch (err) {
    played.error =
      err instanceof EnvironmentError
        ? { code: 'environment_error', message: err.message }
        : err instanceof UserError
          ? options.signal?.aborted
            ? { code: 'cancelled', message: 'the rollout was cancelled' }
            : { code: 'user_error', message: `the simulated user could not start the conversation: ${err.message}` }
          : { ...toErrorInfo(err), code: 'internal_error' };
  }
  run.disposeSignal();
  return played;
}

/** Steps 4–6: the agent, in a worker of its own, and its output. Its gateway token lives as long as this phase. */
async function playAgent(run: StartedRun, played: PlayedRun, toolbox: Toolbox): Promise<AgentPhase> {
  const { options, task, plan, gateway, providers, limits, models, agent } = run;
  if (gateway && models && providers.length > 0) {
    played.grant = await gateway.open({
      providers,
      limits: { maxModelRequests: limits.maxModelRequests, maxTokens: limits.maxTokens },
      log: models,
      taskId: task.id,
      trial: options.trial ?? null,
    });
  }
  const grant = played.grant;
  const session = grant && { session: grant.session, task: { port: grant.port, env: grant.env } };
  const drive: AgentDriver =
    options.drive ??
    ((o) =>
      runAgent({
        // (named one by one, not `...o`: see the end of startRun)
        instruction: o.instruction,
        toolbox: o.toolbox,
        limits: o.limits,
        trace: o.trace,
        signal: o.signal,
        conversation: o.conversation,
        pool: run.pool!,
        agentPath: agent!.path,
        agentOptions: agent!.options,
        env: run.env,
        guard: run.guard,
        prepared: options.preparedAgents,
        models: session,
      }));
  // With a user, the agent's instruction is the user's opening line (after the task's policy).
  let instruction = task.instruction;
  if (plan.mode === 'scripted' || plan.mode === 'model') {
    played.conversation = await converse(run, plan);
    const opening = await openConversation(played.conversation, options.signal);
    instruction = task.policy ? `${task.policy}\n\n${opening}` : opening;
  }
  const conversation = played.conversation;
  try {
    const phase = await drive({ instruction, toolbox, limits, trace: run.trace, signal: run.stop.signal, conversation });
    played.phase = phase;
    return phase;
  } finally {
    run.disposeSignal();
    // The token ends with the agent's part; requests still in flight are aborted and recorded.
    conversation?.close();
    await grant?.session.close();
  }
}

/** Step 8: the verifier's grade of the world as the agent left it. */
function gradeRun(run: StartedRun, world: World, phase: AgentPhase, changes: Change[], conversation: readonly Message[]): Promise<Grade> {
  const args = {
    // Built only for a verifier that reads it (a tracked world keeps no copy).
    get initial() {
      return world.initial;
    },
    final: world.state,
    output: phase.output,
    trace: run.trace.events,
    conversation,
  };
  return grade(run.task, args, changes, undefined, run.strict);
}

/** The task's simulated user: its script, or a model (whose client, and node:http with it, load only then). */
async function converse(run: StartedRun, plan: Extract<UserPlan, { mode: 'scripted' | 'model' }>): Promise<Conversation> {
  const speaker =
    plan.mode === 'scripted'
      ? scriptedUser(plan.spec, run.seed)
      : modelUser(
          new (await import('../gateway/call.js')).HostModelClient(run.gateway!, { actor: 'user', log: run.models!, taskId: run.task.id, trial: run.options.trial ?? null }),
          plan.model,
          plan.spec.instruction,
        );
  return new Conversation(speaker, run.trace, plan.spec.maxTurns === undefined ? {} : { maxTurns: plan.spec.maxTurns });
}

/** The user's opening line. A cancel while an LLM user writes it abandons it. */
async function openConversation(conversation: Conversation, signal: AbortSignal | undefined): Promise<string> {
  const stop = (): void => conversation.close();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  try {
    return await conversation.open();
  } finally {
    signal?.removeEventListener('abort', stop);
  }
}

/** How a run ended, as its record and result say. */
interface Outcome {
  status: RunResult['status'];
  score: number | null;
  termination: Termination;
  error?: ErrorInfo;
  checks: RunResult['checks'];
  output: RunResult['output'];
}

/** Step 9: the run's record, its result and its files; run.json last. */
async function finishRun(run: StartedRun, played: PlayedRun): Promise<RunResult> {
  const { task, trace, models, artifacts, runId } = run;
  const outcome = outcomeOf(played, run.models?.failure('agent'));
  const { status, score, termination, error, checks, output } = outcome;
  const usage = gatewayUsage(models, played.grant);
  const userUsage = models?.usage('user');
  trace.add({ type: 'run_finished', status, termination, score });
  const durationMs = round(performance.now() - run.t0);
  completeRecord(run, played, outcome, durationMs, usage, userUsage);
  const diagnosis =
    status === 'error' && !played.graded ? [] : diagnose({ trace: trace.events, changes: played.changes, checks, output, termination, status, task });
  const result: ResultRecord = {
    version: 1,
    runId,
    taskId: task.id,
    status,
    score,
    checks,
    output,
    outputTruncated: played.phase?.outputTruncated ?? false,
    termination,
    diagnosis,
    ...(error ? { error } : {}),
  };
  // The folder first (a refused one is the set-up error; nothing of the run is written).
  await run.created;
  // These three are independent; run.json waits for all of them.
  await Promise.all([trace.close(), models?.close(), artifacts.writeDiff(played.changes), artifacts.writeResult(result)]);
  // run.json last: once it leaves "running", every other file is complete.
  await artifacts.writeRun(run.record);

  return {
    runId,
    runDir: artifacts.dir,
    taskId: task.id,
    status,
    score,
    termination,
    checks,
    output,
    diagnosis,
    ...(error ? { error } : {}),
    durationMs,
    toolCalls: run.record.toolCalls,
    ...(usage ? { usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, requests: usage.requests } } : {}),
    ...(userUsage ? { userUsage: { inputTokens: userUsage.inputTokens, outputTokens: userUsage.outputTokens, requests: userUsage.requests } } : {}),
  };
}

/**
 * The run's status, score and error from what its steps left. `modelFailure`: why the agent's
 * model requests failed on the provider's side, when they did until its last one (ModelLog.failure).
 */
function outcomeOf({ phase, graded, conversation, error: failed }: PlayedRun, modelFailure: string | undefined): Outcome {
  let error = failed;
  // A user that failed leaves no grade to trust: the run is an error, whatever the agent did.
  if (!error && conversation?.error) error = { code: 'user_error', message: `the simulated user failed: ${conversation.error}` };
  // A cancel before the agent started (while a user wrote its opening line) is a cancel all the same.
  const termination: Termination = phase?.termination ?? (error?.code === 'cancelled' ? 'cancelled' : 'not_started');
  if (!error && phase?.termination === 'load_error') {
    error = { code: 'agent_load_error', message: phase.error?.message ?? 'the agent module did not load' };
  }
  if (!error && phase?.termination === 'cancelled') error = { code: 'cancelled', message: 'the rollout was cancelled' };
  if (!error && graded?.status === 'error') error = graded.error;
  // A graded run whose agent crashed or ran out of memory keeps its grade and says why it ended
  // (an eval tells a worker that crashed on its own from one the agent ended: agent_exit).
  const crashed = !error && (termination === 'crashed' || termination === 'out_of_memory') && phase?.error ? { code: phase.error.code, message: phase.error.message } : undefined;
  // The agent's model failed it (the provider refused the host's key, could not be reached, kept
  // failing, until the agent's last request): a failed run says nothing of the agent then, as a
  // failed user's does not. (One that passed all the same did pass.)
  if (!error && !crashed && modelFailure !== undefined && graded?.status === 'failed') error = { code: 'model_error', message: `the agent's model could not answer: ${modelFailure}` };
  const status = error ? 'error' : (graded?.status ?? 'error');
  const score = error ? null : (graded?.score ?? null);
  error ??= crashed;
  // So does one whose output could not be recorded: failed (a gate of the grade), and why.
  if (!error && graded && phase?.outputError !== undefined) error = { code: 'output_not_recorded', message: phase.outputError };
  return { status, score, termination, ...(error ? { error } : {}), checks: graded?.checks ?? [], output: phase?.output ?? null };
}

/** run.json as the run ended. */
function completeRecord(run: StartedRun, played: PlayedRun, outcome: Outcome, durationMs: number, usage: RunRecord['usage'], userUsage: ReturnType<ModelLog['usage']>): void {
  const { record } = run;
  const { phase, conversation, world } = played;
  if (record.user && conversation) {
    record.user.messages = conversation.messages.length;
    if (conversation.endedBy) record.user.endedBy = conversation.endedBy;
  }
  Object.assign(record, {
    status: outcome.status,
    termination: outcome.termination,
    finishedAt: new Date().toISOString(),
    durationMs,
    toolTimeMs: phase?.toolTimeMs ?? 0,
    agentTimeMs: phase ? round(Math.max(0, phase.agentMs - phase.toolTimeMs - (conversation?.replyMs ?? 0))) : null,
    ...(conversation ? { userTimeMs: round(conversation.replyMs) } : {}),
    toolCalls: phase?.toolCalls ?? 0,
    refusedCalls: phase?.refusedCalls ?? 0,
    ...(world ? { tracking: world.tracking } : {}),
    ...(usage ? { usage } : {}),
    ...(userUsage
      ? { userUsage: { inputTokens: userUsage.inputTokens, outputTokens: userUsage.outputTokens, requests: userUsage.requests, ...(userUsage.cachedRequests ? { cachedRequests: userUsage.cachedRequests } : {}) } }
      : {}),
    ...(phase?.usage ? { reportedUsage: phase.usage } : {}),
    ...(phase?.isolation ? { isolation: phase.isolation } : {}),
  });
  if (phase && played.worldAt !== undefined && played.agentAt !== undefined) {
    const { worldAt, agentAt } = played;
    const startupMs = Math.max(0, agentAt - worldAt - phase.agentMs);
    record.phases = { worldMs: round(worldAt - played.worldStart), startupMs: round(startupMs), agentMs: phase.agentMs, gradingMs: round(run.t0 + durationMs - agentAt) };
  }
}

/** run.json `usage`: what the gateway measured, when the agent was granted a provider. */
function gatewayUsage(models: ModelLog | null, grant: GatewayGrant | undefined): RunRecord['usage'] {
  if (!models || !grant) return undefined;
  const u = models.usage('agent');
  const refused = grant?.session.refused ?? 0;
  return {
    inputTokens: u?.inputTokens ?? 0,
    outputTokens: u?.outputTokens ?? 0,
    requests: u?.requests ?? 0,
    source: 'gateway',
    ...(u?.cachedRequests ? { cachedRequests: u.cachedRequests } : {}),
    ...(refused > 0 ? { refusedRequests: refused } : {}),
  };
}

/**
 * The providers an agent is granted: those asked for, and a built-in agent's own. The variables
 * the gateway sets must not also come from `env` (a raw key would sit next to the token).
 */
function grantedProviders(agent: string, asked: readonly Provider[], env: Record<string, string>): Provider[] {
  const builtin = parseBuiltinAgent(agent);
  const providers = checkProviders([...asked, ...(builtin ? [builtin.provider] : [])]);
  for (const name of variableNames(providers)) {
    if (name in env) {
      throw new SiloError('SILO_USAGE', `env ${name} would sit next to the gateway's (the agent is granted ${providers.join(', ')}); drop it: the agent gets the gateway's URL and a token instead`);
    }
  }
  return providers;
}

/**
 * The module to run and the options to hand it; a built-in agent gets its model as `model`.
 * `recorded`, the agent in run.json: a module's absolute path (as the task file's, and as an
 * eval's summary has it, whatever folder the command ran in), a built-in agent's name.
 */
function resolveAgent(agent: string, options: AgentOptions = {}): { path: string; options: AgentOptions; recorded: string } {
  if (typeof agent !== 'string' || agent === '') throw new SiloError('SILO_USAGE', 'an agent is needed: --agent <file>');
  const builtin = parseBuiltinAgent(agent);
  if (builtin) {
    requireAgentSdk(builtin);
    return { path: builtin.path, options: { ...options, model: builtin.model }, recorded: agent };
  }
  const path = resolveAgentFile(agent);
  return { path, options, recorded: path };
}

/** The environment as given, checked: names of variables, string values. */
function checkEnv(env: Record<string, string> = {}): Record<string, string> {
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || typeof value !== 'string') {
      throw new SiloError('SILO_USAGE', `env: '${name}' must be a variable name with a string value`);
    }
  }
  return { ...env };
}

function resolveAgentFile(agent: string): string {
  const path = resolve(agent);
  // One stat (not an existence check and a stat): this runs for every rollout.
  let stats: Stats | undefined;
  try {
    stats = statSync(path, { throwIfNoEntry: false });
  } catch {
    // (not reachable, as existsSync says of it)
  }
  if (stats === undefined) {
    throw agentNotFound(path, agent);
  }
  if (!stats.isFile()) {
    throw new SiloError('SILO_AGENT_NOT_FOUND', `${path} is a directory; pass the agent's module file`);
  }
  return path;
}
