#!/usr/bin/env node
// The command runs bundled (dist/bundle/): with SILO_DEBUG, the stacks it prints name the sources
// (src/*.ts) through the bundle's source maps, read for the modules loaded from here on. Not by
// default: Node then reads the map of every module it loads.
if (process.env.SILO_DEBUG) process.setSourceMapsEnabled(true);
// The sandbox of `silo run` and `silo eval` is started first, before commander and the rest of the
// CLI load (they load while it boots; see run-early.ts): main.js is imported after it, not ahead as
// a static import.
if (process.argv[2] === 'run') await (await import('./run-early.js')).startEarlyRun(process.argv.slice(3));
else if (process.argv[2] === 'eval') await (await import('./run-early.js')).startEarlyEval(process.argv.slice(3));
const { main } = await import('./main.js');

// `silo ls | head` closes the pipe early: that is the reader's choice, not an error. What is
// written after it goes nowhere, and the command goes on to its end and its exit code (a failed
// run piped into `head -1` still exits 1).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    stream.write = ((_chunk: unknown, encoding?: unknown, callback?: unknown) => {
      const done = typeof encoding === 'function' ? encoding : callback;
      if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
      return true;
    }) as typeof stream.write;
  });
}

process.exitCode = await main(process.argv.slice(2));

// Once the command has nothing left to do (the event loop is empty: output written, children
// gone, servers closed), the process ends at once. A natural exit first tears the heap down page
// by page, which the system does anyway as the process ends: 15-40 ms at the end of a cold run.
// Only when nothing else asked to hear of the end (a listener of its own could still start work).
process.once('beforeExit', (code) => {
  if (process.listenerCount('beforeExit') === 0) process.exit(code);
});

// A command that has returned has nothing left to do, so a handle left open (a leak, a pipe that
// never closes) must not keep the process, and the terminal or CI job running it, waiting: past
// EXIT_GRACE_MS, the process ends with the command's code all the same. (Unref'd: it does not
// itself keep the process alive.)
const EXIT_GRACE_MS = 5_000;
setTimeout(() => process.exit(process.exitCode ?? 0), EXIT_GRACE_MS).unref();
