/**
 * The package's API. A task file imports it for `defineTask` and friends, and so does every
 * `silo run` and `silo eval` of such a file: what runs rollouts, evals, regrades, reports, queue
 * workers and MCP serving is loaded when first called (each function below is its module's,
 * imported then), not with the task file. Imported whole, it made a cold `silo run` 1.09× slower.
 */
import type * as Rollout from './rollout/rollout.js';
import type * as RunEval from './eval/run-eval.js';
import type * as Merge from './eval/merge.js';
import type * as Regrade from './eval/regrade.js';
import type * as QueueWorker from './queue/worker.js';
import type * as Load from './load.js';
import type * as Check from './check/check.js';
import type * as Report from './inspect/report.js';
import type * as Serve from './serve/serve.js';
import type * as Coordinator from './queue/coordinator.js';
import { requireOptional } from './optional.js';

export { defineEnvironment, defineTool, defineTask, check } from './define.js';
export type { FromSchema } from './schema-types.js';
export { SiloError } from './errors.js';
export type { SiloErrorCode } from './errors.js';
export const runRollout: typeof Rollout.runRollout = async (options) => (await import('./rollout/rollout.js')).runRollout(options);
export type { RolloutOptions } from './rollout/rollout.js';
export const runEval: typeof RunEval.runEval = async (options) => (await import('./eval/run-eval.js')).runEval(options);
export type { EvalOptions, EvalProgress } from './eval/run-eval.js';
export const mergeEvals: typeof Merge.mergeEvals = async (options) => (await import('./eval/merge.js')).mergeEvals(options);
export type { MergeOptions } from './eval/merge.js';
export type { Shard } from './eval/shard.js';
export const regrade: typeof Regrade.regrade = async (options) => (await import('./eval/regrade.js')).regrade(options);
export type { RegradeOptions, RegradeReport, RegradeChange, RegradeRefusal, RefusalReason } from './eval/regrade.js';
export { compareSummaries } from './eval/compare.js';
export type { Comparison, CompareStatsOptions, CompareSide, CompareEvalInfo, TaskComparison, Verdict } from './eval/compare.js';
export { compareEvals } from './eval/compare-evals.js';
export type { CompareOptions } from './eval/compare-evals.js';
export type { RolloutRequest, RolloutRunner, RunnerContext, RunnerFactory } from './eval/runner.js';
// (A missing bullmq is said at once, as the coordinator's own queueRunner says it.)
export const queueRunner: typeof Coordinator.queueRunner = (options) => {
  requireOptional('queue');
  return async (context) => (await import('./queue/coordinator.js')).queueRunner(options)(context);
};
export type { QueueOptions } from './queue/coordinator.js';
export const runWorker: typeof QueueWorker.runWorker = async (options) => (await import('./queue/worker.js')).runWorker(options);
export type { WorkerEvent, WorkerOptions } from './queue/worker.js';
export { initProject, INIT_FILES } from './init.js';
export type { InitResult } from './init.js';
export const loadTasks: typeof Load.loadTasks = async (paths) => (await import('./load.js')).loadTasks(paths);
export type { LoadedTask } from './load.js';
export const checkTasks: typeof Check.checkTasks = async (paths, options) => (await import('./check/check.js')).checkTasks(paths, options);
export type { CheckOptions, CheckProgress, CheckReport, CheckSummary, Finding, FindingCode, CheckName } from './check/types.js';
export { DEFAULT_LIMITS } from './options.js';
export const writeReport: typeof Report.writeReport = async (options) => (await import('./inspect/report.js')).writeReport(options);
export type { ReportOptions, ReportWritten } from './inspect/report.js';
export { DEFAULT_REPORT_LIMITS } from './options.js';
export type { ReportLimits } from './inspect/report-data.js';
export const serveTask: typeof Serve.serveTask = async (options) => (await import('./serve/serve.js')).serveTask(options);
export type { ServeOptions } from './serve/serve.js';
export { toOpenAITools, toAnthropicTools, toMcpTools, renderToolResult } from './agents/converters.js';
export type { OpenAITool, AnthropicTool, McpTool } from './agents/converters.js';
export type * from './types.js';
