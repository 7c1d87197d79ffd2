// dq admin: the shards and alerts pages, and the start that draws the page
// named by the path (lib.js, pages_topics.js and pages_jobs.js load first).
'use strict';

// ---------- shards ----------

async function pageShards(main) {
  const body = el('tbody', { id: 'shards-body' });
  const message = el('div', { id: 'shards-message' });
  const address = el('input', { id: 'shard-address', placeholder: 'host:port' });
  const password = el('input', { id: 'shard-password', type: 'password', placeholder: 'password (optional)', autocomplete: 'off' });
  const addError = el('div', { className: 'field-error', 'data-error-for': 'address' });
  clear(main).append(
    el('h1', {}, 'Redis shards'),
    message,
    el('section', { className: 'panel' },
      el('div', { className: 'table-wrap' }, el('table', {},
        el('thead', {}, el('tr', {}, el('th', {}, 'Shard'), el('th', {}, 'State'), el('th', {}, 'Since'), el('th', { className: 'hide-narrow' }, 'Version'),
          el('th', { className: 'num hide-narrow' }, 'Memory'), el('th', { className: 'hide-narrow' }, 'Persistence'), el('th', { className: 'num' }, 'Jobs'),
          el('th', { className: 'hide-narrow' }, 'From'), el('th', {}, ''))), body))),
    el('section', { className: 'panel' }, el('h2', {}, 'Add a shard'),
      el('p', { className: 'muted' }, 'A shard added here joins every host within seconds (each host reloads its workers), then takes the ids it is the home of, and the jobs whose home it became are moved to it (moving, then active). It must answer and keep its data (persistence on, noeviction). Drain any host:port shard, of the registry or the config file, to give it no new job and move its delayed jobs and dead letters to their homes (Jobs counts down, moved off counts up); once drained it can be removed (a config-file shard stays drained until it is removed from the file). One change at a time.'),
      el('form', { className: 'row', onsubmit: async (e) => {
        e.preventDefault();
        addError.textContent = '';
        const r = await api('POST', '/api/shards', { address: address.value, password: password.value });
        if (!r.ok) { addError.textContent = r.data.error; return; }
        address.value = ''; password.value = '';
        notice(message, true, 'Shard ' + r.data.added + ' added.');
        load();
      } }, address, password, el('button', { type: 'submit', className: 'primary', id: 'shard-add' }, 'Add')),
      addError));

  async function load() {
    const r = await api('GET', '/api/shards');
    if (!r.ok) { notice(message, false, r.data.error); return; }
    clear(body);
    for (const s of r.data.shards) {
      const c = s.checked;
      const up = c ? c.up : s.reachable;
      const memory = c && c.used_memory ? fmtBytes(c.used_memory) + (c.maxmemory ? ' / ' + fmtBytes(c.maxmemory) : '') : '—';
      body.appendChild(el('tr', { 'data-shard': s.name },
        el('td', { className: 'mono' }, s.name,
          c && c.reason ? el('div', { className: 'error' }, c.reason) : null,
          c && c.problems && c.problems.length ? el('div', { className: 'error' }, c.problems.join('; ')) : null,
          !c && s.error ? el('div', { className: 'error' }, s.error) : null),
        el('td', {}, el('span', { className: 'badge ' + (up ? 'ok' : 'bad') }, up ? 'up' : 'down')),
        el('td', { className: 'muted' }, c ? fmtAgo(c.since_ms) : '—'),
        el('td', { className: 'hide-narrow' }, s.version || '—'),
        el('td', { className: 'num hide-narrow' }, memory),
        el('td', { className: 'hide-narrow' }, c ? c.persistence || '—' : '—'),
        el('td', { className: 'num' }, s.jobs >= 0 ? String(s.jobs) : '—',
          s.moved > 0 ? el('div', { className: 'muted', 'data-moved': String(s.moved) }, s.moved + ' moved off') : null),
        el('td', { className: 'hide-narrow muted' }, s.source + ' · ' + s.state + (s.in_use ? '' : ' · starting')),
        el('td', {}, s.state === 'active' ? armedButton('Drain', 'Sure?', async () => {
          const d = await api('POST', '/api/shards/' + enc(s.name) + '/drain');
          if (!d.ok) notice(message, false, d.data.error); else { notice(message, true, 'Shard ' + s.name + ' takes no new job within seconds; its jobs are being moved to their homes. Remove it once it is drained.'); load(); }
        }, 'small') : null,
        s.state === 'drained' || s.state === 'listed' || (s.source === 'registry' && s.state === 'draining') ? armedButton('Remove', 'Sure?', async () => {
          const d = await api('DELETE', '/api/shards/' + enc(s.name));
          if (!d.ok) notice(message, false, d.data.error); else { notice(message, true, 'Shard ' + s.name + ' removed.'); load(); }
        }, 'small') : null)));
    }
    if (!r.data.checker_running) notice(message, false, 'The redis checker has not reported lately: states come from a direct ping.');
  }
  await load();
  state.timer = setInterval(() => { load().catch(() => {}); }, 5000);
}

