/**
 * Every message between the host and an agent's worker. Agent-to-host messages travel as JSON
 * text on the rollout's own port (TaskPort) and are parsed (and size-capped) by the host, so no
 * shared memory or prototype trick crosses. Host-to-worker messages are trusted and
 * structured-cloned. Each carries the brand so that foreign messages are ignored.
 */
import type { AgentOptions, ErrorInfo, Limits, ToolResult, ToolSchema, UserReply } from './types.js';

export const BRAND = 'silo/1' as const;

/**
 * What a rollout's runtime talks to the host on: a MessagePort of its own in a single-use worker;
 * in a reused thread, its share of the port the thread's runtime holds (workers/agent.cts), so that
 * a rollout there costs no MessageChannel to make, transfer and close (src/pool/reused.ts).
 */
export interface TaskPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: HostMessage) => void): unknown;
  close(): void;
}

/** What the pool hands a worker to start one rollout. */
export interface WorkerTask {
  brand: typeof BRAND;
  /** Absolute path of the module to import: the agent, or its compiled form (TypeScript). */
  agentPath: string;
  /** The agent's own file, for messages. */
  agentFile: string;
  /** `agentPath` is a compiled script with a code cache next to it (see src/pool/compile.ts), not a module. */
  agentScript?: boolean;
  /** `agentPath` is a CommonJS module: a reused worker requires it afresh for each rollout. */
  agentCommonJs?: boolean;
  instruction: string;
  tools: ToolSchema[];
  limits: Pick<Limits, 'maxOutputBytes' | 'maxMessageBytes'>;
  /** The agent's options (JSON; `--agent openai:<model>` gives `{ model }`), handed to it as `options`. */
  options: AgentOptions;
  /** The rollout's port; the completion travels on it too. */
  port: TaskPort;
  /** Single-use workers exit after the rollout so that no later rollout shares them. */
  exitAfter: boolean;
  /** Folders the agent must not be able to read (the task file's, the artifacts'); checked before it loads. */
  guard: { path: string; what: string }[];
  /**
   * The rollout's way to its models, when it was granted a provider: the variables its agent sees
   * on top of the worker's environment (OPENAI_BASE_URL = the gateway, OPENAI_API_KEY = this
   * rollout's token, ...), set in the worker before the agent loads (a worker's pool is keyed by
   * its start environment, so per-rollout values travel here); and the gateway's port on the
   * host's loopback, which a sandbox without network relays.
   */
  gateway?: { port: number; env: Record<string, string> };
  /** The task has a simulated user: the agent gets `user.send`; its messages are capped at `maxBytes`. */
  user?: { maxBytes: number };
}

/** Worker → host (sent as JSON text). */
export type WorkerMessage =
  | {
      brand: typeof BRAND;
      type: 'call';
      id: number;
      name: string;
      /** Absent when the input could not be sent (see inputError). */
      input?: unknown;
      /** UTF-8 bytes of the input's JSON text. */
      inputBytes: number;
      /**
       * Set when the input was not JSON-serialisable, was over maxMessageBytes or MAX_INPUT_DEPTH,
       * or held `__proto__` (or `constructor` holding an object). The host sets it too.
       */
      inputError?: { kind: 'unserialisable' | 'too_large' | 'too_deep' | 'forbidden_key'; message: string };
    }
  | { brand: typeof BRAND; type: 'log'; message: string; data?: unknown; stream?: 'stdout' | 'stderr' }
  /**
   * A message to the simulated user (`user.send`); answered with a `reply` of the same id. `text`
   * is absent when the worker refused it (`refused` says why: not text, or over the cap).
   */
  | { brand: typeof BRAND; type: 'say'; id: number; text?: string; refused?: { code: 'too_large' | 'invalid_input'; message: string } }
  | { brand: typeof BRAND; type: 'started' }
  /**
   * Model usage the agent reports (reportUsage): counts since its previous report. The host takes
   * only non-negative integers up to USAGE_MAX_PER_REPORT and adds them up into run.json `usage`.
   */
  | { brand: typeof BRAND; type: 'usage'; inputTokens: number; outputTokens: number; requests: number }
  /** The agent is ending its worker (process.exit, an uncaught exception): its doing, not Silo's. */
  | { brand: typeof BRAND; type: 'exiting'; reason: string }
  | {
      brand: typeof BRAND;
      type: 'done';
      /** How the agent function ended. */
      outcome: 'returned' | 'threw' | 'load_error';
      output: string | null;
      outputTruncated: boolean;
      /** Why the output could not be serialised, when it could not. */
      outputError?: string;
      error?: ErrorInfo;
    };

/** Host → worker (structured clone). */
export type HostMessage =
  | { brand: typeof BRAND; type: 'result'; id: number; result: ToolResult }
  | { brand: typeof BRAND; type: 'reply'; id: number; result: UserReply }
  | { brand: typeof BRAND; type: 'abort'; reason: string };
