/**
 * A run's page (`/runs/:id`): its summary, parent and delegates, answer, pending card or question,
 * and its trace — calls with their outcomes (R27) and edits (A7), the model's requests and menus,
 * what it read from outside (U6), effects, approvals, the conversation and notes. Never renders a
 * model's, tool's or plugin's text unescaped (Hono JSX escapes every value), and changes nothing:
 * its forms post to answers.tsx.
 */
import type { Hono } from 'hono';
import type { FC } from 'hono/jsx';
import { isMcpSession } from '../../keel/keel.js';
import { untrustedRead } from '../../loop/result.js';
import type { Registry } from '../../plugin-host/host.js';
import type { CallRecord, Message, RunState } from '../../types/index.js';
import { allows } from '../access/tokens.js';
import { Card, mayAnswerCard, Question, ReadFromOutside } from './cards.js';
import { Badge, type ConsoleRoutes, Head, type Who } from './shell.js';

const OUTCOME_TEXT: Record<CallRecord['outcome'], string> = {
  ran: 'ran',
  held_for_confirmation: 'held',
  awaiting_approval: 'awaiting approval',
  denied_by_mode: 'denied by mode',
  denied_by_policy: 'denied by policy',
  repeat: 'repeat',
  unknown_tool: 'unknown tool',
  invalid_arguments: 'invalid arguments',
  rejected: 'rejected',
  error: 'error',
};

const Transcript: FC<{ messages: readonly Message[] }> = ({ messages }) => (
  <ol class="transcript">
    {messages.map((m) =>
      m.role === 'user' ? (
        <li class="m-user">
          <strong>User</strong> {m.content}
        </li>
      ) : m.role === 'assistant' ? (
        <li class="m-assistant">
          <strong>Model</strong> {m.content}
          {m.tool_calls.map((c) => (
            <div class="m-call">
              calls <code>{c.name}</code> <code class="id">{c.id}</code>
            </div>
          ))}
        </li>
      ) : (
        <li class={m.is_error ? 'm-tool err' : 'm-tool'}>
          <strong>{m.name}</strong> <code class="id">{m.call_id}</code> <pre>{m.content}</pre>
        </li>
      ),
    )}
  </ol>
);