// ---------- alerts ----------

const ALERT_FIELDS = [
  { key: 'smtp_host', label: 'SMTP host', hint: 'empty: no mail' },
  { key: 'smtp_port', label: 'SMTP port' },
  { key: 'smtp_security', label: 'Security', options: ['none', 'starttls', 'tls'] },
  { key: 'smtp_user', label: 'SMTP user', hint: 'empty: no AUTH' },
  { key: 'smtp_password', label: 'SMTP password', password: true, hint: '*** keeps the stored one' },
  { key: 'mail_from', label: 'From' },
  { key: 'to', label: 'Recipients', hint: 'comma-separated; get every alert' },
  { key: 'webhook_url', label: 'Webhook URL', hint: 'POSTed a JSON object per alert; empty: off' },
];

async function pageAlerts(main) {
  const message = el('div', { id: 'alerts-message' });
  const testResult = el('div', { id: 'alerts-test' });
  const form = el('form', { className: 'fields', id: 'alerts-form', novalidate: true });
  clear(main).append(el('h1', {}, 'Alerts'), message,
    el('section', { className: 'panel' }, el('h2', {}, 'Mail and webhook'), form),
    el('section', { className: 'panel' }, el('h2', {}, 'Send a test'),
      el('p', { className: 'muted' }, 'Sends a test mail to the recipients and a test call to the webhook now.'),
      el('button', { type: 'button', id: 'alerts-send-test', onclick: async () => {
        clear(testResult).appendChild(el('span', { className: 'muted' }, 'sending…'));
        const r = await api('POST', '/api/alerts/test');
        clear(testResult);
        if (!r.ok) { notice(testResult, false, r.data.error); return; }
        for (const channel of ['mail', 'webhook']) {
          const c = r.data[channel];
          if (c) testResult.appendChild(el('div', { className: 'notice ' + (c.ok ? 'ok' : 'bad') }, channel + ': ' + (c.ok ? 'accepted: ' + c.answer : 'FAILED: ' + c.error)));
        }
      } }, 'Send test'), testResult));
  const r = await api('GET', '/api/alerts');
  if (!r.ok) { notice(message, false, r.data.error); return; }
  // The version the form shows: a save over a change made meanwhile elsewhere is refused (409).
  let version = r.data.version;
  const inputs = {};
  const errors = {};
  for (const f of ALERT_FIELDS) {
    const value = r.data[f.key] === undefined ? '' : String(r.data[f.key]);
    const input = f.options
      ? el('select', { id: 'alert-' + f.key }, f.options.map((o) => el('option', { value: o, selected: o === value }, o)))
      : el('input', { id: 'alert-' + f.key, value, type: f.password ? 'password' : 'text', autocomplete: 'off' });
    inputs[f.key] = input;
    errors[f.key] = el('div', { className: 'field-error', 'data-error-for': f.key });
    form.append(el('label', { for: 'alert-' + f.key }, f.label), el('div', {}, input, f.hint ? el('div', { className: 'hint' }, f.hint) : null, errors[f.key]));
  }
  const formError = el('p', { className: 'error' });
  form.append(el('span'), el('div', {}, el('button', { type: 'submit', className: 'primary', id: 'alerts-save' }, 'Save'), formError));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const e of Object.values(errors)) e.textContent = '';
    formError.textContent = '';
    const data = {};
    for (const f of ALERT_FIELDS) data[f.key] = inputs[f.key].value;
    data.version = version;
    const s = await api('PUT', '/api/alerts', data);
    if (!s.ok) {
      if (errors[s.data.field]) errors[s.data.field].textContent = s.data.error; else formError.textContent = s.data.error;
      return;
    }
    version = s.data.version;
    notice(message, true, 'Alert settings saved.');
  });
}

// ---------- start ----------

const PAGES = { '/': ['dashboard', pageDashboard], '/topics': ['topics', pageTopics], '/jobs': ['jobs', pageJobs],
  '/dead': ['dead', pageDead], '/shards': ['shards', pageShards], '/alerts': ['alerts', pageAlerts] };

async function start() {
  const session = await api('GET', '/api/session');
  if (!session.ok) return;
  state.csrf = session.data.csrf;
  state.user = session.data.user;
  document.getElementById('who').textContent = state.user;
  document.getElementById('logout').addEventListener('click', async () => {
    await api('POST', '/api/logout');
    window.location.assign('/login');
  });
  const [name, draw] = PAGES[window.location.pathname] || PAGES['/'];
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('data-page') === name) link.classList.add('active');
  }
  const main = document.getElementById('main');
  stopRefresh();
  try {
    await draw(main);
  } catch (e) {
    notice(main, false, 'This page failed: ' + e.message);
  }
  document.body.setAttribute('data-ready', name);
}

start();
