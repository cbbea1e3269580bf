/**
 * Crash tests: KEEL_TEST_CRASH_AT=NAME (or NAME:N, the Nth time this process passes NAME) kills
 * the process right there, as kill -9 would, so a test can prove a run recovers from a crash at
 * exactly that point. Unset, it costs one environment lookup.
 */
const passed = new Map<string, number>();
/** Read once: a crash test sets it for the process it starts. */
const AT = process.env.KEEL_TEST_CRASH_AT;

export function crashPoint(name: string): void {
  const at = AT;
  if (!at) return;
  const [point, nth] = at.split(':');
  if (point !== name) return;
  const n = (passed.get(name) ?? 0) + 1;
  passed.set(name, n);
  if (n === Number(nth ?? 1)) process.kill(process.pid, 'SIGKILL');
}
