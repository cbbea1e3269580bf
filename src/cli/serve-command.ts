/**
 * `keel serve`: Keel as a service (the HTTP API, live events, tokens, webhooks) until a signal stops
 * it. Never loads the server before the command runs (keel --help loads none of it), and never
 * prints the first admin token anywhere but once, on stdout.
 */
import type { Command } from 'commander';
import { BUNDLED_PLUGINS } from '../config/paths.js';
import { type CommandContext, collectList, portNumber, VERSION } from './context.js';

export function registerServe(program: Command, { io, telemetry, onStop, setCode }: CommandContext): void {
  program
    .command('serve')
    .description('Keel as a service: the HTTP API (/v1), live events, tokens and roles, webhooks')
    .option('--host <host>', 'address to listen on (127.0.0.1 is this machine only)', '127.0.0.1')
    .option('--port <port>', 'port (0: any free port)', (v) => portNumber(v), 7373)
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .option('-m, --model <spec>', 'the model runs use unless a request names one; default KEEL_MODEL')
    .option('--allow-model <prefix>', 'a model spec prefix a request may choose (repeatable), e.g. script: or openai:', collectList, [])
    .option('--cors <origin>', 'an origin allowed to call the API from a browser (repeatable); none by default', collectList, [])
    .option('--work', 'on a PostgreSQL store: also drive the legs it queues, as a worker does (default: workers drive them)')
    .action(
      async (o: {
        host: string;
        port: number;
        plugins: string[];
        model?: string;
        allowModel: string[];
        cors: string[];
        work?: boolean;
      }) => {
        if (o.work) io.env.KEEL_SERVE_WORK = '1';
        const { startServer } = await import('../server/serve.js');
        const stopTelemetry = await telemetry();
        const srv = await startServer({
          host: o.host,
          port: o.port,
          pluginDirs: o.plugins,
          model: o.model,
          allowedModels: o.allowModel,
          corsOrigins: o.cors,
          env: io.env,
          defaultPluginDirs: [BUNDLED_PLUGINS],
          version: VERSION,
          log: (line) => io.err(`${line}\n`),
        });
        if (srv.adminToken) {
          io.err(`keel serve: first start: an admin token was made. It is shown this once; only its hash is kept:\n`);
          io.out(`admin token: ${srv.adminToken}\n`);
        }
        io.out(`keel serve: listening on ${srv.url}\n`);
        await new Promise<void>((resolveStop) => {
          onStop(() => {
            io.err('keel serve: stopping\n');
            srv.close().then(resolveStop, resolveStop);
          });
        });
        await stopTelemetry?.();
        setCode(0);
      },
    );
}
