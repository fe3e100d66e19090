/**
 * Which worlds Silo can track writes in: plain objects and arrays (the shapes JSON gives),
 * extensible, each object in one place, not too deep. Others are snapshotted (see state.ts).
 */

/**
 * Deeper worlds are snapshotted: this check and the rebuilding of old values (`materialize`)
 * recurse once per level. (The diff's walk does not: past a few hundred levels it keeps its place
 * on an array, so a snapshot as deep as structuredClone can copy, ~2,000 levels, is diffed too.)
 */
const MAX_TRACKED_DEPTH = 1000;

/** Whether a world can be tracked: plain objects and arrays, extensible, each in one place. */
export function analyzeWorld(root: unknown): string | null {
  const seen = new Set<object>();
  const visit = (value: object, path: string, depth = 0): string | null => {
    if (depth > MAX_TRACKED_DEPTH) return `the world is nested more than ${MAX_TRACKED_DEPTH} levels deep`;
    if (seen.has(value)) return `the same object is in two places (${path})`;
    seen.add(value);
    if (!Array.isArray(value) && !isPlainObject(value)) return `${path} is a ${value.constructor?.name ?? 'non-plain object'}`;
    if (!Object.isExtensible(value)) return `${path} is frozen or sealed`;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const child: unknown = value[i];
        if (typeof child === 'function') return `${path}[${i}] is a function`;
        if (typeof child === 'object' && child !== null) {
          const problem = visit(child, `${path}[${i}]`, depth + 1);
          if (problem) return problem;
        }
      }
      return null;
    }
    for (const key in value) {
      const child: unknown = (value as Record<string, unknown>)[key];
      if (typeof child === 'function') return `${path}.${key} is a function`;
      if (typeof child === 'object' && child !== null) {
        const problem = visit(child, `${path}.${key}`, depth + 1);
        if (problem) return problem;
      }
    }
    return null;
  };
  if (typeof root !== 'object' || root === null) return 'the world is not an object';
  try {
    return visit(root, 'world');
  } catch (err) {
    if (err instanceof RangeError) return 'the world is nested too deeply to walk';
    throw err;
  }
}

export function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function isTrackable(value: object): boolean {
  return Array.isArray(value) || isPlainObject(value);
}

