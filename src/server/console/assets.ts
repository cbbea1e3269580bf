/**
 * The console's only assets, served by Keel itself (no CDN, no build step): a stylesheet, a small
 * script and the icon, drawn here in code. Phone first (S8): at 600 px and below every table is a
 * list whose cells carry their column's name (`data-label`), the header stays one line, and nothing
 * is wider than the screen.
 */

export const CONSOLE_CSS = `
:root { --fg:#1b1f24; --muted:#57606a; --bg:#fff; --line:#d0d7de; --accent:#0b5cad; --ok:#1a7f37; --bad:#b42318; --warn:#9a6700; }
* { box-sizing: border-box; }
body { margin:0; font:16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; align-items:center; gap:1rem; padding:.5rem 1rem; border-bottom:1px solid var(--line); white-space:nowrap; }
header .brand { font-weight:700; text-decoration:none; color:var(--fg); display:flex; align-items:center; gap:.35rem; }
header .brand::before { content:""; width:1.25rem; height:1.25rem; background:url(/favicon.svg) center/contain no-repeat; }
header nav { display:flex; gap:.9rem; }
header .who { margin-left:auto; display:flex; gap:.5rem; align-items:center; color:var(--muted); min-width:0; margin-top:0; }
header .name { overflow:hidden; text-overflow:ellipsis; min-width:2rem; }
header button { min-height:2.4rem; padding:.35rem .7rem; }
main { max-width:70rem; margin:0 auto; padding:1rem; }
a { color:var(--accent); }
.notice { background:#dafbe1; border:1px solid #aceebb; border-radius:6px; padding:.5rem .75rem; margin:0 0 .8rem; }
.card:target { outline:3px solid var(--accent); outline-offset:2px; }
time { white-space:nowrap; }
:focus-visible { outline:3px solid var(--accent); outline-offset:2px; }
h1 { font-size:1.5rem; margin:.2rem 0 1rem; } h2 { font-size:1.15rem; margin:1.4rem 0 .6rem; } h3 { margin:0 0 .4rem; font-size:1.05rem; }
.card { border:1px solid var(--line); border-radius:8px; padding:.9rem; margin:.7rem 0; }
.card .item { border-top:1px dashed var(--line); padding-top:.5rem; margin-top:.5rem; }
.card .item h4 { margin:0 0 .3rem; font-size:1rem; }
.card .routed { font-weight:600; margin:.3rem 0; } .card .policy { color:var(--muted); font-size:.92rem; margin:.3rem 0; }
.card ul { margin:.2rem 0 .4rem 1.2rem; padding:0; }
.undo, .meta, .request, .hint, .dir { color:var(--muted); font-size:.92rem; margin:.3rem 0; }
.status-expired { color:var(--warn); } .status-rejected { color:var(--bad); } .status-approved { color:var(--ok); }
code, pre { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:.88rem; overflow-wrap:anywhere; }
pre { white-space:pre-wrap; word-break:break-word; margin:0; }
code.call { display:block; overflow-wrap:anywhere; background:#f6f8fa; padding:.3rem .5rem; border-radius:4px; }
mark { background:#ffe08a; color:inherit; border-radius:2px; padding:0 .1em; }
.card ul.outside { list-style:none; margin:.4rem 0; padding:.35rem .6rem; border-left:3px solid var(--warn); background:#fff8e1; color:var(--fg); font-size:.92rem; overflow-wrap:anywhere; }
form.answer, form.start, form.mode, form.filters { display:flex; flex-wrap:wrap; gap:.6rem; align-items:flex-end; margin-top:.6rem; }
form.login { display:flex; flex-direction:column; gap:.9rem; max-width:24rem; margin:8vh auto 0; padding:1.2rem; border:1px solid var(--line); border-radius:10px; }
form.login h1 { margin:0; } form.login input { width:100%; min-width:0; } form.login button { width:100%; background:var(--accent); color:#fff; border-color:var(--accent); }
label { display:flex; flex-direction:column; gap:.2rem; font-size:.92rem; }
label.check { flex-direction:row; align-items:center; gap:.45rem; min-height:2rem; }
label.check input { width:1.15rem; height:1.15rem; margin:0; }
input[type=text], input[type=password], input[type=number], input[type=url], input[type=email], textarea, select { font:inherit; font-size:1rem; padding:.45rem .5rem; border:1px solid var(--line); border-radius:6px; min-width:14rem; max-width:100%; }
textarea { min-height:4rem; width:28rem; }
button { font:inherit; padding:.5rem .9rem; border-radius:6px; border:1px solid var(--line); background:#f6f8fa; cursor:pointer; min-height:2.6rem; }
form.batch { display:flex; flex-wrap:wrap; gap:.6rem; align-items:flex-end; padding:.7rem .9rem; margin:.7rem 0; border:1px solid var(--line); border-radius:8px; background:#f6f8fa; }
form.batch .meta, form.batch label.check { flex-basis:100%; margin:0; }
details.edit { margin-top:.6rem; } details.edit summary { cursor:pointer; color:var(--accent); min-height:2rem; }
details.edit fieldset { border:1px solid var(--line); border-radius:6px; padding:.4rem .8rem .6rem; margin:.4rem 0 .6rem; min-width:0; }
details.edit legend { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:.88rem; padding:0 .3rem; }
.field { display:flex; flex-direction:column; gap:.2rem; margin:.4rem 0; } textarea.json { width:100%; font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:.88rem; }
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
@media (max-width: 600px) {
  header { gap:.6rem; padding:.4rem .6rem; } header nav { gap:.6rem; } header .role { display:none; } header .name { font-size:.85rem; min-width:0; }
  header:has(nav) .brand .word { position:absolute; width:1px; height:1px; overflow:hidden; clip-path:inset(50%); }
  header button { padding:.3rem .55rem; font-size:.9rem; }
  main { padding:.6rem; } textarea, input[type=text], input[type=password], input[type=number], input[type=url], input[type=email], select { width:100%; min-width:0; }
  form.answer label, form.start label, form.batch label { flex:1 1 100%; }
  form.login { margin-top:1rem; border:0; padding:.4rem 0; }
  table, tbody { display:block; width:100%; } thead { display:none; }
  tr { display:flex; flex-wrap:wrap; gap:.1rem 1rem; border-bottom:1px solid var(--line); padding:.45rem 0; }
  td { display:block; border:0; padding:.1rem 0; min-width:0; max-width:100%; } td:first-child { flex-basis:100%; font-weight:600; }
  td:has(pre) { flex-basis:100%; }
  td[data-label]::before { content:attr(data-label) ": "; color:var(--muted); font-size:.85rem; }
  .buttons { width:100%; } .buttons button { flex:1; }
  .menu { columns:1; }
}
`;

