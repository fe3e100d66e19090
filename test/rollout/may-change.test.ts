import { describe, it, expect } from 'vitest';
import { diffWorld } from '../../src/rollout/diff.js';
import { isAllowed, mayChangeCheck } from '../../src/rollout/may-change.js';

describe('isAllowed', () => {
  it('allows a path that matches a pattern segment for segment', () => {
    expect(isAllowed(['users', 'u1', 'active'], ['users.u1.active'])).toBe(true);
    expect(isAllowed(['users', 'u1', 'active'], ['tickets', 'users.u1.active'])).toBe(true);
  });

  it('lets * match exactly one segment', () => {
    expect(isAllowed(['users', 'u1', 'active'], ['users.*.active'])).toBe(true);
    expect(isAllowed(['users', 'u1', 'name'], ['users.*.active'])).toBe(false);
    expect(isAllowed(['users', 'u1', 'profile', 'active'], ['users.*.active'])).toBe(false);
    expect(isAllowed(['users', 'active'], ['users.*.active'])).toBe(false);
  });

  it('treats array indices as segments', () => {
    expect(isAllowed(['tickets', 't1', 'comments', 2], ['tickets.*.comments.*'])).toBe(true);
    expect(isAllowed(['tickets', 't1', 'comments', 2], ['tickets.t1.comments.2'])).toBe(true);
    expect(isAllowed(['tickets', 't1', 'comments', 2], ['tickets.t1.comments.3'])).toBe(false);
    expect(isAllowed(['list', 0, 'done'], ['list.*.done'])).toBe(true);
  });

  it('allows everything below a pattern', () => {
    expect(isAllowed(['users', 'u1', 'active'], ['users'])).toBe(true);
    expect(isAllowed(['tickets', 't1', 'comments', 0, 'body'], ['tickets.*.comments'])).toBe(true);
    expect(isAllowed(['users', 'u1', 'active'], ['*'])).toBe(true);
  });

  it('does not allow a path shorter than the pattern', () => {
    expect(isAllowed(['users', 'u1'], ['users.*.active'])).toBe(false);
    expect(isAllowed(['users'], ['users.*'])).toBe(false);
  });

  it('matches whole segments only', () => {
    expect(isAllowed(['users2', 'u1'], ['users'])).toBe(false);
    expect(isAllowed(['users', 'u10', 'active'], ['users.u1.active'])).toBe(false);
  });

  it('allows nothing with no patterns', () => {
    expect(isAllowed(['a'], [])).toBe(false);
  });
});

describe('mayChangeCheck', () => {
  const initial = {
    users: { u1: { active: true, name: 'Ada' }, u2: { active: true, name: 'Bo' } },
    tickets: { t1: { status: 'open', comments: [{ body: 'hi' }] } },
  };
  const changed = (edit: (w: typeof initial) => void) => {
    const final = structuredClone(initial);
    edit(final);
    return diffWorld(initial, final);
  };

  it('passes when every change is allowed', () => {
    const changes = changed((w) => {
      w.users.u1.active = false;
      w.users.u2.active = false;
    });
    expect(mayChangeCheck(changes, ['users.*.active'])).toEqual({ name: 'mayChange', pass: true, expected: ['users.*.active'] });
  });

  it('passes when nothing changed', () => {
    expect(mayChangeCheck([], []).pass).toBe(true);
  });

  it('fails naming each unexpected path', () => {
    const changes = changed((w) => {
      w.users.u1.active = false;
      w.users.u1.name = 'Mallory';
      w.tickets.t1.status = 'closed';
      w.tickets.t1.comments.push({ body: 'done' });
      (w as Record<string, unknown>).audit = [];
    });
    const c = mayChangeCheck(changes, ['users.*.active']);
    expect(c.pass).toBe(false);
    expect(c.actual).toEqual(['users.u1.name', 'tickets.t1.status', 'tickets.t1.comments.1', 'audit']);
    expect(c.message).toBe('changes outside mayChange: users.u1.name, tickets.t1.status, tickets.t1.comments.1, audit');
    expect(c.expected).toEqual(['users.*.active']);
  });

  it('names an array element by its index', () => {
    const changes = changed((w) => {
      w.tickets.t1.comments[0]!.body = 'edited';
      w.tickets.t1.comments.push({ body: 'new' });
    });
    expect(mayChangeCheck(changes, ['tickets.*.comments.1']).actual).toEqual(['tickets.t1.comments.0.body']);
  });

  it('names each path once and keeps a long list short in the message', () => {
    const before = { xs: Array.from({ length: 30 }, (_, i) => ({ v: i })) };
    const after = { xs: before.xs.map((x) => ({ v: x.v + 1 })) };
    const c = mayChangeCheck(diffWorld(before, after), []);
    expect(c.actual).toHaveLength(30);
    expect(c.message).toMatch(/ and 10 more$/);
  });
});
