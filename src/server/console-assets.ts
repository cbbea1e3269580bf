/** The console's only assets, served by Keel itself (no CDN): a stylesheet and a small script. */

export const CONSOLE_CSS = `
:root { --fg:#1b1f24; --muted:#57606a; --bg:#fff; --line:#d0d7de; --accent:#0b5cad; --ok:#1a7f37; --bad:#b42318; --warn:#9a6700; }
* { box-sizing: border-box; }
body { margin:0; font:16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; flex-wrap:wrap; gap:.5rem 1rem; align-items:center; padding:.6rem 1rem; border-bottom:1px solid var(--line); }
header .brand { font-weight:700; text-decoration:none; color:var(--fg); }
header nav { display:flex; gap:.8rem; }
header .who { margin-left:auto; display:flex; gap:.5rem; align-items:center; color:var(--muted); }
main { max-width:70rem; margin:0 auto; padding:1rem; }
a { color:var(--accent); }
:focus-visible { outline:3px solid var(--accent); outline-offset:2px; }
h1 { font-size:1.5rem; margin:.2rem 0 1rem; } h2 { font-size:1.15rem; margin:1.4rem 0 .6rem; } h3 { margin:0 0 .4rem; font-size:1.05rem; }
.card { border:1px solid var(--line); border-radius:8px; padding:.9rem; margin:.7rem 0; }
.card .item { border-top:1px dashed var(--line); padding-top:.5rem; margin-top:.5rem; }
.card .item h4 { margin:0 0 .3rem; font-size:1rem; }
.card ul { margin:.2rem 0 .4rem 1.2rem; padding:0; }
.undo, .meta, .request, .hint, .dir { color:var(--muted); font-size:.92rem; margin:.3rem 0; }
.status-expired { color:var(--warn); } .status-rejected { color:var(--bad); } .status-approved { color:var(--ok); }
code, pre { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:.88rem; }
pre { white-space:pre-wrap; word-break:break-word; margin:0; }
code.call { display:block; overflow-wrap:anywhere; background:#f6f8fa; padding:.3rem .5rem; border-radius:4px; }
form.answer, form.start, form.mode, form.login, form.filters { display:flex; flex-wrap:wrap; gap:.6rem; align-items:flex-end; margin-top:.6rem; }
label { display:flex; flex-direction:column; gap:.2rem; font-size:.92rem; }
label.check { flex-direction:row; align-items:center; }
input[type=text], input[type=password], textarea, select { font:inherit; padding:.45rem .5rem; border:1px solid var(--line); border-radius:6px; min-width:14rem; max-width:100%; }
textarea { min-height:4rem; width:28rem; }
button { font:inherit; padding:.5rem .9rem; border-radius:6px; border:1px solid var(--line); background:#f6f8fa; cursor:pointer; min-height:2.6rem; }
button.approve { background:var(--ok); color:#fff; border-color:var(--ok); }
button.reject { background:#fff; color:var(--bad); border-color:var(--bad); }
.buttons { display:flex; gap:.5rem; }
.badge { display:inline-block; padding:.05rem .45rem; border-radius:999px; font-size:.78rem; border:1px solid var(--line); background:#f6f8fa; white-space:nowrap; }
.b-destructive, .b-failed, .b-error, .b-refused, .b-rejected, .b-denied_by_mode, .b-denied_by_policy { background:#ffebe9; border-color:#ffcecb; color:var(--bad); }
.b-write, .b-held_for_confirmation, .b-awaiting_approval, .b-paused, .b-degraded, .b-drift, .b-pending, .b-expired, .b-unavailable { background:#fff8c5; border-color:#eac54f; color:var(--warn); }
.b-read, .b-ran, .b-done, .b-loaded, .b-approved { background:#dafbe1; border-color:#aceebb; color:var(--ok); }
table { border-collapse:collapse; width:100%; margin:.4rem 0; }
th, td { text-align:left; vertical-align:top; padding:.35rem .5rem; border-bottom:1px solid var(--line); }
td pre { max-height:12rem; overflow:auto; }
.transcript { list-style:none; padding:0; } .transcript li { padding:.4rem 0; border-bottom:1px solid var(--line); }
.m-tool.err pre { color:var(--bad); }
.menu { columns:2 16rem; } .menu .unavailable code { text-decoration:line-through; }
.plugin { border:1px solid var(--line); border-radius:8px; padding:.6rem .9rem; margin:.8rem 0; }
.row { margin:.3rem 0; } .error { color:var(--bad); } .warning { color:var(--warn); }
@media (max-width: 40rem) {
  main { padding:.6rem; } textarea, input[type=text], input[type=password] { width:100%; min-width:0; }
  table.calls thead, table.runs thead, table.tools thead { display:none; }
  table.calls td, table.runs td, table.tools td { display:block; border:0; padding:.15rem 0; }
  table.calls tr, table.runs tr, table.tools tr { display:block; border-bottom:1px solid var(--line); padding:.4rem 0; }
  td[data-label]::before { content:attr(data-label) ": "; color:var(--muted); font-size:.85rem; }
  .buttons button { flex:1; }
}
`;

/**
 * Live updates: a region marked `data-live` (an API event stream, opened with the session cookie)
 * and `data-fragment` (where its fresh HTML comes from) is re-rendered after each burst of events.
 * Focus and typed text inside the region are not lost: a region being typed in waits.
 */
export const CONSOLE_JS = `
const region = document.querySelector('[data-live]');
if (region && window.EventSource) {
  const source = new EventSource(region.dataset.live);
  let timer;
  const busy = () => region.contains(document.activeElement) && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  const refresh = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (busy()) return refresh();
      const res = await fetch(region.dataset.fragment, { credentials: 'same-origin', headers: { accept: 'text/html' } });
      if (res.ok) region.innerHTML = await res.text();
      region.dataset.updated = String(Date.now());
    }, 60);
  };
  for (const name of ['run_started', 'model_request', 'assistant', 'tool_result', 'paused', 'run_finished', 'approval_created', 'approval_answered', 'run_paused']) {
    source.addEventListener(name, refresh);
  }
  source.addEventListener('open', () => { region.dataset.liveOpen = '1'; });
}
`;
