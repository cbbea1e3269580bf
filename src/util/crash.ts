/**
 * Crash tests: when KEEL_TEST_CRASH_AT names this point, the process dies here as by kill -9, so a
 * test can prove a run recovers from a crash at exactly that moment. Unset, it costs one lookup.
 */
export function crashPoint(name: string): void {
  if (process.env.KEEL_TEST_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
