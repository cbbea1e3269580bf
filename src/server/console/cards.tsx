/**
 * The console's cards: an approval card (its calls, what the run read from outside, who may answer,
 * its Approve and Reject form, the edit form and the batch box) and a run's question. Never renders
 * a model's, tool's or plugin's text unescaped (Hono JSX escapes every value), and never offers a
 * button to a token that may not answer the card (A9) — the one answer path refuses it anyway.
 */
import type { FC } from 'hono/jsx';
import { groupSources, OUTSIDE_LABEL } from '../../approvals/card.js';
import { type Answerer, mayAnswer, onlyGroups } from '../../approvals/who.js';
import type { ApprovalRecord, OutsideValue, RunState, ToolSpec, UntrustedSource } from '../../types/index.js';
import { allows } from '../access/tokens.js';
import { BatchCheck, EditForm } from './edit.js';
import { Badge, Time, type Who } from './shell.js';

/** A9: the logged-in token as the one who answers a card. */
export const answerer = (who: Who): Answerer => ({ name: who.name, role: who.role, groups: who.groups, kind: 'token' });

/** A9: may the logged-in token answer this card (its role, and its groups for a routed card)? */
export const mayAnswerCard = (who: Who, a: ApprovalRecord): boolean => allows(who.role, 'approver') && mayAnswer(a.card, answerer(who));

/**
 * U6: what a run read from outside the user — from the run's own record, never the model's words —
 * counted by tool, each result with its label (others' words: JSX escapes them).
 */
export const ReadFromOutside: FC<{ untrusted: readonly UntrustedSource[] | undefined }> = ({ untrusted }) => {
  if (!untrusted?.length) return null;
  const groups = groupSources(untrusted);
  return (
    <section class="untrusted" aria-label="What this run read from outside">
      <p class="warning">
        <strong>This run read:</strong> {groups.map((g) => `${g.count} result${g.count === 1 ? '' : 's'} of ${g.tool}`).join(', ')} — words
        from outside you. Approve only what you asked for.
      </p>
      <ul class="sources">
        {groups.flatMap((g) =>
          g.labels.map((l) => (
            <li>
              <code>{g.tool}</code> {l}
            </li>
          )),
        )}
      </ul>
    </section>
  );
};

/**
 * O2/O6: where an outside value sits in the exact call as the card shows it (canonical JSON): a
 * string inside its quotes (a value the card cut at 80 characters by what is left of it), a number
 * written bare after `:`, `[` or `,`. Its first place only; undefined when it is not found there.
 */
