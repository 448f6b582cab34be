// A stream: its policy, its partitions with first/next/bytes/segments and append rates (from
// successive polls of the description), and the actions the principal's rights allow: produce
// (write), trim, compact and delete (admin). A principal without them sees no such control; the
// broker refuses them anyway.
import { api, seg } from '../api.js';
import { h, fill, fmtNum, fmtBytes, fmtRate, fmtDuration, fmtTime, field, toast, errorText, dialog } from '../dom.js';

const POLL_MS = 2000;

export function tabs(name, current) {
  const tab = (path, label, id) => h('a', { href: '#/s/' + seg(name) + path, class: 'tab', 'aria-current': current === id ? 'page' : null }, label);
  return h('nav', { class: 'tabs', 'aria-label': 'Stream' }, tab('', 'Partitions', 'stream'), tab('/records', 'Records', 'records'), tab('/groups', 'Groups', 'groups'));
}

function policyList(p) {
  const dur = (ms) => (ms ? fmtDuration(ms / 1000) : null);
  const rows = [
    ['Partitions', fmtNum(p.partitions)],
    ['Largest record', fmtBytes(p.max_record_bytes)],
    ['Retain for', dur(p.retain_for_ms) || 'forever'],
    ['Retain bytes (per partition)', p.retain_bytes ? fmtBytes(p.retain_bytes) : 'unbounded'],
    ['Max bytes (stream)', p.max_bytes ? fmtBytes(p.max_bytes) : 'unbounded'],
    ['Block timeout', dur(p.block_timeout_ms) || '0 (refuse when full)'],
    ['Segment size', fmtBytes(p.segment_bytes)],
    ['Compact after', dur(p.compact_after_ms) || 'never'],
    ['Kafka timestamps', p.timestamp_type || 'CreateTime'],
  ];
  return h('dl', { class: 'policy' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export function render(main, ctx) {
  const name = ctx.params.stream;
  const head = h('div');
  const parts = h('tbody');
  const actions = h('div', { class: 'actions' });
  const status = h('p', { class: 'muted', role: 'status' });
  main.append(h('h1', { class: 'stream-name' }, name), tabs(name, 'stream'), status, head,
    h('h2', {}, 'Partitions'),
    h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Partition', 'First', 'Next', 'Records', 'Bytes', 'Segments', 'Appends/s', ''].map((t, i) => h('th', { scope: 'col', class: i > 0 && i < 7 ? 'num' : '' }, t)))),
      parts)),
    actions);
  let last = null;
  let timer = null;
  let stopped = false;
  let rendered = false;

  async function poll() {
    try {
      const d = await api.get('streams/' + seg(name));
      const now = Date.now();
      fill(parts, d.partitions.map((p) => {
        let rate = '–';
        if (last) {
          const before = last.d.partitions[p.partition];
          if (before) rate = fmtRate(Math.max(0, (p.next - before.next) / ((now - last.t) / 1000)));
        }
        return h('tr', { class: p.failed ? 'failed' : '' },
          h('td', {}, String(p.partition), p.failed ? h('span', { class: 'badge bad' }, 'fenced') : null),
          h('td', { class: 'num' }, fmtNum(p.first)),
          h('td', { class: 'num' }, fmtNum(p.next)),
          h('td', { class: 'num' }, fmtNum(p.records)),
          h('td', { class: 'num' }, fmtBytes(p.bytes)),
          h('td', { class: 'num' }, fmtNum(p.segments)),
          h('td', { class: 'num' }, rate),
          h('td', {}, h('a', { href: '#/s/' + seg(name) + '/records?partition=' + p.partition }, 'Browse')));
      }));
      last = { d, t: now };
      if (!rendered) {
        rendered = true;
        fill(head, h('div', { class: 'grid2' },
          h('section', { class: 'card' }, h('h2', {}, 'Policy'), policyList(d.policy), h('p', { class: 'muted' }, 'Created ' + fmtTime(d.created_at))),
          d.rights.write ? produceForm(name, d.partitions.length) : h('section', { class: 'card muted' }, h('h2', {}, 'Produce'), h('p', {}, 'You may not write to this stream.'))));
        fill(actions, d.rights.admin ? adminActions(name, d) : null);
      }
      fill(status, `${fmtNum(d.records)} records, ${fmtBytes(d.bytes)} retained`);
    } catch (e) {
      fill(status, h('span', { class: 'error' }, errorText(e)));
    }
    if (!stopped) timer = setTimeout(poll, POLL_MS);
  }
  poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// key, value, headers (one "name: value" per line) and an optional partition.
function produceForm(name, partitions) {
  const key = h('input', { autocomplete: 'off', name: 'key' });
  const value = h('textarea', { rows: 4, name: 'payload' });
  const headers = h('textarea', { rows: 2, name: 'headers', placeholder: 'name: value (one per line)' });
  const partition = h('select', { name: 'partition' }, h('option', { value: '' }, 'by key (or in turn)'),
    Array.from({ length: Math.min(partitions, 256) }, (_, i) => h('option', { value: String(i) }, String(i))));
  const result = h('p', { class: 'muted', role: 'status' });
  const form = h('form', {
    class: 'card produce',
    onsubmit: async (e) => {
      e.preventDefault();
      const record = { payload: value.value };
      if (key.value) record.key = key.value;
      const hs = headers.value.split('\n').filter((l) => l.trim()).map((l) => {
        const i = l.indexOf(':');
        return i < 0 ? { name: l.trim(), value: '' } : { name: l.slice(0, i).trim(), value: l.slice(i + 1).trim() };
      });
      if (hs.length) record.headers = hs;
      const body = { records: [record] };
      if (partition.value !== '') body.partition = Number(partition.value);
      try {
        const r = await api.post('streams/' + seg(name) + '/records', body);
        fill(result, 'Appended at partition ' + r.partition + ', offset ' + r.first + ' ',
          h('a', { href: '#/s/' + seg(name) + '/p/' + r.partition + '/o/' + r.first }, '(view)'));
        toast('Appended at ' + r.partition + '/' + r.first);
      } catch (err) {
        fill(result, h('span', { class: 'error' }, errorText(err)));
      }
    },
  }, h('h2', {}, 'Produce a record'), field('Key', key), field('Value', value), field('Headers', headers), field('Partition', partition),
  h('button', { type: 'submit', class: 'primary' }, 'Produce'), result);
  return form;
}

function adminActions(name, d) {
  const trimPartition = h('select', { 'aria-label': 'Partition to trim' }, d.partitions.map((p) => h('option', { value: String(p.partition) }, 'partition ' + p.partition)));
  const trimBefore = h('input', { type: 'number', min: 0, 'aria-label': 'Trim before offset', placeholder: 'before offset' });
  const trim = async () => {
    try {
      const r = await api.post(`streams/${seg(name)}/partitions/${trimPartition.value}/trim`, { before: Number(trimBefore.value) });
      toast(`Partition ${r.partition} now starts at ${r.first}`);
    } catch (e) {
      toast(errorText(e), 'error');
    }
  };
  const compact = async () => {
    try {
      let dropped = 0;
      for (const p of d.partitions) dropped += (await api.post(`streams/${seg(name)}/partitions/${p.partition}/compact`)).dropped;
      toast('Compacted: ' + dropped + ' records dropped');
    } catch (e) {
      toast(errorText(e), 'error');
    }
  };
  const remove = async () => {
    const ok = await confirmTyped('Delete stream', 'Deleting ' + name + ' removes every record of it at once. Type the stream\'s name to confirm.', name);
    if (!ok) return;
    try {
      await api.del('streams/' + seg(name));
      toast('Deleted ' + name);
      location.hash = '#/streams';
    } catch (e) {
      toast(errorText(e), 'error');
    }
  };
  return h('section', { class: 'card danger-zone' }, h('h2', {}, 'Administration'),
    h('div', { class: 'row' }, trimPartition, trimBefore, h('button', { type: 'button', onclick: trim }, 'Trim')),
    h('div', { class: 'row' }, h('button', { type: 'button', onclick: compact }, 'Compact every partition'),
      h('button', { type: 'button', class: 'danger', onclick: remove }, 'Delete stream…')));
}

// A confirmation that wants `word` typed, for what cannot be undone.
export function confirmTyped(title, text, word) {
  return dialog(title, (close) => {
    const input = h('input', { autocomplete: 'off', 'aria-label': 'Type ' + word + ' to confirm' });
    const go = h('button', { type: 'submit', class: 'danger', disabled: true }, title);
    input.addEventListener('input', () => { go.disabled = input.value !== word; });
    setTimeout(() => input.focus(), 0);
    return h('form', { method: 'dialog', onsubmit: (e) => { e.preventDefault(); if (input.value === word) close(true); } },
      h('p', {}, text), input, h('div', { class: 'row' }, h('button', { type: 'button', onclick: () => close(false) }, 'Cancel'), go));
  });
}
