/** Time accounting for the loop bench: wall time minus the time spent inside the model and the tools. */

export const now = (): number => performance.now();

/** Accumulates milliseconds spent in one kind of work (the model's stream, the tools' execute). */
export class Meter {
  ms = 0;
  reset(): void {
    this.ms = 0;
  }
  /** Times a synchronous section. */
  time<T>(fn: () => T): T {
    const t0 = now();
    try {
      return fn();
    } finally {
      this.ms += now() - t0;
    }
  }
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export function summarize(samples: readonly number[]): { median: number; p95: number; min: number; n: number } {
  const s = [...samples].sort((a, b) => a - b);
  return { median: percentile(s, 50), p95: percentile(s, 95), min: s[0], n: s.length };
}
