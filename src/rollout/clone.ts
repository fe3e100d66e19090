/**
 * Copies that read through write-tracking proxies: the host's structuredClone, wrapped once so
 * tools can copy world objects, and the copies change records keep of live values.
 */
import { isPlainObject } from './plain.js';
import { proxyTargets, setData } from './proxies.js';

let cloneFallbackInstalled = false;

/**
 * structuredClone refuses proxies, and tools commonly copy a piece of the world with it. The host's
 * structuredClone is wrapped once so that a value holding tracking proxies is copied through them;
 * any other value behaves exactly as before (the wrapper only acts where the original threw).
 */
export function installCloneFallback(): void {
  if (cloneFallbackInstalled) return;
  cloneFallbackInstalled = true;
  const original = globalThis.structuredClone;
  const structuredClone = <T>(value: T, options?: Parameters<typeof original>[1]): T => {
    try {
      return original(value, options);
    } catch (err) {
      if (!(err instanceof Error) || err.name !== 'DataCloneError' || !holdsProxy(value, new Set())) throw err;
      return plainCopy(value, proxyTargets, new Map(), true) as T;
    }
  };
  globalThis.structuredClone = structuredClone;
}

/** Whether a value is or contains a tracking proxy (plain objects and arrays are searched). */
function holdsProxy(value: unknown, seen: Set<object>): boolean {
  if (typeof value !== 'object' || value === null || seen.has(value)) return false;
  if (proxyTargets.has(value)) return true;
  seen.add(value);
  if (!Array.isArray(value) && !isPlainObject(value)) return false;
  for (const child of Object.values(value)) if (holdsProxy(child, seen)) return true;
  return false;
}

/** A copy of a value the world still holds, for a record that must not change with it. */
export function copyOut(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  try {
    return structuredClone(value);
  } catch {
    return plainCopy(value, new WeakMap(), new Map(), false);
  }
}

/**
 * A deep copy that reads through proxies. What cannot be copied (a function, an object
 * structuredClone refuses) throws when `strict`, and becomes text otherwise.
 */
function plainCopy(value: unknown, targets: WeakMap<object, object>, memo: Map<object, unknown>, strict: boolean): unknown {
  if (typeof value === 'function') {
    if (strict) throw new TypeError(`${value.name || 'a function'} could not be cloned`);
    return `[function ${value.name || 'anonymous'}]`;
  }
  if (typeof value !== 'object' || value === null) return value;
  const object = targets.get(value) ?? value;
  const done = memo.get(object);
  if (done !== undefined) return done;
  if (Array.isArray(object)) {
    const copy: unknown[] = [];
    memo.set(object, copy);
    for (let i = 0; i < object.length; i++) copy[i] = plainCopy(object[i], targets, memo, strict);
    return copy;
  }
  if (!isPlainObject(object)) {
    try {
      const copy = structuredClone(object);
      memo.set(object, copy);
      return copy;
    } catch (err) {
      if (strict) throw err;
      return String(object);
    }
  }
  const copy: Record<string, unknown> = {};
  memo.set(object, copy);
  for (const key of Object.keys(object)) setData(copy, key, plainCopy((object as Record<string, unknown>)[key], targets, memo, strict));
  return copy;
}
