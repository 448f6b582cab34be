// Streams: one page of the streams the principal may read, filtered and paged by the broker, so the
// page stays fast with 10,000 streams; and, for a principal with admin somewhere, a create form.
import { api, query, seg } from '../api.js';
import { h, fill, fmtNum, fmtBytes, field, toast, errorText } from '../dom.js';

const PAGE = 50;

export function render(main, ctx) {
  const filter = h('input', { type: 'search', placeholder: 'Filter by name', 'aria-label': 'Filter streams by name', value: ctx.query.filter || '' });
  const body = h('tbody');
  const pager = h('div', { class: 'pager' });
  const status = h('p', { class: 'muted', role: 'status' });
  let offset = Number(ctx.query.offset || 0);
  let pending = null;

  async function load() {
    try {
      const r = await api.get('streams' + query({ filter: filter.value, offset, limit: PAGE }));
      if (r.streams.length === 0) {
        fill(body, h('tr', {}, h('td', { colspan: 5, class: 'empty' }, filter.value ? 'No stream matches “' + filter.value + '”.' : 'No streams yet.')));
      } else {
        fill(
          body,
          r.streams.map((s) =>
            h(
              'tr',
              {},
              h('td', { class: 'name' }, h('a', { href: '#/s/' + seg(s.name) }, s.name)),
              h('td', { class: 'num' }, fmtNum(s.partitions)),
              h('td', { class: 'num' }, fmtNum(s.records)),
              h('td', { class: 'num' }, fmtBytes(s.bytes)),
              h('td', { class: 'num' }, fmtNum(s.appended)),
            ),
          ),
        );
      }
      const last = Math.min(r.total, offset + r.streams.length);
      fill(status, r.total ? `${fmtNum(offset + 1)}–${fmtNum(last)} of ${fmtNum(r.total)} streams` : '');
      fill(
        pager,
        h('button', { type: 'button', disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); load(); } }, '← Previous'),
        h('button', { type: 'button', disabled: last >= r.total, onclick: () => { offset += PAGE; load(); } }, 'Next →'),
      );
    } catch (e) {
      fill(status, h('span', { class: 'error' }, errorText(e)));
    }
  }
  filter.addEventListener('input', () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      offset = 0;
      load();
    }, 200);
  });

  const header = h('div', { class: 'title-row' }, h('h1', {}, 'Streams'), ctx.session.anywhere.admin ? createButton() : null);
  main.append(
    header,
    h('div', { class: 'toolbar' }, filter),
    h('div', { class: 'table-wrap' },
      h('table', {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col', class: 'num' }, 'Partitions'), h('th', { scope: 'col', class: 'num' }, 'Records'), h('th', { scope: 'col', class: 'num' }, 'Bytes'), h('th', { scope: 'col', class: 'num' }, 'Appended ever'))),
        body)),
    status,
    pager,
  );
  load();
  return () => clearTimeout(pending);
}

function createButton() {
  const name = h('input', { required: true, pattern: '[A-Za-z0-9._\\-]+', autocomplete: 'off' });
  const partitions = h('input', { type: 'number', min: 1, value: 1 });
  const retain = h('input', { placeholder: 'e.g. 7d (empty: forever)' });
  const form = h(
    'form',
    {
      class: 'inline-form card',
      hidden: true,
      onsubmit: async (e) => {
        e.preventDefault();
        const policy = { partitions: Number(partitions.value) };
        if (retain.value) policy.retain_for = retain.value;
        try {
          await api.post('streams', { name: name.value, policy });
          toast('Created stream ' + name.value);
          location.hash = '#/s/' + seg(name.value);
        } catch (err) {
          toast(errorText(err), 'error');
        }
      },
    },
    h('h2', {}, 'Create a stream'),
    field('Name', name, 'letters, digits, . _ -'),
    field('Partitions', partitions),
    field('Retain for', retain),
    h('button', { type: 'submit', class: 'primary' }, 'Create'),
  );
  const open = h('button', { type: 'button', class: 'primary', onclick: () => { form.hidden = !form.hidden; if (!form.hidden) name.focus(); } }, 'Create stream');
  return h('div', { class: 'create' }, open, form);
}
