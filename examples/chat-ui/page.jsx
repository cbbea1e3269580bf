/**
 * A useChat page in front of keel serve (issue 41): the chat's id is a Keel session, Keel's cards
 * arrive as approval parts with the card's own words, and the buttons answer them with
 * addToolApprovalResponse — Keel answers the card once, audited with the token's name.
 * Open it as http://HOST:PORT/#token=APPROVER_TOKEN (keel tokens create --name NAME --role approver),
 * and add &model=SPEC to name a model keel serve's --allow-model allows (script:examples/chat-ui/replies.yaml).
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

function Part({ part, answer }) {
  if (part.type === 'text') return <p>{part.text}</p>;
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
      {messages.map((m) => (
        <div key={m.id} className={`message ${m.role}`}>
          {m.parts.map((p, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: parts have no ids of their own
            <Part key={i} part={p} answer={answer} />
          ))}
        </div>
      ))}
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
