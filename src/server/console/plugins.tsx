/**
 * The console's plugins page (`/plugins`), the drift panel: each plugin's status, its refused or
 * degraded registrations and its drift, and its tools with their effect, gate and policy. Never
 * renders a plugin's text unescaped (Hono JSX escapes every value), and changes nothing.
 */
import type { Hono } from 'hono';
import type { FC } from 'hono/jsx';
import { Badge, type ConsoleRoutes, Head, type Who } from './shell.js';

/** One line of a plugin's report: a refused registration or a drift. */
const ReportRow: FC<{ row: { kind: string; tool?: string; message: string }; kind: 'refused' | 'drift' }> = ({ row, kind }) => (
  <p class={`row ${kind}`}>
    <Badge kind={kind}>{row.kind.replaceAll('_', ' ')}</Badge> {row.tool && <code>{row.tool}</code>} {row.message}
  </p>
);

export function mountPlugins(app: Hono, routes: ConsoleRoutes): void {
  const { d, page, session } = routes;
  const { keel } = d;

  app.get('/plugins', async (c) => {
    const s = session(c) as { who: Who; csrf: string };
    const reg = await keel.registry(d.pluginDirs);
    return page(
      c,
      200,
      'Plugins',
      <div>
        <h1>Plugins</h1>
        {(reg.policy?.unmatched ?? []).map((u) => (
          <p class="warning">{u}</p>
        ))}
        {reg.plugins.map((p) => (
          <section class={`plugin p-${p.status}`} aria-labelledby={`p-${p.name}`}>
            <h2 id={`p-${p.name}`}>
              {p.name} <small>{p.version}</small> <Badge kind={p.status}>{p.status}</Badge>
            </h2>
            <p class="dir">
              <code>{p.dir}</code>
            </p>
            {[...p.failures, ...p.degraded].map((r) => (
              <ReportRow row={r} kind="refused" />
            ))}
            {p.drift.map((r) => (
              <ReportRow row={r} kind="drift" />
            ))}
            {p.tools.length > 0 && (
              <table class="tools">
                <Head cols={['Tool', 'Effect', 'Gate', 'Guidance', 'Pinned', 'Answers directly']} />
                <tbody>
                  {p.tools.map((t) => (
                    <tr>
                      <td data-label="Tool">
                        <code>{t.name}</code>
                      </td>
                      <td data-label="Effect">
                        <Badge kind={t.effect}>{t.effect}</Badge>
                      </td>
                      <td data-label="Gate">
                        {t.gate}
                        {t.gate !== t.declared_gate ? ` (declared ${t.declared_gate}${t.gate_source ? `; ${t.gate_source}` : ''})` : ''}
                        {t.denied ? ' · denied by policy' : ''}
                      </td>
                      <td data-label="Guidance">{t.guidance ? 'yes' : 'no'}</td>
                      <td data-label="Pinned">{t.pinned ? 'yes' : 'no'}</td>
                      <td data-label="Answers directly">{t.answers_directly ? 'yes' : 'no'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        ))}
      </div>,
      s.who,
      s.csrf,
    );
  });
}
