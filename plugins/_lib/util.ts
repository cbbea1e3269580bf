// Small helpers the reference plugins share (their data is deterministic: fixed dates, seeded randomness).

/** YYYY-MM-DD plus n days (UTC, so no daylight-saving surprises). */
export function addDays(day: string, n: number): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  return d.toISOString().slice(0, 10);
}

let usd: Intl.NumberFormat | undefined;
/**
 * An amount in dollars ("$1,234.50"). The formatter is made on first use: a process's first Intl
 * formatter loads ICU's locale data (~25 ms), which a run that shows no amount should not pay.
 */
export function money(n: number): string {
  usd ??= new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
  return usd.format(Math.round(n * 100) / 100);
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sample data everywhere. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
