// Preloaded (`node --import`) into a `silo` command by bench-cold.mjs: at exit, writes the
// command's performance marks (ms since the process started) and when it exited to the file
// named by SILO_BENCH_MARKS.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

process.on('exit', () => {
  const marks = {};
  for (const m of performance.getEntriesByType('mark')) marks[m.name] ??= m.startTime;
  writeFileSync(process.env.SILO_BENCH_MARKS, JSON.stringify({ marks, exitAt: performance.now(), bootstrapMs: performance.nodeTiming.bootstrapComplete }));
});
