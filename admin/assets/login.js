// The login form: POST /api/login, then on to the page asked for (or /).
'use strict';
document.getElementById('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const error = document.getElementById('login-error');
  error.textContent = '';
  const body = {
    user: document.getElementById('user').value,
    password: document.getElementById('password').value,
  };
  try {
    const answer = await fetch('/api/login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify(body),
    });
    if (answer.ok) {
      window.location.assign('/');
      return;
    }
    const data = await answer.json().catch(() => ({}));
    error.textContent = data.error || ('login failed: HTTP ' + answer.status);
  } catch (e) {
    error.textContent = 'cannot reach dq-admin: ' + e;
  }
});
