/**
 * A useChat page in front of keel serve (issue 41): the chat's id is a Keel session, Keel's cards
 * arrive as approval parts with the card's own words, and the buttons answer them with
 * addToolApprovalResponse — Keel answers the card once, audited with the token's name.
 * Open it as http://HOST:PORT/#token=APPROVER_TOKEN (keel tokens create --name NAME --role approver),
 * and add &model=SPEC to name a model keel serve's --allow-model allows (script:examples/chat-ui/replies.yaml).
 *
 * Answers are rendered safely (issue 46, O5): a model's text is text — never Markdown or HTML, so no
 * image is fetched and nothing runs — and an address in it is a link only once the message is
 * complete, only to http(s), showing its host, opened by a click in a new tab without a referrer. A
 * host Keel lists in the message's `data-keel-outside-hosts` part (the run read words from outside
 * the user, and the user never wrote that host) is no link at all: it is shown as text, marked.
 */
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';

const params = new URLSearchParams(location.hash.slice(1));
const token = params.get('token') ?? localStorage.getItem('keel-token') ?? '';
if (params.get('token')) localStorage.setItem('keel-token', token);
const chatId = params.get('chat') ?? localStorage.getItem('keel-chat') ?? `chat-${crypto.randomUUID().slice(0, 8)}`;
localStorage.setItem('keel-chat', chatId);
const model = params.get('model') ?? undefined;

/** Addresses in a model's text: http(s) only; what follows runs to a space, quote or bracket. */
const ADDRESS = /https?:\/\/[^\s<>"'`()[\]]+/gi;

function hostOf(address) {
  try {
    const u = new URL(address);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.hostname : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A model's text as text, its addresses made safe (O5): while the message streams (`complete`
 * false) or for a host in `outside`, an address is plain marked text; otherwise a link that needs a
 * click, opens in a new tab without a referrer, and shows where it goes.
 */
function SafeText({ text, outside, complete }) {
  const out = [];
  let from = 0;
  for (const m of text.matchAll(ADDRESS)) {
    const address = m[0].replace(/[.,;:!?*_~]+$/, '');
    const host = hostOf(address);
    if (!host) continue;
    out.push(text.slice(from, m.index));
    from = m.index + address.length;
    if (outside.includes(host))
      out.push(
        <span key={m.index} className="outside-address" title="An address from outside you: not a link">
          {address} <small>(not from you: {host}, not a link)</small>
        </span>,
      );
    else if (!complete) out.push(address);
    else
      out.push(
        <span key={m.index}>
          <a href={address} target="_blank" rel="noopener noreferrer nofollow" referrerPolicy="no-referrer">
            {address}
          </a>{' '}
          <small className="host">({host})</small>
        </span>,
      );
  }
  out.push(text.slice(from));
  return <p className="text">{out}</p>;
}

/** O2: the values of a call that did not come from the user, as Keel's card marks them. */
function Outside({ values }) {
  if (!values?.length) return null;
  return (
    <ul className="outside">
      {values.map((o) => (
        <li key={`${o.path}=${o.value}`}>
          <strong>Not from you:</strong> <code>{o.path}</code> = <mark>{o.value}</mark>
        </li>
      ))}
    </ul>
  );
}

function Approval({ part, answer }) {
  const d = part.approval?.descriptor ?? {};
  return (
    <div className="card" data-approval={part.approval.id}>
      <strong>{d.item?.title ?? d.title}</strong>
      {(d.item?.lines ?? []).filter(Boolean).map((l) => (
        <div key={l}>{l}</div>
      ))}
      {d.read ? <div className="read">{d.read}</div> : null}
      {d.item?.undo ? <div className="undo">{d.item.undo}</div> : null}
      <code>{d.item?.call}</code>
      <Outside values={d.item?.outside} />
      <div>
        <button type="button" onClick={() => answer(part.approval.id, true)}>
          Approve
        </button>{' '}
        <button type="button" onClick={() => answer(part.approval.id, false)}>
          Reject
        </button>
      </div>
    </div>
  );
}

function Part({ part, answer, outside, complete }) {
  if (part.type === 'text') return <SafeText text={part.text} outside={outside} complete={complete} />;
  if (part.type === 'data-keel-notice') return <p className="notice">{part.data.message}</p>;
  if (part.type === 'data-keel-approval') return <p className="answered">Card {part.data.status} by {part.data.answered_by}</p>;
  if (!isToolUIPart(part)) return null;
  const p = part;
  const name = p.type.slice('tool-'.length);
  if (p.state === 'approval-requested') return <Approval part={p} answer={answer} />;
  if (p.state === 'approval-responded') return <p className="tool">{name}: answered, waiting for Keel…</p>;
  if (p.state === 'output-available') return <p className="tool result">{name}: {String(p.output)}</p>;
  if (p.state === 'output-error') return <p className="tool error">{name}: {p.errorText}</p>;
  if (p.state === 'output-denied') return <p className="tool denied">{name}: rejected, nothing ran</p>;
  return <p className="tool">{name}…</p>;
}

function App({ initial }) {
  const transport = useMemo(
    () =>
      new DefaultChatTransport({ api: '/v1/ui/chat', headers: { authorization: `Bearer ${token}` }, body: model ? { model } : {} }),
    [],
  );
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: chatId,
    messages: initial,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const answer = (id, approved) => addToolApprovalResponse({ id, approved });
  return (
    <main>
      <h1>Keel chat <small>{chatId}</small></h1>
      {messages.map((m, n) => {
        // O5: the hosts Keel says this message names that the user never wrote (after untrusted reads).
        const outside = m.parts.filter((p) => p.type === 'data-keel-outside-hosts').flatMap((p) => p.data.hosts);
        const complete = n < messages.length - 1 || status === 'ready' || status === 'error';
        return (
          <div key={m.id} className={`message ${m.role}`}>
            {m.parts.map((p, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: parts have no ids of their own
              <Part key={i} part={p} answer={answer} outside={outside} complete={complete || m.role === 'user'} />
            ))}
          </div>
        );
      })}
      {error ? <p className="error">{error.message}</p> : null}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!input.trim()) return;
          sendMessage({ text: input });
          setInput('');
        }}
      >
        <input value={input} onChange={(e) => setInput(e.target.value)} placeholder="Ask Keel" disabled={status !== 'ready'} />
        <button type="submit" disabled={status !== 'ready'}>
          Send
        </button>
      </form>
    </main>
  );
}

/** A reload shows the truth: the session's messages, pending cards still waiting for their buttons. */
function Boot() {
  const [initial, setInitial] = useState();
  useEffect(() => {
    fetch(`/v1/ui/chat/${encodeURIComponent(chatId)}/messages`, { headers: { authorization: `Bearer ${token}` } })
      .then((r) => (r.ok ? r.json() : { messages: [] }))
      .then((b) => setInitial(b.messages));
  }, []);
  return initial ? <App initial={initial} /> : <p>Loading…</p>;
}

createRoot(document.getElementById('root')).render(<Boot />);
