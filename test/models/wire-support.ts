import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Keel, type KeelOptions } from '../../src/keel/keel.js';
import { FakeGateway, type GatewayOptions, history, type Protocol, type ScriptedReply } from '../support/fake-gateway.js';
import { tempHome } from '../support/helpers.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const FIXTURE_PLUGINS = join(ROOT, 'test', 'fixtures', 'plugins');
export const WIRE_PLUGINS = join(ROOT, 'test', 'fixtures', 'wire', 'plugins');
export const LOAD_TRACE = join(ROOT, 'test', 'fixtures', 'wire', 'load-trace', 'register.mjs');

/** How Keel reaches the fake gateway through each protocol: a model spec and the env that points it there. */
export interface Route {
  protocol: Protocol;
  spec: string;
  env: (g: FakeGateway) => Record<string, string>;
  /** A tool-call id in the provider's own style. */
  id: (tag: string) => string;
}

export const ROUTES: Route[] = [
  {
    protocol: 'openai',
    spec: 'openai:gpt-4o-mini',
    env: (g) => ({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: g.openaiBaseUrl }),
    // Longer than 40 characters: pi-ai truncates "foreign" OpenAI ids to 40, Keel's must survive whole.
    id: (tag) => `call_${tag}_0123456789abcdefghijklmnopqrstuvwxyzABCDEF`,
  },
  {
    protocol: 'anthropic',
    spec: 'anthropic:claude-sonnet-4-5',
    env: (g) => ({ ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: g.anthropicBaseUrl }),
    id: (tag) => `toolu_01${tag}Xq90qw90lq917835`,
  },
];

/** One test's world: a fresh KEEL_HOME, a gateway, and Keels that share both (new Keel = new process). */
export class WireWorld {
  readonly home = tempHome('keel-wire-');
  readonly env: NodeJS.ProcessEnv;
  private readonly keels: Keel[] = [];

  private constructor(
    readonly route: Route,
    readonly gateway: FakeGateway,
  ) {
    // The fixture pool (15 tools) is over the default cap of 12: the wire tests script calls to any
    // fixture tool, so they declare the whole pool unless a test passes its own shortlist.
    this.env = { KEEL_HOME: this.home, KEEL_TOOL_CAP: '100', ...route.env(gateway) };
  }

  static async start(route: Route, replies: ScriptedReply[], opts: GatewayOptions = { strict: true }): Promise<WireWorld> {
    return new WireWorld(route, await FakeGateway.start(replies, opts));
  }

  /** A new Keel over the same home and env, as a new process would build. */
  keel(opts: Omit<KeelOptions, 'home' | 'env'> = {}): Keel {
    const k = new Keel({ ...opts, home: this.home, env: this.env });
    this.keels.push(k);
    return k;
  }

  file(name: string): string {
    return join(this.home, name);
  }

  lines(name: string): string[] {
    const f = this.file(name);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean) : [];
  }

  async close(): Promise<void> {
    for (const k of this.keels) await k.close();
    await this.gateway.close();
    rmSync(this.home, { recursive: true, force: true });
  }
}

/**
 * R19 on the wire: in every request the gateway saw, each tool call has exactly one result with its
 * id, no result answers an unknown id, and every id is one the scripted model gave (none invented).
 */
export function assertWirePairing(g: FakeGateway, scriptedIds: ReadonlySet<string>): void {
  g.requests.forEach((r, i) => {
    const { calls, results } = history(r);
    const callIds = calls.map((c) => c.id);
    const resultIds = results.map((x) => x.id);
    assert.deepEqual([...resultIds].sort(), [...callIds].sort(), `request ${i + 1}: results ${resultIds} do not answer calls ${callIds}`);
    assert.equal(new Set(callIds).size, callIds.length, `request ${i + 1}: a call id repeats`);
    for (const id of callIds) assert.ok(scriptedIds.has(id), `request ${i + 1}: id ${id} was not given by the model`);
    for (const x of results) assert.ok(!/No result provided/.test(x.content), `request ${i + 1}: a synthetic result for ${x.id}`);
  });
}

/** The result a request carried for one call id. */
export function resultFor(g: FakeGateway, request: number, id: string): { content: string; is_error?: boolean } {
  const r = g.requests[request];
  assert.ok(r, `the gateway saw no request ${request + 1} (it saw ${g.requests.length})`);
  const found = history(r).results.filter((x) => x.id === id);
  assert.equal(found.length, 1, `request ${request + 1} has ${found.length} results for ${id}`);
  return found[0];
}

export function allIds(replies: ScriptedReply[]): Set<string> {
  return new Set(replies.flatMap((r) => (r.tool_calls ?? []).map((c) => c.id)));
}
