/**
 * Issue 48 (S10): Keel's A2A agent card (`/.well-known/agent-card.json`), public by the protocol: what this
 * deployment can do — one skill per plugin (and the application's own tools), each tool with its
 * effect, what the core does before it runs, and the first line of its description — where to call
 * it (the JSON-RPC interface), and that a bearer token is needed. Never holds a secret, a folder, a
 * config value, an operator's policy or anything a run has seen: only what the manifests declare.
 */
import type { Registry } from '../../plugin-host/host.js';
import type { Gate } from '../../types/index.js';

/** Where the JSON-RPC binding is served, under the server's origin. */
export const A2A_PATH = '/a2a';

const GATE_WORDS: Record<Gate, string> = {
  none: 'runs without asking',
  confirm_once: 'asks once per task before its first write',
  approval: 'each call waits for a person to approve its card (the task is input-required until then)',
};

/** A tool's description, first line, cut short. */
function firstLine(text: string | undefined): string {
  const line = (text ?? '').split('\n').find((l) => l.trim()) ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line.trim();
}

/** The card as the protocol's JSON (what a client fetches; `AgentCard.fromJSON` reads it). */
export function agentCardJson(reg: Registry, o: { baseUrl: string; version: string }): Record<string, unknown> {
  const skills = reg.plugins
    .filter((p) => p.status !== 'failed' && p.tools.length)
    .map((p) => ({
      id: p.name,
      name: p.name,
      description: p.tools
        .map((t) => {
          const what = firstLine(reg.byName.get(t.name)?.description);
          return `${t.name} (${t.effect}; ${t.denied ? 'denied by the operator' : GATE_WORDS[t.gate]})${what ? `: ${what}` : ''}`;
        })
        .join('\n'),
      tags: [p.name, ...p.tools.map((t) => t.name)],
      examples: [],
    }));
  return {
    name: 'Keel',
    description:
      "An agent whose every tool declares its effect. Reads run freely; a write asks once per task first; a destructive call, or a write its operator pins, waits for a person's approval of that exact call: the task is input-required, with the card in words and as a data part, until someone answers it once — here, or in Keel's console or CLI.",
    version: o.version,
    supportedInterfaces: [{ url: `${o.baseUrl}${A2A_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true, pushNotifications: false },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          description:
            'A keel serve token (keel tokens create NAME --role approver): a viewer reads tasks; an approver also sends messages, answers cards and cancels tasks',
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills,
  };
}
