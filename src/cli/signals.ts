/** SIGINT/SIGTERM: the first one asks the work to stop cleanly, a second one exits at once. */

/** `farewell` says, when the second signal exits at once, how to pick the work up again. */
export function onInterrupt(stop: () => void, farewell?: () => string | undefined): () => void {
  let count = 0;
  const handler = (): void => {
    count++;
    if (count === 1) {
      process.stderr.write('\nsilo: stopping (artifacts are being written); press Ctrl-C again to exit now\n');
      stop();
    } else {
      const words = farewell?.();
      if (words) process.stderr.write(`${words}\n`);
      process.exit(130);
    }
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
