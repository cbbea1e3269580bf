/**
 * A Server-Sent Events reader over fetch (Node has no EventSource): the remote CLI follows a run
 * with it, and the tests read the server's streams with it. Bounded: an event larger than
 * `maxEventBytes` ends the stream with an error rather than growing without limit.
 */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export async function* readSse(body: ReadableStream<Uint8Array>, maxEventBytes = 4_000_000): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buf = '';
  let cur: { id?: string; event?: string; data: string[] } = { data: [] };
  const reader = body.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      if (buf.length > maxEventBytes) throw new Error(`an event of more than ${maxEventBytes} bytes: the stream is refused`);
      let nl = buf.search(/\r?\n|\r/);
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        const sep = buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1;
        buf = buf.slice(nl + sep);
        if (line === '') {
          if (cur.data.length || cur.event) {
            yield { ...(cur.id !== undefined ? { id: cur.id } : {}), event: cur.event ?? 'message', data: cur.data.join('\n') };
          }
          cur = { data: [] };
        } else if (!line.startsWith(':')) {
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'data') cur.data.push(val);
          else if (field === 'event') cur.event = val;
          else if (field === 'id') cur.id = val;
        }
        nl = buf.search(/\r?\n|\r/);
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
