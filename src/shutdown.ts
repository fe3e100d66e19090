/**
 * What must be stopped before the CLI returns, registered by the modules that start it. Those
 * modules are imported only by the commands that use them, so the CLI cannot import them to stop
 * them: each registers its own stop here when it starts something.
 */
const stops = new Set<() => Promise<void>>();

/** Registers `stop` (once, however often it is given) to run at shutdown. */
export function atShutdown(stop: () => Promise<void>): void {
  stops.add(stop);
}

/** Runs every registered stop, in parallel, and forgets them. */
export async function shutdown(): Promise<void> {
  const pending = [...stops];
  stops.clear();
  await Promise.all(pending.map((stop) => stop()));
}