function findValue(call: string, value: string): [number, number] | undefined {
  const cut = value.length >= 80 && value.endsWith('…');
  const inner = JSON.stringify(cut ? value.slice(0, -1) : value).slice(1, -1);
  const quoted = call.indexOf(cut ? `"${inner}` : `"${inner}"`);
  if (quoted >= 0) return [quoted + 1, quoted + 1 + inner.length];
  if (!/^-?\d[\d.eE+-]*$/.test(value)) return undefined;
  for (let i = call.indexOf(value); i >= 0; i = call.indexOf(value, i + 1)) {
    const after = call[i + value.length] ?? '';
    if (/[:[,]/.test(call[i - 1] ?? '') && !/[\d.eE]/.test(after)) return [i, i + value.length];
  }
  return undefined;
}

/** The spans of the call to highlight, in order and never overlapping. */
function outsideSpans(call: string, outside: readonly OutsideValue[]): [number, number][] {
  const spans: [number, number][] = [];
  for (const o of outside) {
    const span = findValue(call, o.value);
    if (span && !spans.some(([a, b]) => span[0] < b && span[1] > a)) spans.push(span);
  }
  return spans.sort((x, y) => x[0] - y[0]);
}

/** O2/O6: the exact call with the values that did not come from the user highlighted (JSX escapes every piece). */
const MarkedCall: FC<{ call: string; outside?: readonly OutsideValue[] }> = ({ call, outside }) => {
  if (!outside?.length) return <code class="call">{call}</code>;
  const parts: (string | ReturnType<FC>)[] = [];
  let from = 0;
  for (const [a, b] of outsideSpans(call, outside)) {
    parts.push(call.slice(from, a), <mark>{call.slice(a, b)}</mark>);
    from = b;
  }
  parts.push(call.slice(from));
  return <code class="call">{parts}</code>;
};

/**
 * O2/O6: an open-world call's values that are not the user's own, one line each — "Not from you:
 * url = https://…" as the terminal card says it — each value highlighted; the model's text, escaped.
 */
const OutsideValues: FC<{ outside?: readonly OutsideValue[] }> = ({ outside }) => {
  if (!outside?.length) return null;
  return (
    <ul class="outside" aria-label="Values of this call that did not come from you">
      {outside.map((o) => (
        <li>
          <strong>{OUTSIDE_LABEL}</strong> <code>{o.path}</code>
          {' = '}
          <mark>{o.value}</mark>
        </li>
      ))}
    </ul>
  );
};

/** One title per card: a card of one call is titled by that call (its tool beside it), not twice. */
/** A pending card's answer may edit its calls (A7: `tools`, the run's pool) and join a batch (A8: `batch`). */
export const Card: FC<{ a: ApprovalRecord; canAnswer: boolean; csrf: string; tools?: ReadonlyMap<string, ToolSpec>; batch?: boolean }> = ({
  a,
  canAnswer,
  csrf,
  tools,
  batch,
}) => {
  const single = a.card.items.length === 1 ? a.card.items[0] : undefined;
  return (
    <article class="card" id={`card-${a.id}`} aria-labelledby={`t-${a.id}`}>
      <h3 id={`t-${a.id}`}>
        {single ? single.title : a.card.title} {single && <Badge kind="destructive">{single.tool}</Badge>}
      </h3>
      <p class="request">
        Asked: <q>{a.card.request}</q> · <a href={`/runs/${a.run_id}`}>run {a.run_id}</a>
      </p>
      <ReadFromOutside untrusted={a.card.untrusted} />
      {a.card.policy?.length ? <p class="policy">{`Asked by policy ${a.card.policy.join(', ')}`}</p> : null}
      {a.status === 'pending' && a.card.approvers?.length ? <p class="routed">{onlyGroups(a.card)}</p> : null}
      {a.card.items.map((i) => (
        <section class="item">
          {!single && (
            <h4>
              {i.title} <Badge kind="destructive">{i.tool}</Badge>
            </h4>
          )}
          <ul>
            {i.lines.map((l) => (
              <li>{l}</li>
            ))}
          </ul>
          <p class="undo">{i.undo}</p>
          <MarkedCall call={i.call} outside={i.outside} />
          <OutsideValues outside={i.outside} />
          {i.original && (
            // A7 (issue 40): the card words the edited call; what the model asked for stays beside it.
            <p class="edited">
              {`Edited by ${i.edited_by ?? 'the approver'}; was: ${i.original.title} `}
              <code>{i.original.call}</code>
            </p>
          )}
        </section>
      ))}
      {a.items
        // A card stored before its words followed an edit: the edited call is said here.
        .filter((i, n) => i.original_args && !a.card.items[n]?.original)
        .map((i) => (
          <p class="edited">
            {`Edited by ${i.edited_by ?? 'the approver'}: ran as `}
            <code>{`${i.tool}(${JSON.stringify(i.args)})`}</code>
          </p>
        ))}
      {a.status === 'pending' && canAnswer && batch && <BatchCheck id={a.id} title={single ? single.title : a.card.title} />}
      {a.status === 'pending' ? (
        <p class="meta">
          Expires <Time iso={a.expires_at} />
        </p>
      ) : a.status === 'expired' ? (
        <p class="meta status-expired">
          Expired <Time iso={a.expires_at} />: nothing ran.
        </p>
      ) : (
        <p class={`meta status-${a.status}`}>
          {`${a.status === 'approved' ? 'Approved' : 'Rejected'} by ${a.answered_by ?? 'someone'}${a.reason ? `: ${a.reason}` : ''}`}
          {a.answered_at && [' · ', <Time iso={a.answered_at} />]}
        </p>
      )}
      {a.status === 'pending' && canAnswer && (
        <form method="post" action={`/approvals/${a.id}`} class="answer">
          <input type="hidden" name="csrf" value={csrf} />
          <label>
            Reason (optional) <input type="text" name="reason" maxlength={4000} />
          </label>
          {a.card.offers_write_consent && (
            <label class="check">
              <input type="checkbox" name="consent_writes" value="1" /> Also let its writes run without asking
            </label>
          )}
          <div class="buttons">
            <button type="submit" name="decision" value="approve" class="approve">
              Approve
            </button>
            <button type="submit" name="decision" value="reject" class="reject">
              Reject
            </button>
          </div>
        </form>
      )}
      {a.status === 'pending' && canAnswer && tools && <EditForm a={a} tools={tools} csrf={csrf} />}
    </article>
  );
};

export const Question: FC<{ run: RunState; canAnswer: boolean; csrf: string }> = ({ run, canAnswer, csrf }) => {
  const p = run.pause?.kind === 'ask_user' ? run.pause : undefined;
  if (!p) return null;
  return (
    <article class="card question">
      <h3>{p.question}</h3>
      <p class="request">
        Asked while working on <q>{run.request}</q> · <a href={`/runs/${run.id}`}>run {run.id}</a>
      </p>
      {p.confirm && <p>Held until you confirm: {p.confirm.tools.join(', ')}</p>}
      {canAnswer && (
        <form method="post" action={`/runs/${run.id}/answer`} class="answer">
          <input type="hidden" name="csrf" value={csrf} />
          <label>
            Answer <input type="text" name="text" maxlength={100000} />
          </label>
          <div class="buttons">
            {p.confirm ? (
              [
                <button type="submit" name="confirm" value="yes" class="approve">
                  Yes
                </button>,
                <button type="submit" name="confirm" value="no" class="reject">
                  No
                </button>,
              ]
            ) : (
              <button type="submit">Answer</button>
            )}
          </div>
        </form>
      )}
    </article>
  );
};
