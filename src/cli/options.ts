/** Parsers for CLI option values: each rejects bad input with a one-line usage error. */
import { InvalidArgumentError } from 'commander';

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