/**
 * Times: each <time datetime> (rendered as UTC text) is shown in the viewer's own time zone with
 * the relative time, "in 42 min (2:09 PM)", kept current each half minute and after each live update.
 *
 * Live updates: a region marked `data-live` (an API event stream, opened with the session cookie)
 * and `data-fragment` (where its fresh HTML comes from) is re-rendered after each burst of events.
 * Focus and typed text inside the region are not lost: a region being typed in waits, and what the
 * viewer changed in its forms (ticked boxes, typed text, a choice) is put back after each update.
 */
export const CONSOLE_JS = `
const clock = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const day = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
const ago = (ms) => {
  const m = Math.round(ms / 60000), n = Math.abs(m);
  if (n < 1) return 'just now';
  const t = n < 90 ? n + ' min' : n < 2880 ? Math.round(n / 60) + ' h' : Math.round(n / 1440) + ' days';
  return m > 0 ? 'in ' + t : t + ' ago';
};
const times = (root) => {
  for (const el of root.querySelectorAll('time[datetime]')) {
    const d = new Date(el.dateTime);
    if (isNaN(d)) continue;
    el.title = el.title || el.textContent;
    const today = d.toDateString() === new Date().toDateString();
    el.textContent = ago(d - Date.now()) + ' (' + (today ? clock : day).format(d) + ')';
  }
};
times(document);
setInterval(() => times(document), 30000);
const region = document.querySelector('[data-live]');
if (region && window.EventSource) {
  const source = new EventSource(region.dataset.live);
  let timer;
  const busy = () => region.contains(document.activeElement) && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  // What the viewer changed in a form (a ticked box, a typed reason) outlives the update: kept by
  // form, field name and, for a box, its value, and put back into the same field when it is still there.
  const fields = () => region.querySelectorAll('input:not([type=hidden]), textarea, select');
  const box = (el) => el.type === 'checkbox' || el.type === 'radio';
  const keyOf = (el) => (el.form ? el.form.getAttribute('action') || el.form.id : '') + '|' + el.name + (box(el) ? '|' + el.value : '');
  const changed = (el) => box(el) ? el.checked !== el.defaultChecked
    : el.tagName === 'SELECT' ? [...el.options].some((o) => o.selected !== o.defaultSelected) : el.value !== el.defaultValue;
  const keep = () => {
    const kept = new Map();
    for (const el of fields()) if (el.name && changed(el)) kept.set(keyOf(el), box(el) ? el.checked : el.value);
    return kept;
  };
  const restore = (kept) => {
    for (const el of fields()) {
      const v = kept.get(keyOf(el));
      if (v === undefined) continue;
      if (box(el)) el.checked = v; else el.value = v;
    }
  };
  const refresh = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (busy()) return refresh();
      const res = await fetch(region.dataset.fragment, { credentials: 'same-origin', headers: { accept: 'text/html' } });
      if (res.ok) { const kept = keep(); region.innerHTML = await res.text(); restore(kept); times(region); }
      region.dataset.updated = String(Date.now());
    }, 60);
  };
  for (const name of ['run_started', 'model_request', 'assistant', 'tool_result', 'paused', 'run_finished', 'approval_created', 'approval_answered', 'run_paused']) {
    source.addEventListener(name, refresh);
  }
  source.addEventListener('open', () => { region.dataset.liveOpen = '1'; });
}
`;

