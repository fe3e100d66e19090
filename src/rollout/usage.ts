/**
 * Model usage as an agent reports it (reportUsage), added up for run.json `reportedUsage` (kept
 * apart from `usage`, which the gateway measures). The agent is
 * untrusted: a report counts only if every number is a non-negative integer within
 * USAGE_MAX_PER_REPORT; totals stop at USAGE_MAX_TOTAL.
 */
import { USAGE_MAX_PER_REPORT, USAGE_MAX_TOTAL } from '../options.js';
import type { UsageTotals } from '../types.js';

export type Usage = UsageTotals;

export class UsageTally {
  #total: Usage | undefined;

  /** Adds a report; returns why it was refused, or null when it counted. */
  add(report: { inputTokens?: unknown; outputTokens?: unknown; requests?: unknown }): string | null {
    const fields = ['inputTokens', 'outputTokens', 'requests'] as const;
    for (const key of fields) {
      const value = report[key];
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > USAGE_MAX_PER_REPORT) {
        return `a usage report whose ${key} is not an integer from 0 to ${USAGE_MAX_PER_REPORT} (got ${JSON.stringify(value) ?? String(value)})`;
      }
    }
    const total = (this.#total ??= { inputTokens: 0, outputTokens: 0, requests: 0 });
    for (const key of fields) total[key] = Math.min(USAGE_MAX_TOTAL, total[key] + (report[key] as number));
    return null;
  }

  /** The totals, or undefined when the agent reported nothing. */
  get total(): Usage | undefined {
    return this.#total && { ...this.#total };
  }
}
