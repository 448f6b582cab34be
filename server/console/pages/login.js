// Login: a user and password of the access file's SCRAM lines, or a token. The broker answers with
// an HttpOnly session cookie; nothing secret is kept by this page.
import { api } from '../api.js';
import { h, field, errorText } from '../dom.js';

export function render(main, ctx) {
  const next = ctx.query.next || '/';
  if (ctx.session && ctx.session.authenticated) {
    location.hash = '#' + next;
    return null;
  }
  const user = h('input', { name: 'user', autocomplete: 'username', required: true });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const token = h('input', { name: 'token', type: 'password', autocomplete: 'off' });
  const message = h('p', { class: 'error', role: 'alert' });
  const submit = async (body) => {
    message.textContent = '';
    try {
      await api.post('session', body, { quiet: true });
      await ctx.refreshSession();
      location.hash = '#' + next;
    } catch (e) {
      message.textContent = e.name === 'UNAUTHENTICATED' ? 'Wrong user, password or token.' : errorText(e);
    }
  };
  main.append(
    h(
      'section',
      { class: 'login card' },
      h('h1', {}, 'Log in to streamd'),
      h('p', { class: 'muted' }, 'With a user of the access file (its SCRAM password), or with a token.'),
      h(
        'form',
        {
          onsubmit: (e) => {
            e.preventDefault();
            submit({ user: user.value, password: password.value });
          },
        },
        field('User', user),
        field('Password', password),
        h('button', { type: 'submit', class: 'primary' }, 'Log in'),
      ),
      h(
        'details',
        {},
        h('summary', {}, 'Log in with a token instead'),
        h(
          'form',
          {
            onsubmit: (e) => {
              e.preventDefault();
              submit({ token: token.value });
            },
          },
          field('Token', token),
          h('button', { type: 'submit' }, 'Log in with the token'),
        ),
      ),
      message,
    ),
  );
  user.focus();
  return null;
}
