/** Ranking names by how close they are to what an agent typed, for "did you mean" hints. */

/** Edit distance after folding case and separators (`userId` and `user_id` are 0 apart). */
export function nameDistance(a: string, b: string): number {
  const x = fold(a);
  const y = fold(b);
  if (x === y) return a === b ? 0 : 0.5;
  const row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= y.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diag + (x[i - 1] === y[j - 1] ? 0 : 1));
      diag = above;
    }
  }
  return row[y.length]!;
}

/** `names` sorted nearest to `wanted` first (stable for ties). */
export function nearestFirst(wanted: string, names: readonly string[]): string[] {
  return names
    .map((name, i) => ({ name, i, d: nameDistance(wanted, name) }))
    .sort((p, q) => p.d - q.d || p.i - q.i)
    .map((p) => p.name);
}

/** The nearest name if it is plausibly what was meant, else undefined. */
export function suggest(wanted: string, names: readonly string[]): string | undefined {
  const best = nearestFirst(wanted, names)[0];
  if (best === undefined) return undefined;
  const d = nameDistance(wanted, best);
  const fx = fold(wanted);
  const fb = fold(best);
  const related = fx.includes(fb) || fb.includes(fx);
  return d <= Math.max(2, Math.floor(best.length / 3)) || related ? best : undefined;
}

function fold(s: string): string {
  return s.toLowerCase().replace(/[-_\s]/g, '');
}
