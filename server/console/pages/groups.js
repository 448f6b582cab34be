// Groups of a stream: per partition the committed offset (linked to the record it names), the next
// offset and the lag in records and in seconds, with each group's lag trend from the broker's
// history; and an offset reset with a dry-run preview and a typed confirmation.
import { api, seg } from '../api.js';
import { h, fill, fmtNum, fmtDuration, field, toast, errorText, dialog } from '../dom.js';
import { sparkline } from '../charts.js';
import { tabs } from './stream.js';

const POLL_MS = 3000;

export function render(main, ctx) {
  const name = ctx.params.stream;
  const list = h('div', { class: 'groups' });
  const status = h('p', { class: 'muted', role: 'status' });
  main.append(h('h1', { class: 'stream-name' }, name), tabs(name, 'groups'), status, list);
  let timer = null;
  let stopped = false;  // the page was left
  let paused = false;   // a reset dialog is open

  async function poll() {
    try {
      const r = await api.get('streams/' + seg(name) + '/groups');
      if (!r.groups.length) {
        fill(list, h('p', { class: 'empty card' }, 'No group has committed on this stream yet. A consumer that commits (streamctl consume --group G, a Kafka consumer group) appears here.'));
      } else {
        fill(list, r.groups.map((g) => groupCard(g)));
      }
      fill(status, fmtNum(r.groups.length) + (r.groups.length === 1 ? ' group' : ' groups') + ' · refreshed every ' + POLL_MS / 1000 + ' s');
    } catch (e) {
      fill(status, h('span', { class: 'error' }, errorText(e)));
    }
    if (!stopped && !paused) timer = setTimeout(poll, POLL_MS);
  }

  function groupCard(g) {
    return h('section', { class: 'card group', 'data-group': g.group },
      h('div', { class: 'title-row' },
        h('h2', {}, g.group),
        h('div', { class: 'lagsum' }, h('span', { class: 'lag-total' }, fmtNum(g.lag) + ' behind'), h('span', { class: 'muted' }, ' · ' + fmtDuration(g.lag_seconds)),
          sparkline(g.trend, 'lag trend of ' + g.group)),
        h('button', { type: 'button', onclick: () => reset(g) }, 'Reset offsets…')),
      h('div', { class: 'table-wrap' }, h('table', {},
        h('thead', {}, h('tr', {}, ['Partition', 'Committed', 'Next', 'Lag', 'Lag (time)'].map((t, i) => h('th', { scope: 'col', class: i ? 'num' : '' }, t)))),
        h('tbody', {}, g.partitions.map((p) => h('tr', {},
          h('td', {}, String(p.partition)),
          h('td', { class: 'num' }, p.committed < p.next
            ? h('a', { href: '#/s/' + seg(name) + '/p/' + p.partition + '/o/' + p.committed, title: 'The record the group reads next' }, fmtNum(p.committed))
            : fmtNum(p.committed), p.trimmed ? h('span', { class: 'badge bad' }, 'trimmed') : null),
          h('td', { class: 'num' }, fmtNum(p.next)),
          h('td', { class: 'num lag' }, fmtNum(p.lag)),
          h('td', { class: 'num' }, p.lag_seconds === null ? '–' : fmtDuration(p.lag_seconds))))))));
  }

  async function reset(g) {
    paused = true;
    clearTimeout(timer);
    await dialog('Reset ' + g.group, (close) => {
      const to = h('select', { name: 'to' }, ['earliest', 'latest', 'offset', 'time'].map((v) => h('option', { value: v }, v)));
      const value = h('input', { name: 'value', hidden: true, placeholder: 'offset or 2026-12-04T10:00:00Z' });
      const plan = h('div', { class: 'plan' });
      const confirm = h('input', { autocomplete: 'off', 'aria-label': 'Type the group name to confirm', disabled: true });
      const apply = h('button', { type: 'button', class: 'danger', disabled: true }, 'Reset');
      to.addEventListener('change', () => { value.hidden = to.value === 'earliest' || to.value === 'latest'; });
      const body = () => {
        const b = { to: to.value };
        if (to.value === 'offset') b.offset = Number(value.value);
        if (to.value === 'time') b.time = value.value;
        return b;
      };
      const preview = async () => {
        try {
          const r = await api.post(`streams/${seg(name)}/groups/${seg(g.group)}/reset`, Object.assign(body(), { dry_run: true }));
          fill(plan, h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Partition'), h('th', { class: 'num' }, 'Now'), h('th', { class: 'num' }, 'After'))),
            h('tbody', {}, r.plan.map((m) => h('tr', {}, h('td', {}, String(m.partition)), h('td', { class: 'num' }, m.from === null ? 'none' : fmtNum(m.from)), h('td', { class: 'num' }, fmtNum(m.to)))))),
          h('p', {}, 'Type the group’s name, ', h('code', {}, g.group), ', to apply this.'));
          confirm.disabled = false;
          confirm.focus();
        } catch (e) {
          fill(plan, h('p', { class: 'error' }, errorText(e)));
        }
      };
      confirm.addEventListener('input', () => { apply.disabled = confirm.value !== g.group; });
      apply.addEventListener('click', async () => {
        try {
          await api.post(`streams/${seg(name)}/groups/${seg(g.group)}/reset`, Object.assign(body(), { dry_run: false, confirm: confirm.value }));
          toast('Reset ' + g.group);
          close(true);
        } catch (e) {
          fill(plan, h('p', { class: 'error' }, errorText(e)));
        }
      });
      setTimeout(() => to.focus(), 0);
      return h('div', {}, h('div', { class: 'row' }, field('Move to', to), value, h('button', { type: 'button', onclick: preview }, 'Preview')),
        plan, confirm, h('div', { class: 'row' }, h('button', { type: 'button', onclick: () => close(false) }, 'Cancel'), apply));
    });
    paused = false;
    if (!stopped) poll();
  }

  poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
