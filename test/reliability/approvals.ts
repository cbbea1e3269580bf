/**
 * The concurrent-approvals campaign (issue 27; A2, A3, R18, S3, S4): two `keel serve` processes on
 * one store — the same SQLite file, or one PostgreSQL schema with both servers also working the legs
 * they queue (KEEL_SERVE_WORK, as `keel serve --work`) — and a `keel approvals` CLI process answer
 * the same cards at the same moment. Each card asks for one pinned `send_email` with a subject of its
 * own; its three answers (server A's, server B's and the CLI's: all approve, all reject, or they
 * disagree) are sent together, and every card's at the same moment. Invariants: each card is answered exactly once (one winner, whose decision it records);
 * every loser gets 409 (the CLI: exit 2, a conflict); the card and the audit name the winner, with
 * one decision; each approved call runs exactly once and a rejected one never; every run ends.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/types/index.js';
import { calls, KEEL_BIN, keel, ROOT, script, tempHome } from '../support/helpers.js';
import { call, cliServer } from '../support/server.js';
import type { ProcessStore } from '../support/stores.js';

export interface ApprovalRaces {
  stores: string[];
  cards: number;
  /** Answers sent, at once, per card: two servers and a CLI. */
  contenders: number;
  approved: number;
  rejected: number;
  /** Answers that lost: 409 from a server, a conflict from the CLI. */
  conflicts: number;
  /** Times an approved call ran (each exactly once). */
  executions: number;
  violations: { card: string; problem: string }[];
  ms: number;
}

interface Answer {
  who: string;
  /** The actor it answers as (its token's name, or the CLI's --as): whom the card and the audit must name if it wins. */
  actor: string;
  decision: 'approve' | 'reject';
  won: boolean;
  conflict: boolean;
  detail: string;
}

/** `keel approvals approve|reject ID` as a process: won on exit 0 or 3 (the run went on), lost on exit 2 with a conflict. */
function cliAnswer(env: Record<string, string>, id: string, decision: 'approve' | 'reject'): Promise<Answer> {
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_TEST_CRASH_AT;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEL_BIN, 'approvals', decision, id, '--as', 'cli-owner'], {
      cwd: ROOT,
      env: { ...base, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        who: 'cli',
        actor: 'cli-owner',
        decision,
        won: code === 0 || code === 3,
        conflict: code === 2 && /already|conflict|answered|not waiting/i.test(err),
        detail: `exit ${code}: ${err.trim().slice(0, 200)}`,
      }),
    );
  });
}

async function httpAnswer(
  who: string,
  actor: string,
  url: string,
  token: string,
  id: string,
  decision: 'approve' | 'reject',
): Promise<Answer> {
  const r = await call(url, 'POST', `/v1/approvals/${id}`, {
    token,
    body: { decision, reason: decision === 'reject' ? `no (${who})` : undefined },
  });
  return {
    who,
    actor,
    decision,
    won: r.status === 200,
    conflict: r.status === 409,
    detail: `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`,
  };
}

/** What server A, server B and the CLI answer, card by card in turn: all approve, all reject, or they disagree. */
const DECISIONS: ['approve' | 'reject', 'approve' | 'reject', 'approve' | 'reject'][] = [
  ['approve', 'approve', 'approve'],
  ['reject', 'reject', 'reject'],
  ['approve', 'reject', 'reject'],
];

