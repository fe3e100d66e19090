#!/usr/bin/env node
import { main } from './main.js';

// `silo ls | head` closes the pipe early: that is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
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
