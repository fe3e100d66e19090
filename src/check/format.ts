/** The readable form of a CheckReport: a line per check, a line per finding under it, then the counts. */
import type { Style } from '../inspect/style.js';
import { WARNING_CODES, type CheckName, type CheckReport, type CheckSummary, type Finding } from './types.js';

/** How each check is named in the report, and what it says when it finds nothing. */
const TITLES: Record<CheckName, { title: string; ok: (s: CheckSummary) => string }> = {
  fresh_state: {
    title: 'fresh worlds',
    ok: (s) => `createState shares no object between two calls (${count(s.checked, 'environment')})`,
  },
  deterministic_state: {
    title: 'deterministic worlds',
    ok: (s) => `the same seed gives the same world (${count(s.checked, 'environment')})`,
  },
  tool_schemas: {
    title: 'tool schemas',
    ok: (s) => `${count(s.checked, 'tool')}: strict-mode schemas, unique names, descriptions`,
  },
  do_nothing_fails: {
    title: 'do-nothing agent',
    ok: (s) => `fails ${s.checked === 1 ? 'the task' : `all ${s.checked} tasks`}${skipped(s)}`,
  },
  solution_passes: {
    title: 'solutions',
    ok: (s) => (s.checked === 0 ? 'no task has a solution' : `${s.checked} of ${s.checked} pass${skipped(s)}`),
  },
};

const TITLE_WIDTH = Math.max(...Object.values(TITLES).map((t) => t.title.length));

/** The report as `silo check` prints it: colours only when `s` has them. */
export function formatReport(report: CheckReport, s: Style): string {
  const findings = [...report.errors, ...report.warnings];
  const lines: string[] = [];
  for (const summary of report.checks) {
    const { title, ok } = TITLES[summary.check];
    const label = title.padEnd(TITLE_WIDTH);
    const of = findings.filter((f) => f.check === summary.check);
    if (of.length === 0) {
      lines.push(`${s.green('✓')} ${label}  ${s.dim(ok(summary))}`);
      continue;
    }
    const mark = summary.errors > 0 ? s.red('✗') : s.yellow('!');
    const parts = [summary.errors > 0 ? count(summary.errors, 'error') : '', summary.warnings > 0 ? count(summary.warnings, 'warning') : ''];
    const scope = `${count(summary.checked, unitOf(summary.check))} checked${summary.skipped > 0 ? `, ${summary.skipped} skipped` : ''}`;
    lines.push(`${mark} ${label}  ${parts.filter(Boolean).join(', ')} ${s.dim(`(${scope})`)}`);
    // Errors first, each group in the order the checks found them.
    for (const f of [...of.filter((f) => !isWarning(f)), ...of.filter(isWarning)]) lines.push(`    ${formatFinding(f, s)}`);
  }
  const counts = `${count(report.tasks, 'task')}, ${count(report.environments, 'environment')}: ${count(report.errors.length, 'error')}, ${count(report.warnings.length, 'warning')}`;
  const colour = report.errors.length > 0 ? s.red : report.warnings.length > 0 ? s.yellow : s.green;
  lines.push('');
  if (report.cancelled) lines.push(s.yellow('cancelled: not every task was checked'));
  lines.push(`${colour(counts)} ${s.dim(`(${seconds(report.durationMs)})`)}`);
  return lines.join('\n');
}

/** One finding: its mark, what it is about, and the message. */
export function formatFinding(f: Finding, s: Style): string {
  const mark = isWarning(f) ? s.yellow('!') : s.red('✗');
  const subject = f.taskId ?? f.environment;
  return `${mark} ${subject === undefined ? '' : `${s.bold(subject)}  `}${f.message}`;
}

function isWarning(f: Finding): boolean {
  return WARNING_CODES.has(f.code);
}

function skipped(s: CheckSummary): string {
  return s.skipped > 0 ? ` (${count(s.skipped, 'task')} skipped)` : '';
}

function unitOf(check: CheckName): string {
  if (check === 'tool_schemas') return 'tool';
  return check === 'fresh_state' || check === 'deterministic_state' ? 'environment' : 'task';
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}
