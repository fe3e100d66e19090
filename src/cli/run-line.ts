/** The line `silo run` prints for a finished run (imported when a run has finished). */
import { suspicion } from '../inspect/diagnose.js';
import { ms } from '../time.js';
import type { Style } from '../inspect/style.js';
import type { Diagnosis, RunResult } from '../types.js';

/** Findings that say how a run ended. */
const ENDINGS = new Set<string>(['threw', 'load_error', 'crashed', 'timeout', 'tool_call_limit', 'model_limit', 'out_of_memory']);

export function formatLine(r: RunResult, s: Style): string {
  // A pass whose answer had nothing behind it is a pass with a warning (--strict fails it).
  const suspicious = suspicion(r.status, r.diagnosis) !== undefined;
  const mark = suspicious ? s.yellow('⚠') : r.status === 'passed' ? s.green('✓') : r.status === 'failed' ? s.red('✗') : s.yellow('!');
  const score = r.score === null ? '  -  ' : r.score.toFixed(2);
  const head = `${mark} ${r.taskId}  ${r.status}  ${score}  ${r.termination}  ${r.toolCalls} call${r.toolCalls === 1 ? '' : 's'}  ${ms(r.durationMs)}${suspicious ? `  ${s.yellow('suspicious')}` : ''}`;
  const lines = [head];
  if (r.error) lines.push(`    ${s.yellow(r.error.code)}: ${hang(r.error.message)}`);
  // The diagnosis says how it went wrong; the failed checks below say what was expected.
  if (r.status !== 'passed' || suspicious) {
    // How the run ended (what the agent threw, the limit it hit) comes first, then an ungrounded
    // answer (never cut), then the rest in trace order.
    const findings = r.diagnosis.filter((f) => f.code !== 'self_corrected');
    const rank = (f: Diagnosis): number => (ENDINGS.has(f.code) ? 0 : f.code === 'ungrounded_answer' ? 1 : 2);
    const shown = [0, 1, 2].flatMap((i) => findings.filter((f) => rank(f) === i)).slice(0, 3);
    // The call a finding blames, numbered as `silo show` numbers it (the answer needs no pointer).
    for (const d of shown) lines.push(`    ${s.yellow(d.code)}${d.at?.startsWith('call #') ? s.dim(` (${d.at})`) : ''}: ${hang(d.message)}`);
  }
  for (const c of r.checks.filter((c) => !c.pass).slice(0, 5)) {
    const detail = c.message ?? ('expected' in c ? `expected ${JSON.stringify(c.expected)}, actual ${JSON.stringify(c.actual)}` : '');
    lines.push(`    ${s.red('✗')} ${c.name}${detail ? s.dim(`: ${detail.slice(0, 200)}`) : ''}`);
  }
  if (r.status !== 'passed' || suspicious) lines.push(`    ${s.dim(`→ silo show ${r.runId}`)}`);
  return lines.join('\n');
}

/** A message of several lines (what an agent threw, say): its lines after the first indented under the finding's. */
function hang(text: string): string {
  return text
    .replace(/\s+$/, '')
    .split(/\r?\n/)
    .join('\n      ');
}
