// The console's only way to the broker: /api/v1 on the same origin (docs/HTTP.md). The session
// cookie is HttpOnly, so this script never sees a credential; the broker reads it from the cookie.
// Every change is a POST with a JSON body or a DELETE, which the broker accepts only from this origin.

export class ApiError extends Error {
  constructor(status, error) {
    super(error.message);
    this.status = status;
    this.name = error.name;
    this.code = error.code;
    this.fields = error.fields || {};
  }
}

let onUnauthenticated = () => {};
export function setUnauthenticatedHandler(fn) {
  onUnauthenticated = fn;
}

async function call(method, path, body, options) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  } else if (method === 'POST') {
    init.headers['Content-Type'] = 'application/json';
    init.body = '{}';
  }
  if (options && options.signal) init.signal = options.signal;
  const response = await fetch('/api/v1/' + path, init);
  let json = null;
  try {
    json = await response.json();
  } catch (e) {
    json = null;
  }
  if (!response.ok) {
    const error = json && json.error ? json.error : { name: 'HTTP_' + response.status, message: response.statusText };
    if (response.status === 401 && !(options && options.quiet)) onUnauthenticated();
    throw new ApiError(response.status, error);
  }
  return json;
}

export const api = {
  get: (path, options) => call('GET', path, undefined, options),
  post: (path, body, options) => call('POST', path, body, options),
  del: (path, options) => call('DELETE', path, undefined, options),
};

// A path segment: stream and group names may hold characters a URL treats specially.
export const seg = (s) => encodeURIComponent(s);

export function query(params) {
  const parts = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(v));
  }
  return parts.length ? '?' + parts.join('&') : '';
}