/**
 * The icon: a white sail and hull on the console's blue, as convex polygons on a 32×32 grid —
 * written out as the SVG, and drawn (4×4 samples a pixel) into the ICO at /favicon.ico.
 */
export const ICON_SHAPES: [number, number][][] = [
  [
    [16, 5],
    [16, 19],
    [25, 19],
  ],
  [
    [14.5, 9],
    [14.5, 19],
    [8.5, 19],
  ],
  [
    [5, 21],
    [27, 21],
    [23, 26],
    [9, 26],
  ],
];
export const ICON_BLUE = [0x0b, 0x5c, 0xad];

export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0b5cad"/><path fill="#fff" d="${ICON_SHAPES.map((p) => `M${p.map(([x, y]) => `${x} ${y}`).join('L')}Z`).join('')}"/></svg>`;

/** Inside a convex polygon (either winding). */
function inside(poly: [number, number][], x: number, y: number): boolean {
  let sign = 0;
  for (let i = 0; i < poly.length; i++) {
    const [ax, ay] = poly[i];
    const [bx, by] = poly[(i + 1) % poly.length];
    const cross = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
    if (cross === 0) continue;
    if (sign === 0) sign = Math.sign(cross);
    else if (Math.sign(cross) !== sign) return false;
  }
  return true;
}

/** Inside the 32×32 square with corners of radius 6. */
function inSquare(x: number, y: number): boolean {
  const cx = Math.min(Math.max(x, 6), 26);
  const cy = Math.min(Math.max(y, 6), 26);
  return (x - cx) ** 2 + (y - cy) ** 2 <= 36;
}

let ico: Uint8Array | undefined;

/** The icon as a 32×32, 32-bit ICO (one BMP image, its alpha channel used, an empty AND mask). */
export function faviconIco(): Uint8Array {
  if (ico) return ico;
  const size = 32;
  const out = new Uint8Array(6 + 16 + 40 + size * size * 4 + size * 4);
  const v = new DataView(out.buffer);
  v.setUint16(2, 1, true); // an icon
  v.setUint16(4, 1, true); // one image
  out[6] = size;
  out[7] = size;
  v.setUint16(10, 1, true); // planes
  v.setUint16(12, 32, true); // bits a pixel
  v.setUint32(14, out.length - 22, true);
  v.setUint32(18, 22, true);
  v.setUint32(22, 40, true); // BITMAPINFOHEADER
  v.setInt32(26, size, true);
  v.setInt32(30, size * 2, true); // the image and its mask
  v.setUint16(34, 1, true);
  v.setUint16(36, 32, true);
  v.setUint32(42, size * size * 4 + size * 4, true);
  for (let row = 0; row < size; row++) {
    const y = size - 1 - row; // bottom-up
    for (let x = 0; x < size; x++) {
      let cover = 0;
      let white = 0;
      for (let sy = 0; sy < 4; sy++) {
        for (let sx = 0; sx < 4; sx++) {
          const px = x + (sx + 0.5) / 4;
          const py = y + (sy + 0.5) / 4;
          if (!inSquare(px, py)) continue;
          cover++;
          if (ICON_SHAPES.some((p) => inside(p, px, py))) white++;
        }
      }
      const at = 62 + (row * size + x) * 4;
      const w = cover ? white / cover : 0;
      for (let ch = 0; ch < 3; ch++) out[at + 2 - ch] = Math.round(ICON_BLUE[ch] * (1 - w) + 255 * w); // BGR
      out[at + 3] = Math.round((cover / 16) * 255);
    }
  }
  ico = out;
  return out;
}
