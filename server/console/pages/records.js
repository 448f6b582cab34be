// The record browser: a page of records from the latest, the earliest, an offset or a time,
// newest-first in true append order across partitions (the broker merges by appended_at); a live
// tail (long-poll); a permalink per record; a search with a scan budget and visible progress; and
// an NDJSON export. Keys, payloads and headers are shown as text, pretty JSON, hex or base64 —
// always through text nodes, never as markup.
import { api, query, seg } from '../api.js';
import { h, fill, fmtNum, fmtTime, field, toast, errorText } from '../dom.js';
import { tabs } from './stream.js';

const TAIL_WAIT_MS = 20000;

function bytesOf(b64) {
  const bin = atob(b64 || '');
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function hexDump(b64) {
  const bytes = bytesOf(b64);
  const lines = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const row = Array.from(bytes.slice(i, i + 16), (b) => b.toString(16).padStart(2, '0')).join(' ');
    lines.push(i.toString(16).padStart(6, '0') + '  ' + row);
  }
  return lines.join('\n') || '(empty)';
}

// The text a field shows in `format`; `text` is null when the bytes are not UTF-8.
export function show(text, b64, format) {
  if (format === 'base64') return b64 || '';
  if (format === 'hex' || text === null) return format === 'hex' || (b64 && b64.length) ? hexDump(b64) : '';
  if (format === 'json') {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (e) {
      return text;
    }
  }
  return text;
}

function preview(text, b64) {
  if (text === null) return '(binary, ' + bytesOf(b64).length + ' bytes)';
  const one = text.replace(/\s+/g, ' ');
  return one.length > 160 ? one.slice(0, 160) + '…' : one;
}

