/**
 * The help's Examples sections: each `keel` command's, by its path (`keel --help` and every
 * `keel … --help` ends with one). Never names an internal rule id or a note for Keel's developers:
 * what is here is for the user reading the help.
 */

/** Each command's Examples section, by its path. */
export const EXAMPLES: Record<string, [command: string, comment: string][]> = {
  keel: [
    ['keel run "what bills are due this week?"', 'ask, with the bundled reference plugins'],
    ['keel chat', 'an interactive session'],
    ['keel approvals list --status pending', 'cards waiting for you'],
    ['keel demo', 'the reference assistant working its scenarios'],
  ],
  'keel run': [
    ['keel run "remind me to call the plumber tomorrow at 9"', ''],
    ['keel run --model ollama:qwen3 "what is on my calendar on Friday?"', 'with a local model'],
    ['echo "summarise my notes" | keel run -', 'the request from stdin'],
    ['keel run --json "upcoming bills" | jq .answer', 'for scripts'],
    ['keel run --mode plan "tidy up my notes folder"', 'propose a plan first; nothing is written until you approve it'],
  ],
  'keel resume': [
    ['keel resume run_01H… --answer "the blue one"', 'answer the question the run asked'],
    ['keel resume run_01H… --yes', 'confirm the writes it holds'],
    ['keel resume run_01H… --no --answer "only the first two"', 'decline, and say why'],
    ['keel resume run_01H…', 'continue after its card was answered, or after an interruption'],
  ],
  'keel runs': [
    ['keel runs list', ''],
    ['keel runs show run_01H…', ''],
  ],
  'keel runs list': [
    ['keel runs list -n 5', ''],
    ['keel runs list --json | jq -r ".[].run_id"', 'the ids only'],
  ],
  'keel runs show': [
    ['keel runs show run_01H…', ''],
    ['keel runs show run_01H… --json | jq .steps', 'the calls'],
  ],
  'keel runs cancel': [['keel runs cancel run_01H… --reason "not needed any more"', '']],
  'keel plugins': [
    ['keel plugins check', ''],
    ['keel plugins init todo', 'a new plugin to start from'],
  ],
  'keel plugins check': [
    ['keel plugins check', 'the plugins keel run would use'],
    ['keel plugins check ./todo', 'one plugin folder'],
    ['keel plugins check ./todo/plugin.yaml --json', 'as data, for an editor or CI'],
  ],
  'keel plugins show': [
    ['keel plugins show calendar', 'a bundled plugin'],
    ['keel plugins show todo --plugins .', 'a plugin in this folder'],
  ],
  'keel plugins init': [
    ['keel plugins init todo && cd todo && npm install && npm test', ''],
    [
      'keel plugins init --from-mcp "npx -y @modelcontextprotocol/server-memory" --out ./memory',
      "draft a manifest from an MCP server's tools",
    ],
  ],
  'keel approvals': [
    ['keel approvals list --status pending', ''],
    ['keel approvals approve appr_01H…', ''],
  ],
  'keel approvals list': [['keel approvals list --status pending', 'what waits for you']],
  'keel approvals approve': [
    ['keel approvals approve appr_01H…', ''],
    ['keel approvals approve appr_01H… --reason "checked with Sam"', ''],
    ['keel approvals approve appr_01H… --allow-writes', 'a plan: its writes run without asking again'],
    ['keel approvals approve appr_01H… --args \'{"ids":["m2"]}\'', 'run the call with your arguments instead'],
    ['keel approvals approve appr_01A… appr_01B… appr_01C…', 'several cards, each answered once'],
    ['keel approvals reject --run run_01H…', 'every pending card of a run'],
  ],
  'keel approvals reject': [
    ['keel approvals reject appr_01H…', ''],
    ['keel approvals reject appr_01H… --reason "keep the March files"', ''],
  ],
  'keel chat': [
    ['keel chat', ''],
    ['keel chat --mode plan --model ollama:qwen3', 'start in plan mode, with a local model'],
  ],
  'keel demo': [
    ['keel demo', 'every scenario, with the scripted model'],
    ['keel demo --only bills', 'the scenarios whose file name contains "bills"'],
  ],
  'keel serve': [
    ['keel serve', 'on 127.0.0.1:7373; the first start prints an admin token'],
    ['keel serve --host 0.0.0.0 --port 8080 --model openai:gpt-4.1-mini', 'for other machines'],
  ],
  'keel mcp': [['keel mcp serve', '']],
  'keel mcp serve': [
    ['keel mcp serve', 'stdio, for an MCP client that starts Keel itself'],
    ['keel mcp serve --http 7374 --mode plan', 'Streamable HTTP, refusing every write'],
  ],
  'keel tokens': [
    ['keel tokens create --name phone --role approver', ''],
    ['keel tokens list', ''],
    ['keel tokens groups ana --add finance', ''],
  ],
  'keel tokens create': [['keel tokens create --name phone --role approver', 'a token that can answer cards']],
  'keel tokens list': [['keel tokens list --json', '']],
  'keel tokens revoke': [['keel tokens revoke phone', '']],
  'keel tokens groups': [
    ['keel tokens groups ana --add finance', 'ana may answer the cards routed to finance'],
    ['keel tokens groups ana --set finance,ops', 'exactly these'],
    ['keel tokens groups ana --set ""', 'in no group'],
  ],
  'keel data': [['keel data reset --yes', '']],
  'keel data reset': [
    ['keel data reset', 'asks first, on a terminal'],
    ['keel data reset --yes', 'in a script'],
  ],
};

/** An Examples section: each command with its comment above it. */
export function examples(rows: [string, string][]): string {
  const lines = rows.flatMap(([cmd, comment]) => (comment ? [`  # ${comment}`, `  $ ${cmd}`] : [`  $ ${cmd}`]));
  return `\nExamples:\n${lines.join('\n')}\n`;
}
