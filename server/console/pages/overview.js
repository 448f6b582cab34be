// Overview: the broker's health and its last hour of rates and group lag, from the history the
// broker keeps in memory (GET /api/v1/overview), polled every two seconds with `since`, so each
// poll carries only the new samples.
import { api } from '../api.js';
import { h, fill, fmtNum, fmtBytes, fmtRate, fmtDuration, errorText } from '../dom.js';
import { timeChart } from '../charts.js';

const POLL_MS = 2000;

export function render(main, ctx) {
  const cards = h('div', { class: 'cards' });
  const charts = h('div', { class: 'charts' });
  const status = h('p', { class: 'muted', role: 'status' }, 'Loading…');
  main.append(h('h1', {}, 'Overview'), status, cards, charts);
  if (!ctx.session.anywhere.read_all) {
    fill(status, 'The broker-wide figures need read on every stream (as /metrics does). ', h('a', { href: '#/streams' }, 'See your streams'));
    return null;
  }
  const rates = { t: [], append_records: [], append_bytes: [], read_records: [], read_bytes: [] };
  const lag = { t: [], records: [] };
  let since = 0;
  let timer = null;
  let stopped = false;

  const card = (label, value, hint) => h('div', { class: 'card stat' }, h('span', { class: 'label' }, label), h('span', { class: 'value' }, value), hint ? h('small', {}, hint) : null);

  async function poll() {
    try {
      const o = await api.get('overview?since=' + since);
      for (const k of Object.keys(rates)) rates[k].push(...o.rates[k]);
      lag.t.push(...o.lag.t);
      lag.records.push(...o.lag.records);
      // One hour at most, like the broker's ring.
      const keep = 3600;
      if (rates.t.length > keep) for (const k of Object.keys(rates)) rates[k].splice(0, rates[k].length - keep);
      if (lag.t.length > 360) {
        lag.t.splice(0, lag.t.length - 360);
        lag.records.splice(0, lag.records.length - 360);
      }
      if (rates.t.length) since = rates.t[rates.t.length - 1];
      const conns = o.connections;
      fill(
        cards,
        card('Status', o.failed_partitions ? 'degraded' : o.status, o.failed_partitions ? fmtNum(o.failed_partitions) + ' partitions fenced' : 'ready'),
        card('Version', o.version, 'engine: ' + o.engine),
        card('Uptime', fmtDuration(o.uptime_s)),
        card('Streams', fmtNum(o.streams), fmtNum(o.partitions) + ' partitions'),
        card('Retained', fmtBytes(o.retained_bytes), fmtNum(o.retained_records) + ' records'),
        card('Connections', fmtNum(conns.native + conns.kafka + conns.http), `native ${conns.native} · kafka ${conns.kafka} · http ${conns.http}`),
      );
      fill(
        charts,
        timeChart('Records per second', rates.t, [
          { label: 'appended', values: rates.append_records, className: 's1' },
          { label: 'read', values: rates.read_records, className: 's2' },
        ], fmtRate),
        timeChart('Bytes per second', rates.t, [
          { label: 'appended', values: rates.append_bytes, className: 's1' },
          { label: 'read', values: rates.read_bytes, className: 's2' },
        ], (v) => fmtBytes(v), true),
        timeChart('Group lag (records, all groups)', lag.t, [{ label: 'lag', values: lag.records, className: 's3' }], fmtRate),
      );
      fill(status, 'Live: the last hour from the broker\'s own history, sampled every ' + o.interval_ms / 1000 + ' s.');
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
