/**
 * Who drives a run: the owner a run records (`HOST:PID:START`), whether that process may still be
 * driving it (R18), and which runs a leg of this process holds now (LEGS_HERE). Never takes a live
 * process for dead: a PID that exists and cannot be read further is alive, and a run owned on
 * another host is alive until it has been silent for the stale time (its lease aside).
 */
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';

const PROC = existsSync('/proc/self/stat');

/**
 * A process's state letter and start time (clock ticks after boot) from /proc/PID/stat (Linux):
 * `gone` when there is no such process, undefined when it cannot be read (no /proc, or hidden).
 */
function procStat(pid: number): { state: string; start: string } | 'gone' | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' && PROC ? 'gone' : undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0], start: rest[19] };
}

/**
 * How a run records the process that drives it: `HOST:PID:START`, START being the process's start
 * time where the OS tells it (Linux), so a PID reused after the owner died is not taken for it.
 */
export function ownerOf(pid: number): string {
  const st = procStat(pid);
  return typeof st === 'object' ? `${hostname()}:${pid}:${st.start}` : `${hostname()}:${pid}`;
}

const OWNER = ownerOf(process.pid);
/** This process, as recorded in a run it drives. */
export function processOwner(): string {
  return OWNER;
}

/**
 * R18: runs a leg of this process has claimed and not yet ended — being driven here, or about to
 * be. The store cannot tell this process's live legs from its failed ones (both carry its owner),
 * so a takeover by this same process asks here: a live leg of its own is never taken over (a
 * cancel racing an approve's leg in one server), a leg of its own that ended mid-run may be.
 */
const LEGS_HERE = new Set<string>();

/** A leg of this process holds the run from now (RunWriter.legBegins). */
export function legBegun(runId: string): void {
  LEGS_HERE.add(runId);
}

/** The leg that held the run is over (RunWriter.legEnds). */
export function legOver(runId: string): void {
  LEGS_HERE.delete(runId);
}

/** Whether a leg of this process holds the run now (see LEGS_HERE). */
export function legHere(runId: string): boolean {
  return LEGS_HERE.has(runId);
}

/**
 * Whether the process that owns a run may still be driving it. On this host we ask the OS: the
 * PID must exist, not be a zombie (killed, not yet reaped by its parent), and — when the owner
 * recorded a start time — have started then, not be a later process that reuses the PID. A run
 * owned elsewhere is assumed alive until it has been silent for `staleMs` (a store with leases
 * also refuses to take over a run whose lease is valid).
 */
export function ownerAlive(owner: string | null, updatedAt: string, staleMs = 10 * 60_000): boolean {
  if (!owner) return false;
  const [host, pidText, start] = owner.split(':');
  if (owner === OWNER) return false;
  if (host === hostname()) {
    const pid = Number(pidText);
    if (!Number.isInteger(pid) || pid <= 0) return false;
    let another = false;
    try {
      process.kill(pid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
      another = true; // another user's process: /proc may hide it (hidepid)
    }
    const st = procStat(pid);
    if (st === 'gone') return another;
    if (st === undefined) return true; // the OS does not say more: the PID exists
    if (st.state === 'Z' || st.state === 'X') return false; // a zombie: dead, only not yet reaped
    return start === undefined || st.start === start;
  }
  return Date.now() - Date.parse(updatedAt) < staleMs;
}

/**
 * The owner is another process on this host that is verifiably gone (exited, a zombie, or its PID
 * reused): a lease it held is renewed by no one and does not stop a takeover.
 */
export function ownerGone(owner: string | null): boolean {
  if (!owner || owner === OWNER || owner.split(':')[0] !== hostname()) return false;
  return !ownerAlive(owner, new Date(0).toISOString());
}
