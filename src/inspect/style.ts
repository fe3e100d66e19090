/** Terminal styling: colours on a TTY, plain text with NO_COLOR, TERM=dumb or off a TTY. */

export interface Style {
  enabled: boolean;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  dim(s: string): string;
  bold(s: string): string;
}

export function createStyle(stream: { isTTY?: boolean } = process.stdout): Style {
  const env = process.env;
  const enabled =
    env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0'
      ? true
      : stream.isTTY === true && env.NO_COLOR === undefined && env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\u001b[${open}m${s}\u001b[${close}m` : s);
  return {
    enabled,
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
    dim: wrap(2, 22),
    bold: wrap(1, 22),
  };
}
