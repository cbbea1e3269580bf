import { execFileSync } from 'node:child_process';

/**
 * A private tmux server for one test file, run without the test runner's environment
 * (NODE_TEST_CONTEXT would make a child node report to a test parent that is not there). No npm
 * package ships tmux: where it is not installed, each call fails at once with one line saying so
 * and what needs it (never a skip).
 */
export function tmuxServer(name: string, needs: string): (...args: string[]) => string {
  const socket = `${name}-${process.pid}`;
  return (...args) => {
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    delete env.NODE_OPTIONS;
    try {
      return execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', env });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT')
        throw new Error(`${needs} under tmux, which is not installed: apt-get install tmux`);
      throw e;
    }
  };
}