export function render(main, ctx) {
  const name = ctx.params.stream;
  const permalink = ctx.params.offset !== undefined;
  const q = ctx.query;
  const state = { format: q.format || 'text', tailing: false, tailCursor: null, abort: null, search: null, stopped: false, partitions: 1 };

  const from = h('select', { 'aria-label': 'Start at' }, ['latest', 'earliest', 'offset', 'time'].map((v) => h('option', { value: v }, v)));
  const fromValue = h('input', { 'aria-label': 'Offset or time', placeholder: 'offset or 2026-12-04T10:00:00Z', hidden: true });
  const partition = h('select', { 'aria-label': 'Partition' }, h('option', { value: '' }, 'all partitions'));
  const order = h('select', { 'aria-label': 'Order' }, h('option', { value: 'newest' }, 'newest first'), h('option', { value: 'oldest' }, 'oldest first'));
  const limit = h('select', { 'aria-label': 'Records per page' }, [20, 50, 100, 500].map((n) => h('option', { value: String(n) }, n + ' per page')));
  const format = h('select', { 'aria-label': 'Show as' }, ['text', 'json', 'hex', 'base64'].map((v) => h('option', { value: v }, v)));
  const tail = h('button', { type: 'button', 'aria-pressed': 'false' }, 'Live tail');
  limit.value = q.limit || '50';
  format.value = state.format;
  if (q.from) {
    if (q.from === 'latest' || q.from === 'earliest') from.value = q.from;
    else {
      from.value = /^\d+$/.test(q.from) ? 'offset' : 'time';
      fromValue.value = q.from;
    }
  }
  if (q.order) order.value = q.order;
  else if (from.value !== 'latest') order.value = 'oldest';
  fromValue.hidden = from.value === 'latest' || from.value === 'earliest';
  from.addEventListener('change', () => {
    fromValue.hidden = from.value === 'latest' || from.value === 'earliest';
    order.value = from.value === 'latest' ? 'newest' : 'oldest';
  });
  format.addEventListener('change', () => {
    state.format = format.value;
    for (const fn of rerenders) fn();
  });

  const rows = h('tbody');
  const status = h('p', { class: 'muted', role: 'status' });
  const pager = h('div', { class: 'pager' });
  const rerenders = [];

  function detail(r) {
    const body = h('div', { class: 'detail' });
    const link = '#/s/' + seg(name) + '/p/' + r.partition + '/o/' + r.offset;
    const draw = () => fill(body,
      h('div', { class: 'row' },
        h('a', { href: link, class: 'permalink' }, 'Permalink'),
        h('button', { type: 'button', class: 'link', onclick: () => navigator.clipboard && navigator.clipboard.writeText(location.origin + location.pathname + link).then(() => toast('Link copied')) }, 'Copy link')),
      r.create_time ? [h('h3', {}, 'Producer timestamp'), h('p', { class: 'create-time' }, fmtTime(r.create_time))] : null,
      h('h3', {}, 'Key'), h('pre', { class: 'bytes key' }, r.key_b64 ? show(r.key, r.key_b64, state.format) : '(none)'),
      h('h3', {}, 'Payload'), h('pre', { class: 'bytes payload' }, show(r.payload, r.payload_b64, state.format)),
      r.headers.length ? [h('h3', {}, 'Headers'), h('table', { class: 'headers' }, h('tbody', {}, r.headers.map((x) => h('tr', {}, h('th', { scope: 'row' }, x.name), h('td', {}, h('pre', { class: 'bytes' }, show(x.value, x.value_b64, state.format)))))))] : null);
    draw();
    rerenders.push(draw);
    return body;
  }

  function row(r, open) {
    const more = h('tr', { class: 'detail-row', hidden: !open }, h('td', { colspan: 4 }, detail(r)));
    const toggle = () => {
      more.hidden = !more.hidden;
      main_row.setAttribute('aria-expanded', String(!more.hidden));
    };
    const main_row = h('tr', { class: 'record', tabindex: 0, 'aria-expanded': String(Boolean(open)), onclick: toggle, onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); } } },
      h('td', { class: 'pos' }, r.partition + ' / ' + r.offset),
      h('td', { class: 'time' }, fmtTime(r.appended_at)),
      h('td', { class: 'key' }, r.key_b64 ? preview(r.key, r.key_b64) : h('span', { class: 'muted' }, '—')),
      h('td', { class: 'payload' }, preview(r.payload, r.payload_b64)));
    return [main_row, more];
  }

  function showPage(page, note) {
    rerenders.length = 0;
    if (!page.records.length) {
      fill(rows, h('tr', {}, h('td', { colspan: 4, class: 'empty' }, note || 'No records here.')));
    } else {
      fill(rows, page.records.map((r) => row(r, permalink)));
    }
    state.tailCursor = page.tail;
  }

  async function load(params) {
    stopTail();
    try {
      const page = await api.get('streams/' + seg(name) + '/records' + query(params));
      showPage(page, params.cursor ? 'No more records this way.' : 'No records yet.');
      fill(status, fmtNum(page.records.length) + (page.records.length === 1 ? ' record, ' : ' records, ') + (page.order === 'newest' ? 'newest first across partitions (by append time)' : 'oldest first'));
      fill(pager, page.records.length && !permalink
        ? h('button', { type: 'button', onclick: () => load({ cursor: page.more, order: page.order, limit: limit.value }) }, page.order === 'newest' ? 'Older →' : 'Next →')
        : null);
    } catch (e) {
      fill(rows);
      fill(status, h('span', { class: 'error' }, errorText(e)));
    }
  }

  function current() {
    const f = from.value === 'offset' || from.value === 'time' ? fromValue.value.trim() : from.value;
    return { from: f, partition: partition.value, order: order.value, limit: limit.value };
  }

  // Live tail: long-polls from the newest cursor and puts what arrives on top.
  async function tailLoop() {
    while (state.tailing && !state.stopped) {
      state.abort = new AbortController();
      try {
        const page = await api.get('streams/' + seg(name) + '/records' + query({ cursor: state.tailCursor, wait_ms: TAIL_WAIT_MS, limit: 500 }), { signal: state.abort.signal });
        if (page.records.length) {
          const empty = rows.querySelector('td.empty');
          if (empty) fill(rows);
          for (const r of page.records) rows.prepend(...row(r, false));
          while (rows.children.length > 1000) rows.lastChild.remove();
          fill(status, 'Live: ' + fmtNum(rows.querySelectorAll('tr.record').length) + ' records shown, newest on top');
        }
        state.tailCursor = page.more;
      } catch (e) {
        if (e.name === 'AbortError') return;
        fill(status, h('span', { class: 'error' }, errorText(e)));
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  }
  function stopTail() {
    state.tailing = false;
    tail.setAttribute('aria-pressed', 'false');
    tail.textContent = 'Live tail';
    if (state.abort) state.abort.abort();
  }
  tail.addEventListener('click', async () => {
    if (state.tailing) return stopTail();
    // A tail follows the latest page, newest on top, whatever was shown before (a search, an older page).
    from.value = 'latest';
    fromValue.hidden = true;
    order.value = 'newest';
    await load(current());
    state.tailing = true;
    tail.setAttribute('aria-pressed', 'true');
    tail.textContent = 'Stop tail';
    fill(status, 'Live: waiting for records…');
    tailLoop();
  });

  const controls = h('form', { class: 'toolbar', onsubmit: (e) => { e.preventDefault(); const c = current(); history.replaceState(null, '', '#/s/' + seg(name) + '/records' + query(c)); load(c); } },
    from, fromValue, partition, order, limit, h('button', { type: 'submit', class: 'primary' }, 'Load'), tail, format,
    ctx.session.export ? exportLink() : null);

  function exportLink() {
    const a = h('a', { class: 'button', download: name + '.ndjson', href: '#' }, 'Export NDJSON');
    a.addEventListener('click', () => {
      const c = current();
      a.href = '/api/v1/streams/' + seg(name) + '/export' + query({ from: c.from === 'latest' ? 'earliest' : c.from, partition: c.partition });
    });
    return a;
  }

  fill(main, h('h1', { class: 'stream-name' }, name), tabs(name, 'records'),
    permalink ? h('div', { class: 'toolbar' }, h('span', {}, 'Record ' + ctx.params.offset + ' of partition ' + ctx.params.partition + '.'),
      h('a', { href: '#/s/' + seg(name) + '/records' + query({ partition: ctx.params.partition, from: ctx.params.offset, order: 'oldest' }) }, 'Browse from here'),
      format) : controls,
    permalink ? null : searchPanel(),
    status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'records' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Partition / offset'), h('th', { scope: 'col' }, 'Appended (UTC)'), h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col' }, 'Payload'))),
      rows)),
    pager);

  function searchPanel() {
    const text = h('input', { type: 'search', placeholder: 'Text to find in keys, payloads or headers', 'aria-label': 'Search text' });
    const inKey = h('input', { type: 'checkbox', checked: true });
    const inPayload = h('input', { type: 'checkbox', checked: true });
    const inHeaders = h('input', { type: 'checkbox', checked: true });
    const caseless = h('input', { type: 'checkbox' });
    const budget = h('select', { 'aria-label': 'Scan at most' }, [100000, 1000000, 10000000, 100000000].map((n) => h('option', { value: String(n) }, 'scan ≤ ' + fmtNum(n))));
    budget.value = '10000000';
    const progress = h('progress', { max: 1, value: 0, hidden: true, 'aria-label': 'Search progress' });
    const info = h('span', { class: 'muted', role: 'status' });
    const cancel = h('button', { type: 'button', hidden: true }, 'Cancel');
    const box = (input, label) => h('label', { class: 'check' }, input, ' ' + label);
    let job = null;
    cancel.addEventListener('click', async () => {
      if (job) await api.del('searches/' + job).catch(() => {});
    });
    const run = async (e) => {
      e.preventDefault();
      stopTail();
      if (!text.value) return;
      const c = current();
      try {
        const start = await api.post('streams/' + seg(name) + '/search', {
          query: text.value, key: inKey.checked, payload: inPayload.checked, headers: inHeaders.checked,
          ignore_case: caseless.checked, max_records: Number(budget.value), from: c.from, order: c.order,
          partition: c.partition === '' ? null : Number(c.partition),
        });
        job = start.id;
        progress.hidden = false;
        cancel.hidden = false;
        let p = start;
        while (!state.stopped) {
          progress.max = Math.max(1, Math.min(p.total, Number(budget.value)));
          progress.value = p.scanned;
          fill(info, `scanned ${fmtNum(p.scanned)} of ${fmtNum(p.total)} · ${fmtNum(p.matched)} found · ${(p.elapsed_ms / 1000).toFixed(1)} s`);
          showPage({ records: p.records, tail: state.tailCursor }, p.done ? 'Nothing found.' : 'Searching…');
          if (p.done) break;
          await new Promise((r) => setTimeout(r, 300));
          p = await api.get('searches/' + job);
        }
        const why = { end: 'reached the end', max_records: 'scan budget used', max_matches: 'enough matches', max_time: 'time budget used', cancelled: 'cancelled' }[p.stopped_by] || p.stopped_by;
        fill(info, `${fmtNum(p.matched)} found in ${fmtNum(p.scanned)} records (${why}, ${(p.elapsed_ms / 1000).toFixed(1)} s)`);
        fill(status, 'Search results, ' + (p.records.length ? 'newest first' : 'none'));
        fill(pager);
      } catch (err) {
        fill(info, h('span', { class: 'error' }, errorText(err)));
      } finally {
        cancel.hidden = true;
        job = null;
      }
    };
    return h('form', { class: 'search card', onsubmit: run }, h('div', { class: 'row' }, text, h('button', { type: 'submit' }, 'Search'), cancel),
      h('div', { class: 'row' }, box(inKey, 'key'), box(inPayload, 'payload'), box(inHeaders, 'headers'), box(caseless, 'ignore case'), budget),
      h('div', { class: 'row' }, progress, info));
  }

  // The partitions, then the first page.
  api.get('streams/' + seg(name)).then((d) => {
    state.partitions = d.partitions.length;
    partition.append(...d.partitions.map((p) => h('option', { value: String(p.partition) }, 'partition ' + p.partition)));
    if (q.partition !== undefined) partition.value = q.partition;
    if (permalink) load({ partition: ctx.params.partition, from: ctx.params.offset, order: 'oldest', limit: 1 });
    else load(current());
  }).catch((e) => fill(status, h('span', { class: 'error' }, errorText(e))));

  return () => {
    state.stopped = true;
    stopTail();
  };
}
