/**
 * Every write-tracking proxy of this process, and the object behind it (see track.ts). Kept apart
 * so that the diff can read through a proxy that ended up inside the world.
 */
export const proxyTargets = new WeakMap<object, object>();

/** The object behind a tracking proxy, or the value itself. */
export function unwrapProxy<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  return (proxyTargets.get(value) as T | undefined) ?? value;
}

/** Sets `object[key] = value` as a data property, also for the key `__proto__`. */
export function setData(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}
