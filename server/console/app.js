// The console's shell: the session, the theme and the hash router (docs/CONSOLE.md). Each page is
// a module whose render(main, ctx) fills <main> and returns a function that stops what it started
// (polls, tails) when the page is left.
import { api, setUnauthenticatedHandler } from './api.js';
import { h, fill, hashLink, toast } from './dom.js';
import * as overview from './pages/overview.js';
import * as streams from './pages/streams.js';
import * as stream from './pages/stream.js';
import * as records from './pages/records.js';
import * as groups from './pages/groups.js';
import * as login from './pages/login.js';

const state = { session: null, leave: null };

// Light or dark: the system's choice unless the user picked one here (kept in localStorage; it
// holds nothing but that word).
function applyTheme() {
  const chosen = localStorage.getItem('streamd-theme');
  const dark = chosen ? chosen === 'dark' : window.matchMedia('(prefers-color-scheme: dark)').matches;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}

function toggleTheme() {
  const dark = document.documentElement.dataset.theme === 'dark';
  localStorage.setItem('streamd-theme', dark ? 'light' : 'dark');
  applyTheme();
}

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = raw.split('?');
  const query = Object.fromEntries(new URLSearchParams(qs || ''));
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { path, parts, query };
}

function route(parts) {
  if (parts.length === 0) return { page: overview, nav: 'overview' };
  if (parts[0] === 'login') return { page: login, nav: '' };
  if (parts[0] === 'streams') return { page: streams, nav: 'streams' };
  if (parts[0] === 's' && parts.length >= 2) {
    const name = parts[1];
    if (parts.length === 2) return { page: stream, nav: 'streams', params: { stream: name } };
    if (parts[2] === 'records') return { page: records, nav: 'streams', params: { stream: name } };
    if (parts[2] === 'groups') return { page: groups, nav: 'streams', params: { stream: name } };
    if (parts[2] === 'p' && parts[4] === 'o') {
      return { page: records, nav: 'streams', params: { stream: name, partition: parts[3], offset: parts[5] } };
    }
  }
  return null;
}

function renderWho() {
  const who = document.getElementById('who');
  const s = state.session;
  if (!s || !s.authenticated) return fill(who);
  if (!s.auth_required) return fill(who, h('span', { class: 'muted' }, 'no access file: every right'));
  fill(
    who,
    h('span', { class: 'principal', title: 'Logged in as' }, s.principal),
    h('button', { type: 'button', class: 'link', onclick: logout }, 'Log out'),
  );
}

async function logout() {
  try {
    await api.del('session');
  } catch (e) {
    // The session ends on the broker anyway when it expires.
  }
  state.session = null;
  location.hash = '#/login';
}

export async function refreshSession() {
  state.session = await api.get('session', { quiet: true });
  renderWho();
  return state.session;
}

async function show() {
  if (state.leave) {
    state.leave();
    state.leave = null;
  }
  const main = document.getElementById('main');
  const { parts, query } = parseHash();
  if (!state.session) {
    try {
      await refreshSession();
    } catch (e) {
      fill(main, h('p', { class: 'error' }, 'The broker does not answer: ' + e.message));
      return;
    }
  }
  const found = route(parts);
  if (!found) {
    fill(main, h('h1', {}, 'Not found'), h('p', {}, 'No such page. ', hashLink('/', 'Go to the overview')));
    return;
  }
  if (found.page !== login && !state.session.authenticated) {
    location.hash = '#/login?next=' + encodeURIComponent(location.hash.slice(1));
    return;
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === found.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  fill(main);
  const ctx = { session: state.session, params: found.params || {}, query, refreshSession };
  try {
    state.leave = found.page.render(main, ctx) || null;
  } catch (e) {
    toast(String(e), 'error');
  }
  main.focus({ preventScroll: true });
}

applyTheme();
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', applyTheme);
document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('theme').addEventListener('click', toggleTheme);
  setUnauthenticatedHandler(() => {
    state.session = null;
    if (!location.hash.startsWith('#/login')) location.hash = '#/login';
  });
  window.addEventListener('hashchange', show);
  show();
});
