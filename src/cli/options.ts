/** Parsers for CLI option values: each rejects bad input with a one-line usage error. */
import { InvalidArgumentError } from 'commander';
import type { Limits } from '../types.js';

export function integer(min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer >= ${min}, got '${value}'`);
    return n;
  };
}

/** For repeatable options: `--task a --task b`. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** The limit flags that `run` and `eval` share, as Limits overrides. */
export function limitsFromFlags(flags: { timeout?: number; maxToolCalls?: number; memory?: number }): Partial<Limits> {
  const limits: Partial<Limits> = {};
  if (flags.timeout !== undefined) limits.timeoutMs = flags.timeout;
  if (flags.maxToolCalls !== undefined) limits.maxToolCalls = flags.maxToolCalls;
  if (flags.memory !== undefined) limits.memoryMb = flags.memory;
  return limits;
}
