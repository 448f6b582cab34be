// DOM helpers for the console. Every piece of text a page shows goes through a text node
// (h() turns strings into text nodes; nothing here or in the pages ever assigns innerHTML), so a
// record holding "<script>" is shown as those characters and never runs.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'class') {
      el.className = value;
    } else if (name === 'value') {
      el.value = value;
    } else if (name === 'checked') {
      el.checked = Boolean(value);
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) {
      append(el, child);
    } else if (child instanceof Node) {
      el.appendChild(child);
    } else {
      el.appendChild(document.createTextNode(String(child)));
    }
  }
}

// Replaces the children of `el`.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) el.setAttribute(name, String(value));
  for (const child of children) {
    if (child instanceof Node) el.appendChild(child);
    else if (child !== undefined && child !== null) el.appendChild(document.createTextNode(String(child)));
  }
  return el;
}

export function fmtNum(n) {
  if (n === null || n === undefined) return '–';
  return Number(n).toLocaleString('en-US', { maximumFractionDigits: 1 });
}

export function fmtRate(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(2) + ' M';
  if (n >= 1e3) return (n / 1e3).toFixed(1) + ' k';
  return n.toFixed(n < 10 && n > 0 ? 1 : 0);
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? v.toFixed(0) : v.toFixed(1)) + ' ' + units[i];
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return '–';
  const s = Math.round(seconds);
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
}

// "2026-12-04T09:12:01.123456Z" → "2026-12-04 09:12:01.123" (UTC, as the broker records it).
export function fmtTime(rfc3339) {
  if (!rfc3339) return '–';
  return rfc3339.replace('T', ' ').replace(/(\.\d{3})\d*Z$/, '$1');
}

// A short-lived message at the bottom of the page; errors stay until dismissed.
export function toast(message, kind) {
  const box = document.getElementById('toasts');
  const item = h('div', { class: 'toast ' + (kind || 'info'), role: kind === 'error' ? 'alert' : 'status' }, message);
  const close = h('button', { class: 'link', 'aria-label': 'Dismiss', onclick: () => item.remove() }, '×');
  item.appendChild(close);
  box.appendChild(item);
  if (kind !== 'error') setTimeout(() => item.remove(), 4000);
}

// The text of an API error, as streamctl prints it: NAME: message (field=value, …).
export function errorText(err) {
  if (!err || !err.name) return String(err && err.message ? err.message : err);
  const fields = Object.entries(err.fields || {}).map(([k, v]) => k + '=' + v).join(', ');
  return err.name + ': ' + err.message + (fields ? ' (' + fields + ')' : '');
}

export function hashLink(path, label, attrs) {
  return h('a', Object.assign({ href: '#' + path }, attrs || {}), label);
}

// A labelled form field.
export function field(label, input, hint) {
  const id = input.id || 'f-' + Math.random().toString(36).slice(2);
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('small', {}, hint) : null);
}

// A modal dialog; resolves when closed. `build(close)` returns its content.
export function dialog(title, build) {
  return new Promise((resolve) => {
    const d = h('dialog', { class: 'modal', 'aria-label': title });
    const close = (value) => {
      d.close();
      d.remove();
      resolve(value);
    };
    d.appendChild(h('h2', {}, title));
    d.appendChild(build(close));
    d.addEventListener('cancel', (e) => {
      e.preventDefault();
      close(undefined);
    });
    document.body.appendChild(d);
    d.showModal();
  });
}