export function mountTrace(app: Hono, routes: ConsoleRoutes): void {
  const { d, page, session, guarded } = routes;
  const { keel, store } = d;

  app.get('/runs/:id', async (c) => {
    const s = session(c) as { who: Who; csrf: string };
    return guarded(c, s.who, s.csrf, async () => {
      const run = await keel.getRun(c.req.param('id'));
      const body = await runPage(run, s.who, s.csrf);
      if (c.req.query('fragment')) return c.html(body);
      const live = run.status === 'running' || run.status === 'paused';
      return page(
        c,
        200,
        `Run ${run.id}`,
        <div data-live={live ? `/v1/runs/${run.id}/events` : undefined} data-fragment={`/runs/${run.id}?fragment=1`}>
          {body}
        </div>,
        s.who,
        s.csrf,
      );
    });
  });

  async function runPage(run: RunState, who: Who, csrf: string) {
    let registry: Registry | undefined;
    try {
      registry = await keel.registry(run.plugin_dirs);
    } catch {
      registry = undefined; // a run whose plugins no longer mount still shows its trace
    }
    const effectOf = (tool: string) => registry?.byName.get(tool)?.declaration.effect;
    const approvals = await store.listApprovals({ run_id: run.id });
    const can = allows(who.role, 'approver');
    const pendingCard =
      run.pause?.kind === 'approval' ? approvals.find((a) => a.id === (run.pause as { approval_id: string }).approval_id) : undefined;
    // D6 (issue 38): a delegate's run links its parent; a run links the delegates it started.
    const children = await keel.children(run.id);
    return (
      <div>
        <h1>
          Run <code>{run.id}</code>
        </h1>
        <p class="summary">
          <Badge kind={run.status}>{d.isQueued(run.id) ? 'queued' : run.status}</Badge> {run.reason ?? ''} · mode {run.mode} · model{' '}
          <code>{run.model}</code> · {run.model_calls} model call(s) · session <a href={`/sessions/${run.session_id}`}>{run.session_id}</a>
        </p>
        <p class="request">
          <q>{run.request}</q>
        </p>
        {run.parent && (
          <p class="parent">
            Delegate {run.parent.delegate} (task {run.parent.task_id}), started by run{' '}
            <a href={`/runs/${run.parent.run_id}`}>{run.parent.run_id}</a>
          </p>
        )}
        {children.length > 0 && (
          <section aria-labelledby="h-tasks">
            <h2 id="h-tasks">Delegates</h2>
            <ul class="tasks">
              {children.map((t) => (
                <li>
                  {t.task_id} {t.delegate}: <a href={`/runs/${t.run_id}`}>{t.run_id}</a>{' '}
                  <Badge kind={t.status as RunState['status']}>{t.status}</Badge>
                </li>
              ))}
            </ul>
          </section>
        )}
        {run.answer && (
          <section aria-labelledby="h-answer">
            <h2 id="h-answer">Answer</h2>
            <pre class="answer-text">{run.answer}</pre>
          </section>
        )}
        {pendingCard?.status === 'pending' && (
          <Card
            a={pendingCard}
            canAnswer={mayAnswerCard(who, pendingCard)}
            csrf={csrf}
            tools={can && !isMcpSession(run) ? registry?.byName : undefined}
          />
        )}
        {run.pause?.kind === 'ask_user' && <Question run={run} canAnswer={can} csrf={csrf} />}
        <section aria-labelledby="h-calls">
          <h2 id="h-calls">Calls</h2>
          {run.steps.length ? (
            <table class="calls">
              <Head cols={['Step', 'Call', 'Tool', 'Outcome', 'Arguments', 'Result']} />
              <tbody>
                {run.steps.map((r) => (
                  <tr class={`o-${r.outcome}`}>
                    <td data-label="Step">{r.step}</td>
                    <td data-label="Call">
                      <code class="id">{r.call_id}</code>
                    </td>
                    <td data-label="Tool">
                      {r.tool} {r.effect && <Badge kind={r.effect}>{r.effect}</Badge>}
                    </td>
                    <td data-label="Outcome">
                      {/* R27: a rejected call is the owner's decision, not an error: a neutral badge, not the red one. */}
                      <Badge kind={r.outcome === 'rejected' ? 'call-rejected' : r.outcome}>{OUTCOME_TEXT[r.outcome]}</Badge>
                    </td>
                    <td data-label="Arguments">
                      <code>{JSON.stringify(r.args)}</code>
                      {r.edited_from && (
                        // A7: the owner changed the call on its card: what the model asked for, and who changed it.
                        <p class="edited">
                          {`edited by ${r.edited_by ?? 'the approver'}; the model asked `}
                          <code>{JSON.stringify(r.edited_from)}</code>
                        </p>
                      )}
                    </td>
                    <td data-label="Result">
                      <pre>{r.result}</pre>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p>No calls yet.</p>
          )}
        </section>
        <section aria-labelledby="h-requests">
          <h2 id="h-requests">Model requests</h2>
          {run.requests.map((q) => (
            <details class="request-menu">
              <summary>
                Step {q.step}: {q.tools.length} tool(s) declared
                {q.tools.some((t) => !t.available) ? `, ${q.tools.filter((t) => !t.available).length} unavailable in ${run.mode} mode` : ''}
                {q.dropped.length ? `, ${q.dropped.length} left off` : ''}
                {q.input_tokens !== undefined ? ` · ${q.input_tokens} input tokens` : ''}
              </summary>
              <ul class="menu">
                {q.tools.map((t) => (
                  <li class={t.available ? '' : 'unavailable'}>
                    <code>{t.name}</code> {effectOf(t.name) && <Badge kind={effectOf(t.name) as string}>{effectOf(t.name)}</Badge>}
                    {!t.available && <Badge kind="unavailable">declared, unavailable</Badge>}
                  </li>
                ))}
              </ul>
              {q.dropped.length > 0 && <p class="dropped">Left off the menu: {q.dropped.join(', ')}</p>}
              {(q.found?.length ?? 0) > 0 && <p class="found">Found by find_tools: {q.found?.join(', ')}</p>}
            </details>
          ))}
        </section>
        {untrustedRead(run).length > 0 && (
          <section aria-labelledby="h-untrusted">
            <h2 id="h-untrusted">Read from outside you</h2>
            <ReadFromOutside untrusted={untrustedRead(run)} />
          </section>
        )}
        {run.effects.length > 0 && (
          <section aria-labelledby="h-effects">
            <h2 id="h-effects">Effects recorded</h2>
            <ul>
              {run.effects.map((e) => (
                <li>
                  <code>{e.tool}</code> <Badge kind={e.effect}>{e.effect}</Badge> <code class="id">{e.call_id}</code>{' '}
                  <code>{JSON.stringify(e.args)}</code>
                </li>
              ))}
            </ul>
          </section>
        )}
        {approvals.length > 0 && (
          <section aria-labelledby="h-approvals">
            <h2 id="h-approvals">Approvals</h2>
            <ul>
              {approvals.map((a) => (
                <li>
                  <code>{a.id}</code> {a.card.title}: <Badge kind={a.status}>{a.status}</Badge>
                  {a.answered_by ? ` by ${a.answered_by}` : ''}
                  {a.reason ? ` (${a.reason})` : ''}
                </li>
              ))}
            </ul>
          </section>
        )}
        <section aria-labelledby="h-conv">
          <h2 id="h-conv">Conversation</h2>
          <Transcript messages={run.messages} />
        </section>
        {(run.notes.length > 0 || run.warnings.length > 0) && (
          <section aria-labelledby="h-notes">
            <h2 id="h-notes">Notes</h2>
            <ul>
              {[...run.warnings.map((w) => `warning: ${w}`), ...run.notes].map((n) => (
                <li>{n}</li>
              ))}
            </ul>
          </section>
        )}
      </div>
    );
  }
}
