import { describe, it, expect } from 'vitest';
import { nameDistance, nearestFirst, suggest } from '../../src/rollout/similar.js';

describe('nameDistance', () => {
  it('is 0 for the same name', () => {
    expect(nameDistance('user_id', 'user_id')).toBe(0);
  });

  it('puts names that differ only in case or separators half a step apart', () => {
    expect(nameDistance('userId', 'user_id')).toBe(0.5);
    expect(nameDistance('USER-ID', 'user_id')).toBe(0.5);
  });

  it('counts edits otherwise', () => {
    expect(nameDistance('get_usr', 'get_user')).toBe(1);
    expect(nameDistance('abc', 'xyz')).toBe(3);
    expect(nameDistance('', 'abc')).toBe(3);
  });
});

describe('nearestFirst', () => {
  const tools = ['list_tickets', 'get_user', 'deactivate_user', 'get_ticket', 'search_users'];

  it('sorts names by distance to what was asked for', () => {
    expect(nearestFirst('get_users', tools)[0]).toBe('get_user');
    expect(nearestFirst('getTicket', tools)[0]).toBe('get_ticket');
    expect(nearestFirst('ab', ['abcd', 'abc', 'xyzw'])).toEqual(['abc', 'abcd', 'xyzw']);
    expect(nearestFirst('list_ticket', tools)[0]).toBe('list_tickets');
  });

  it('keeps the original order among equally distant names', () => {
    expect(nearestFirst('zz', ['ab', 'cd', 'ef'])).toEqual(['ab', 'cd', 'ef']);
  });

  it('returns every name exactly once and leaves the input alone', () => {
    const copy = [...tools];
    const sorted = nearestFirst('deactivate', tools);
    expect([...sorted].sort()).toEqual([...tools].sort());
    expect(tools).toEqual(copy);
  });

  it('returns an empty list for no names', () => {
    expect(nearestFirst('x', [])).toEqual([]);
  });
});

describe('suggest', () => {
  const params = ['user_id', 'reason', 'notify'];

  it('suggests a name that differs in case or separators', () => {
    expect(suggest('userId', params)).toBe('user_id');
    expect(suggest('UserID', params)).toBe('user_id');
  });

  it('suggests a name within two edits', () => {
    expect(suggest('usr_id', params)).toBe('user_id');
    expect(suggest('reasn', params)).toBe('reason');
    expect(suggest('notfy', params)).toBe('notify');
  });

  it('allows more edits for longer names (a third of the length)', () => {
    // 'deactivation_reason' is 19 characters: up to 6 edits still count as a likely typo.
    expect(suggest('deactivate_reasons', ['deactivation_reason'])).toBe('deactivation_reason');
  });

  it('suggests a name that contains, or is contained in, what was typed', () => {
    expect(suggest('id', params)).toBe('user_id');
    expect(suggest('the_reason_for_it', params)).toBe('reason');
  });

  it('suggests nothing when no name is close', () => {
    expect(suggest('priority', params)).toBeUndefined();
    expect(suggest('zzzzzzzzzz', params)).toBeUndefined();
  });

  it('suggests nothing when there are no names', () => {
    expect(suggest('user_id', [])).toBeUndefined();
  });
});