async function poll<T>(what: string, f: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function approvalRaces(stores: ProcessStore[], cards = 12): Promise<ApprovalRaces> {
  const out: ApprovalRaces = {
    stores: stores.map((s) => s.name),
    cards: 0,
    contenders: 3,
    approved: 0,
    rejected: 0,
    conflicts: 0,
    executions: 0,
    violations: [],
    ms: 0,
  };
  const started = performance.now();
  for (const st of stores) {
    const home = tempHome('keel-approvals-');
    const env: Record<string, string> = { KEEL_HOME: home, KEEL_CONFIRM_ONCE_TOOLS: '', ...(await st.env()) };
    // PostgreSQL: each server queues legs and works them too, so either may carry a run on.
    const serverEnv = st.name === 'postgres' ? { ...env, KEEL_SERVE_WORK: '1' } : env;
    const children: ChildProcess[] = [];
    let store: Store | undefined;
    const servers: Awaited<ReturnType<typeof cliServer>>[] = [];
    try {
      // One approver per contender, so that the card and the audit say which one answered.
      const tokenOf = async (name: string) => {
        const made = await keel(['tokens', 'create', '--name', name, '--role', 'approver', '--json'], env);
        if (made.code !== 0) throw new Error(`keel tokens create: ${made.stderr}`);
        return JSON.parse(made.stdout).token as string;
      };
      const token = await tokenOf('ana-phone');
      const tokenB = await tokenOf('ben-laptop');
      const a = await cliServer(home, serverEnv);
      children.push(a.child);
      servers.push(a);
      const b = await cliServer(home, serverEnv);
      children.push(b.child);
      servers.push(b);
      // The cards: one run each, started through server A, each pausing on its own send_email card.
      const runs: { run: string; card: string; subject: string }[] = [];
      for (let i = 0; i < cards; i++) {
        const subject = `${st.name} note ${i + 1}`;
        const model = script(
          home,
          [{ tool_calls: [{ id: `e${i}`, name: 'send_email', args: { to: 'ana', subject } }] }, { text: `Sent ${subject}.` }] as never,
          `card-${i}.yaml`,
        );
        const r = await call(a.url, 'POST', '/v1/runs', { token, body: { request: 'send the email to ana', model } });
        if (r.status !== 202) throw new Error(`POST /v1/runs: ${r.status} ${JSON.stringify(r.body)}`);
        const run = r.body.run_id as string;
        const card = await poll(`run ${run}'s card`, async () => {
          const v = await call(a.url, 'GET', `/v1/runs/${run}`, { token });
          if (v.body?.status === 'paused' && v.body.approval?.id) return v.body.approval.id as string;
          if (v.body?.status === 'done' || v.body?.status === 'failed')
            throw new Error(`run ${run} ended without a card: ${JSON.stringify(v.body).slice(0, 300)}`);
          return undefined;
        });
        runs.push({ run, card, subject });
      }
      // All answers to all cards at once: the three contenders of a card race each other, and the cards race too.
      const answered = await Promise.all(
        runs.map(async ({ card }, i) => {
          const [da, db, dc] = DECISIONS[i % DECISIONS.length];
          return Promise.all([
            httpAnswer('server A', 'ana-phone', a.url, token, card, da),
            httpAnswer('server B', 'ben-laptop', b.url, tokenB, card, db),
            cliAnswer(env, card, dc),
          ]);
        }),
      );
      // The store itself, for the audit (no API lists it).
      store = openStore(home, env);
      for (let i = 0; i < runs.length; i++) {
        const { run, card, subject } = runs[i];
        const label = `${st.name} card ${i + 1} (${card})`;
        const problem = (p: string) => out.violations.push({ card: label, problem: p });
        out.cards++;
        const answers = answered[i];
        const winners = answers.filter((x) => x.won);
        const losers = answers.filter((x) => !x.won);
        out.conflicts += losers.filter((x) => x.conflict).length;
        if (winners.length !== 1) problem(`${winners.length} answers won: ${answers.map((x) => `${x.who} ${x.detail}`).join(' | ')}`);
        for (const l of losers) if (!l.conflict) problem(`${l.who} lost without a 409/conflict: ${l.detail}`);
        const final = await poll(`run ${run} to end`, async () => {
          const v = await call(b.url, 'GET', `/v1/runs/${run}`, { token });
          return v.body?.status === 'done' || v.body?.status === 'failed' ? v.body : undefined;
        });
        const approval = (await call(b.url, 'GET', `/v1/approvals/${card}`, { token })).body;
        const decided = approval?.status === 'approved' ? 'approve' : approval?.status === 'rejected' ? 'reject' : undefined;
        if (!decided) problem(`the card is ${approval?.status}, not answered`);
        if (winners.length === 1 && decided !== winners[0].decision)
          problem(`the card records ${approval?.status}, but ${winners[0].who}'s ${winners[0].decision} won`);
        if (winners.length === 1 && approval?.answered_by !== winners[0].actor)
          problem(`the card names ${approval?.answered_by} as its answerer, but ${winners[0].who} (${winners[0].actor}) won`);
        // Answered once: one decision in the audit, by the winner.
        const decisions = (await store.listAudit(card)).filter((row) => row.action === 'approved' || row.action === 'rejected');
        if (decisions.length !== 1 || (winners.length === 1 && decisions[0].actor !== winners[0].actor))
          problem(`the audit holds ${decisions.length} decisions: ${decisions.map((d) => `${d.action} by ${d.actor}`).join(', ')}`);
        if (decided === 'approve') out.approved++;
        if (decided === 'reject') out.rejected++;
        const ran = calls(home, 'mail-calls.log').filter((l) => l === `send_email ${JSON.stringify({ to: 'ana', subject })}`).length;
        out.executions += ran;
        if (ran !== (decided === 'approve' ? 1 : 0)) problem(`the ${decided ?? 'unanswered'} call ran ${ran} times`);
        if (final.status !== 'done') problem(`the run ended ${final.status} (${final.reason})`);
      }
    } catch (err) {
      const e = err as Error & { cause?: unknown };
      const cause = e?.cause ? ` (${String((e.cause as Error)?.message ?? e.cause)})` : '';
      const logs = servers
        .map((x, i) => `server ${'AB'[i]} exit ${x.child.exitCode ?? x.child.signalCode ?? 'running'}: ${x.stderr().trim().slice(-300)}`)
        .join(' | ');
      out.violations.push({ card: `${st.name}`, problem: `${String(e?.message ?? err)}${cause}; ${logs}` });
    } finally {
      await store?.close();
      for (const c of children) c.kill('SIGTERM');
      await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : null)));
      rmSync(home, { recursive: true, force: true });
    }
  }
  out.ms = Math.round(performance.now() - started);
  return out;
}
