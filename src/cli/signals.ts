/** SIGINT/SIGTERM: the first one asks the work to stop cleanly, a second one exits at once. */

export function onInterrupt(stop: () => void): () => void {
  let count = 0;
  const handler = (): void => {
    count++;
    if (count === 1) {
      process.stderr.write('\nsilo: stopping (artifacts are being written); press Ctrl-C again to exit now\n');
      stop();
    } else {
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
