/** `s` cut to `n` characters, with an ellipsis when cut. */
export function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

/** The closest names to an unknown one (edit distance), for an error that suggests what was meant (R24). */
export function closestNames(name: string, names: Iterable<string>, n = 3): string[] {
  const scored: [string, number][] = [];
  for (const c of names) scored.push([c, distance(name, c)]);
  scored.sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]));
  return scored.slice(0, n).map((s) => s[0]);
}

/** The one name close enough to be what was meant ("confrim" → "confirm"), if there is one. */
export function nearestName(name: string, names: Iterable<string>, maxDistance = 2): string | undefined {
  const [best] = closestNames(name, names, 1);
  return best !== undefined && distance(name, best) <= Math.min(maxDistance, Math.ceil(name.length / 3)) ? best : undefined;
}

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length];
}
