/**
 * The CLI against a server (`keel --server URL`, or KEEL_SERVER with KEEL_TOKEN): `run`, `resume`,
 * `runs list|show` and `approvals list|approve|reject` call the HTTP API instead of the local store,
 * follow the run's live events, and print exactly what the local commands print.
 */
import type { Answer, ApprovalRecord, LoopEvent, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { readSse } from '../util/sse.js';
import type { RunRow } from './render.js';

interface Accepted {
  run_id: string;
  events: string;
}

type ApiRun = RunResult & { status: RunResult['status'] | 'running'; session_id: string };

const CODE_OF: Record<number, KeelError['code']> = {
  400: 'bad_input',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  410: 'expired',
};

export class Remote {
  readonly base: string;

  constructor(
    server: string,
    private readonly token: string,
  ) {
    let url: URL;
    try {
      url = new URL(server);
    } catch {
      throw new KeelError('bad_input', `--server ${server} is not a URL (e.g. http://127.0.0.1:7373)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new KeelError('bad_input', `--server ${server}: use http:// or https://`);
    this.base = url.origin + url.pathname.replace(/\/$/, '');
  }

  /** The server from --server or KEEL_SERVER, with KEEL_TOKEN; undefined when neither names one. */
  static from(server: string | undefined, env: NodeJS.ProcessEnv): Remote | undefined {
    const url = server ?? env.KEEL_SERVER;
    if (!url) return undefined;
    if (!env.KEEL_TOKEN) {
      throw new KeelError(
        'bad_input',
        `talking to ${url} needs a token: set KEEL_TOKEN (keel tokens create makes one on the server's machine)`,
      );
    }
    return new Remote(url, env.KEEL_TOKEN);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new KeelError('config', `cannot reach the server at ${this.base}: ${(err as Error).cause ?? (err as Error).message}`);
    }
    const text = await res.text();
    let data: unknown;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = text;
    }
    if (!res.ok) {
      const p = data as { detail?: string; errors?: { field: string; message: string }[] } | null;
      const fields = p?.errors?.map((e) => `${e.field}: ${e.message}`).join('; ');
      const detail = p?.detail ?? (typeof data === 'string' ? data.slice(0, 300) : `HTTP ${res.status}`);
      throw new KeelError(CODE_OF[res.status] ?? 'config', `the server says (${res.status}): ${detail}${fields ? ` (${fields})` : ''}`);
    }
    return data as T;
  }

  /** Follows a leg's events until it ends or pauses, then returns the run as `keel run --json` prints it. */
  private async follow(a: Accepted, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    const res = await fetch(`${this.base}${a.events}`, { headers: { authorization: `Bearer ${this.token}`, accept: 'text/event-stream' } });
    if (res.status === 200 && res.body) {
      for await (const e of readSse(res.body)) {
        if (e.event === 'text_delta') continue;
        const ev = JSON.parse(e.data) as LoopEvent & { run_id: string };
        onEvent?.(ev);
        if (ev.type === 'run_finished') break;
      }
    }
    const run = await this.call<ApiRun>('GET', `/v1/runs/${encodeURIComponent(a.run_id)}`);
    return toRunResult(run);
  }

  async run(
    message: string,
    o: { model?: string; mode?: string; session?: string; pluginDirs?: string[] },
    onEvent?: (e: LoopEvent) => void,
  ) {
    const a = await this.call<Accepted>('POST', '/v1/runs', {
      request: message,
      ...(o.model ? { model: o.model } : {}),
      ...(o.mode ? { mode: o.mode } : {}),
      ...(o.session ? { session: o.session } : {}),
      ...(o.pluginDirs?.length ? { plugins: o.pluginDirs } : {}),
    });
    return this.follow(a, onEvent);
  }

  async resume(runId: string, answer: Answer, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    const a = await this.call<Accepted>('POST', `/v1/runs/${encodeURIComponent(runId)}/answer`, {
      text: answer.text,
      ...(answer.confirm !== undefined ? { confirm: answer.confirm } : {}),
    });
    return this.follow(a, onEvent);
  }

  async continueRun(runId: string, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    return this.follow(await this.call<Accepted>('POST', `/v1/runs/${encodeURIComponent(runId)}/continue`), onEvent);
  }

  async respondToApproval(
    id: string,
    decision: 'approve' | 'reject',
    reason: string | null,
    onEvent?: (e: LoopEvent) => void,
    options: { consentWrites?: boolean; arguments?: Record<string, unknown> } = {},
  ): Promise<{ approval: ApprovalRecord; result?: RunResult; app?: { model?: string; tools?: string[] } }> {
    const r = await this.call<{ approval: ApprovalRecord; run: Accepted | null; waits_for_app?: { model?: string; tools?: string[] } }>(
      'POST',
      `/v1/approvals/${encodeURIComponent(id)}`,
      {
        decision,
        ...(reason ? { reason } : {}),
        ...(options.consentWrites ? { consent_writes: true } : {}),
        ...(options.arguments ? { arguments: options.arguments } : {}),
      },
    );
    // R18: a run only its application can carry on: recorded on the server; it waits for the app.
    if (r.waits_for_app) return { approval: r.approval, app: r.waits_for_app };
    return { approval: r.approval, result: r.run ? await this.follow(r.run, onEvent) : undefined };
  }

  async listRuns(limit: number): Promise<RunRow[]> {
    return (await this.call<{ runs: RunRow[] }>('GET', `/v1/runs?limit=${Math.min(limit, 200)}`)).runs;
  }

  getRun(runId: string): Promise<ApiRun> {
    return this.call<ApiRun>('GET', `/v1/runs/${encodeURIComponent(runId)}`);
  }

  async listApprovals(status?: string): Promise<ApprovalRecord[]> {
    return (await this.call<{ approvals: ApprovalRecord[] }>('GET', `/v1/approvals${status ? `?status=${status}` : ''}`)).approvals;
  }
}

/** The API's run, as `keel run --json` prints it (a run still going is reported as the server sees it). */
function toRunResult(r: ApiRun): RunResult {
  const { session_id: _s, ...rest } = r;
  const extra = ['queued', 'request', 'model', 'contract', 'created_at', 'updated_at'];
  const out = Object.fromEntries(Object.entries(rest).filter(([k]) => !extra.includes(k)));
  return out as unknown as RunResult;
}
