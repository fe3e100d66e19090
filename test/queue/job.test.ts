/**
 * The queue's small pieces: Redis URLs, job ids, paths relative to a root (and jobs that try to
 * leave it), and artifacts packed for the trip back, under and over the cap.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { artifactBytes, lostRun, packRun, writeRunFiles } from '../../src/queue/artifacts.js';
import { connectionOptions, showUrl } from '../../src/queue/connection.js';
import { jobIdOf, relativeToRoot, underRoot } from '../../src/queue/job.js';
import type { RunResult } from '../../src/types.js';
import { tempDir } from '../helpers.js';

const tmp = tempDir('silo-queue-job-');
afterAll(() => tmp.remove());

describe('connectionOptions', () => {
  it('reads host, port, database and credentials from a redis:// URL', () => {
    expect(connectionOptions('redis://10.0.0.5:6380/2')).toMatchObject({ host: '10.0.0.5', port: 6380, db: 2, maxRetriesPerRequest: null });
    expect(connectionOptions('redis://me:s%40cret@host')).toMatchObject({ host: 'host', port: 6379, username: 'me', password: 's@cret' });
    expect(connectionOptions('rediss://host:1')).toMatchObject({ tls: {} });
  });

  it('refuses what is not a Redis URL, saying what it takes', () => {
    expect(() => connectionOptions('localhost:6379')).toThrow("--queue takes a redis:// or rediss:// URL (got 'localhost:6379')");
    expect(() => connectionOptions('not a url')).toThrow(/--queue takes a Redis URL such as redis:\/\/127\.0\.0\.1:6379/);
    expect(() => connectionOptions('redis://host/abc')).toThrow(/the database in --queue redis:\/\/host\/abc must be a number/);
  });

  it('never shows the password', () => {
    expect(showUrl('redis://me:secret@host:6379/1')).toBe('redis://me@host:6379/1');
  });
});

describe('jobIdOf', () => {
  it('is the same for the same attempt, different otherwise, and valid for BullMQ (no colon)', () => {
    expect(jobIdOf('helpdesk/close-ticket', 1, 0)).toBe(jobIdOf('helpdesk/close-ticket', 1, 0));
    const ids = new Set([jobIdOf('a', 0, 0), jobIdOf('a', 1, 0), jobIdOf('a', 0, 1), jobIdOf('b', 0, 0), jobIdOf('a:b', 0, 0)]);
    expect(ids.size).toBe(5);
    for (const id of ids) expect(id).not.toContain(':');
  });
});

describe('paths relative to a root', () => {
  it('turns files under the root into /-separated relative paths, and refuses files outside', () => {
    expect(relativeToRoot('/work/evals', '/work/evals/tasks/a.tasks.ts')).toBe('tasks/a.tasks.ts');
    expect(() => relativeToRoot('/work/evals', '/elsewhere/agent.ts')).toThrow(/\/elsewhere\/agent\.ts is outside \/work\/evals; with --queue, task and agent files must lie under the folder the coordinator runs in/);
  });

  it('never lets a job name a file outside the worker root', () => {
    expect(underRoot('/srv/root', 'fixtures/agents/a.ts')).toBe('/srv/root/fixtures/agents/a.ts');
    for (const bad of ['../etc/passwd', '/etc/passwd', 'a/../../x', '', 'a\0b']) expect(underRoot('/srv/root', bad)).toBeUndefined();
  });
});

/** A finished run folder with a trace of `traceBytes` bytes. */
function runFolder(name: string, traceBytes: number): RunResult {
  const runDir = join(tmp.dir, name);
  mkdirSync(runDir, { recursive: true });
  const runId = '01JZZZZZZZZZZZZZZZZZZZZZZZ';
  writeFileSync(join(runDir, 'trace.jsonl'), 'x'.repeat(traceBytes));
  writeFileSync(join(runDir, 'state-diff.json'), '[]\n');
  writeFileSync(join(runDir, 'run.json'), JSON.stringify({ runId, status: 'passed' }));
  writeFileSync(join(runDir, 'result.json'), JSON.stringify({ runId, status: 'passed', score: 1, checks: [{ name: 'c', pass: true, actual: 'big' }], output: 'ok', diagnosis: [] }));
  return { runId, runDir, taskId: 't', status: 'passed', score: 1, termination: 'returned', checks: [{ name: 'c', pass: true }], output: 'ok', diagnosis: [], durationMs: 5, toolCalls: 0 };
}

describe('packRun', () => {
  it('sends every file of a run under the cap and removes the folder', () => {
    const run = runFolder('small', 100);
    const packed = packRun(run, 10_000, join(tmp.dir, 'keep'));
    expect(packed.result).toMatchObject({ runId: run.runId, status: 'passed', score: 1 });
    expect(packed.files['trace.jsonl']).toHaveLength(100);
    expect(artifactBytes(packed.files)).toBeGreaterThan(100);
    expect(readdirSync(tmp.dir)).not.toContain('small');
    const out = join(tmp.dir, 'coordinator');
    const dir = writeRunFiles(out, run.runId, packed.files);
    expect(readdirSync(dir).sort()).toEqual(['result.json', 'run.json', 'state-diff.json', 'trace.jsonl']);
  });

  it('carries models.jsonl with the other files when the run has one', () => {
    const run = runFolder('with-models', 100);
    writeFileSync(join(run.runDir, 'models.jsonl'), '{"requestId":1}\n');
    const packed = packRun(run, 10_000, join(tmp.dir, 'keep'));
    expect(packed.files['models.jsonl']).toBe('{"requestId":1}\n');
    const dir = writeRunFiles(join(tmp.dir, 'coordinator-models'), run.runId, packed.files);
    expect(readdirSync(dir).sort()).toEqual(['models.jsonl', 'result.json', 'run.json', 'state-diff.json', 'trace.jsonl']);
    expect(readFileSync(join(dir, 'models.jsonl'), 'utf8')).toBe('{"requestId":1}\n');
  });

  it('keeps a run over the cap on the worker and sends an error that says where it is and how it was graded', () => {
    const run = runFolder('large', 5_000);
    const keep = join(tmp.dir, 'keep');
    const packed = packRun(run, 1_000, keep);
    expect(packed.result).toMatchObject({ status: 'error', score: null, output: null, error: { code: 'artifacts_too_large' } });
    expect(packed.result.error?.message).toMatch(/over the 0\.001 MiB a queue worker sends back \(--max-result-mb\); they are on \S+ in .*keep\/runs\/01JZZZZZZZZZZZZZZZZZZZZZZZ \(the run was graded passed, score 1\)$/);
    expect(packed.files['trace.jsonl']).toBe('');
    expect(JSON.parse(packed.files['result.json'])).toMatchObject({ status: 'error', checks: [{ name: 'c', pass: true }] });
    expect(JSON.parse(packed.files['run.json'])).toMatchObject({ status: 'error' });
    expect(readdirSync(join(keep, 'runs'))).toEqual([run.runId]);
  });
});

describe('writeRunFiles', () => {
  it('refuses a runId that is not a ULID (it names a folder)', () => {
    const files = { 'trace.jsonl': '', 'state-diff.json': '[]', 'result.json': '{}', 'run.json': '{}' };
    expect(() => writeRunFiles(tmp.dir, '../../etc', files)).toThrow(/a queue worker sent a run with a malformed runId/);
  });
});

describe('lostRun', () => {
  it('is an infrastructure failure with no folder', () => {
    expect(lostRun('t', 'gone')).toMatchObject({ taskId: 't', status: 'error', termination: 'crashed', runDir: '', error: { code: 'worker_lost', message: 'gone' } });
  });
});
