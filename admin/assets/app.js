// dq admin: draws the page named by the path from the JSON API under /api/.
// Every value from the server goes into the page as text (textContent,
// setAttribute of plain attributes), never parsed as HTML, so a topic's
// creator or a job body cannot run as script.
'use strict';

const state = { csrf: '', user: '', timer: null };

// ---------- small helpers ----------

// el('td', {className: 'num'}, 'text', childNode...): children are strings
// (made text nodes) or nodes.
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'className') node.className = value;
    else if (key === 'text') node.textContent = String(value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'value') node.value = value;
    else if (key === 'checked') node.checked = !!value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.appendChild(typeof child === 'string' || typeof child === 'number'
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
    pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
}

function fmtAgo(ms) {
  if (!ms) return '—';
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 0) return 'in ' + fmtDuration(-s);
  return fmtDuration(s) + ' ago';
}

function fmtDuration(s) {
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min';
  if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
}

function fmtBytes(n) {
  if (!n) return '0';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + ' ' + units[i];
}

function params() { return new URLSearchParams(window.location.search); }

function setParams(values) {
  const p = params();
  for (const [k, v] of Object.entries(values)) {
    if (v === '' || v === null || v === undefined) p.delete(k); else p.set(k, v);
  }
  const q = p.toString();
  window.history.replaceState(null, '', window.location.pathname + (q ? '?' + q : ''));
}

function enc(text) { return encodeURIComponent(text); }

async function api(method, path, body) {
  const options = { method, credentials: 'same-origin', headers: {} };
  if (method !== 'GET') options.headers['X-CSRF-Token'] = state.csrf;
  if (body !== undefined) {
    options.headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  const answer = await fetch(path, options);
  if (answer.status === 401) {
    window.location.assign('/login');
    throw new Error('log in first');
  }
  const data = await answer.json().catch(() => ({}));
  return { status: answer.status, ok: answer.ok, data };
}

function notice(target, ok, text) {
  clear(target).appendChild(el('div', { className: 'notice ' + (ok ? 'ok' : 'bad'), role: 'status' }, text));
}

function stateBadge(name) {
  const kind = { delayed: 'off', ready: 'ok', working: 'ok', retrying: 'warn', dead: 'bad', held: 'warn' }[name] || 'off';
  return el('span', { className: 'badge ' + kind, text: name });
}

// A button that asks for a second click within 4 s before it acts.
function armedButton(label, armedLabel, action, extraClass) {
  let armed = false;
  let reset = null;
  const button = el('button', { className: 'danger ' + (extraClass || ''), type: 'button', text: label });
  button.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      button.textContent = armedLabel;
      button.classList.add('armed');
      reset = setTimeout(() => { armed = false; button.textContent = label; button.classList.remove('armed'); }, 4000);
      return;
    }
    clearTimeout(reset);
    armed = false;
    button.textContent = label;
    button.classList.remove('armed');
    await action();
  });
  return button;
}

function pager(offset, limit, total, go) {
  const from = total === 0 ? 0 : offset + 1;
  const to = Math.min(offset + limit, total);
  return el('div', { className: 'pager' },
    el('button', { type: 'button', className: 'small', disabled: offset <= 0, onclick: () => go(Math.max(0, offset - limit)), 'data-test': 'prev' }, '‹ Previous'),
    el('span', { className: 'muted' }, from + '–' + to + ' of ' + total),
    el('button', { type: 'button', className: 'small', disabled: to >= total, onclick: () => go(offset + limit), 'data-test': 'next' }, 'Next ›'));
}

async function topicNames() {
  const answer = await api('GET', '/api/topics?limit=500');
  return answer.ok ? answer.data.topics.map((t) => t.name) : [];
}

function topicSelect(names, selected, onchange, id) {
  const select = el('select', { id: id || 'topic-select', onchange: (e) => onchange(e.target.value) },
    names.map((n) => el('option', { value: n, selected: n === selected }, n)));
  if (!names.length) select.appendChild(el('option', { value: '' }, '(no topics)'));
  return select;
}

function stopRefresh() {
  if (state.timer) clearInterval(state.timer);
  state.timer = null;
}

// ---------- charts (canvas, drawn here) ----------

const SERIES = [
  { key: 'added', color: '#2557d6' },
  { key: 'delivered', color: '#1d8a4e' },
  { key: 'failed', color: '#c53030' },
];

function drawChart(canvas, labels, rows) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 600;
  const height = canvas.clientHeight || 180;
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  const g = canvas.getContext('2d');
  g.scale(ratio, ratio);
  g.clearRect(0, 0, width, height);
  const left = 40, right = 8, top = 8, bottom = 22;
  let max = 4;  // whole numbers on the 4 grid lines
  for (const row of rows) for (const s of SERIES) max = Math.max(max, row[s.key] || 0);
  max = Math.ceil(max / 4) * 4;
  const w = width - left - right, h = height - top - bottom;
  g.strokeStyle = '#dde1e8';
  g.fillStyle = '#6a7283';
  g.font = '11px system-ui, sans-serif';
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = top + h - (h * i) / 4;
    g.beginPath(); g.moveTo(left, y); g.lineTo(left + w, y); g.stroke();
    g.fillText(String(Math.round((max * i) / 4)), 4, y + 4);
  }
  const n = Math.max(rows.length, 1);
  const step = labels.length > 12 ? Math.ceil(labels.length / 6) : 1;
  labels.forEach((label, i) => {
    if (i % step === 0) g.fillText(label, left + (w * i) / Math.max(n - 1, 1) - 10, height - 6);
  });
  for (const s of SERIES) {
    g.strokeStyle = s.color;
    g.lineWidth = 2;
    g.beginPath();
    rows.forEach((row, i) => {
      const x = left + (w * i) / Math.max(n - 1, 1);
      const y = top + h - (h * (row[s.key] || 0)) / max;
      if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
    });
    g.stroke();
  }
}

function legend() {
  return el('div', { className: 'legend' }, SERIES.map((s) =>
    el('span', {}, el('span', { className: 'swatch sw-' + s.key }), s.key)));
}

// ---------- dashboard ----------

const COUNT_FIELDS = ['delayed', 'ready', 'working', 'retrying', 'dead', 'held'];
const COUNT_TITLES = { delayed: 'Delayed', ready: 'Ready', working: 'In flight', retrying: 'Retrying', dead: 'Dead', held: 'Held' };

async function pageDashboard(main) {
  const topicsBody = el('tbody', { id: 'dash-topics' });
  const shardsBody = el('tbody', { id: 'dash-shards' });
  const chosenLabel = el('span', { id: 'dash-series-topic' });
  const minuteCanvas = el('canvas', { className: 'chart', id: 'chart-minutes' });
  const dayCanvas = el('canvas', { className: 'chart', id: 'chart-days' });
  const cards = el('div', { className: 'cards', id: 'dash-cards' });
  const problem = el('div', { id: 'dash-problem' });
  const updated = el('span', { className: 'muted', id: 'dash-updated' });
  clear(main).append(
    el('div', { className: 'row' }, el('h1', {}, 'Dashboard'), el('span', { className: 'spacer' }), updated),
    problem,
    el('div', { className: 'grid' },
      el('div', {},
        el('section', { className: 'panel' }, el('h2', {}, 'Topics'), cards,
          el('div', { className: 'table-wrap' }, el('table', {},
            el('thead', {}, el('tr', {}, el('th', {}, 'Topic'), el('th', {}, 'Status'),
              COUNT_FIELDS.map((f) => el('th', { className: 'num' }, COUNT_TITLES[f])),
              el('th', { className: 'num hide-narrow' }, 'Added'), el('th', { className: 'num hide-narrow' }, 'Delivered'),
              el('th', { className: 'num hide-narrow' }, 'Failed'))),
            topicsBody))),
        el('section', { className: 'panel' }, el('h2', {}, 'Last hour, per minute: ', chosenLabel), minuteCanvas, legend()),
        el('section', { className: 'panel' }, el('h2', {}, 'Last 30 days, per day'), dayCanvas, legend())),
      el('section', { className: 'panel' }, el('h2', {}, 'Redis shards'),
        el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'Shard'), el('th', {}, 'State'), el('th', {}, 'Since'))), shardsBody),
        el('p', { className: 'muted' }, el('a', { href: '/shards' }, 'Shard details ›')))));

  async function refresh() {
    const chosen = params().get('topic') || '';
    const answer = await api('GET', '/api/dashboard' + (chosen ? '?topic=' + enc(chosen) : ''));
    if (!answer.ok) { notice(problem, false, answer.data.error || 'HTTP ' + answer.status); return; }
    clear(problem);
    const data = answer.data;
    const sums = {};
    clear(topicsBody);
    for (const t of data.topics) {
      const now = t.now || {};
      const total = t.total || {};
      for (const f of COUNT_FIELDS) sums[f] = (sums[f] || 0) + (now[f] || 0);
      topicsBody.appendChild(el('tr', { 'data-topic': t.topic },
        el('td', {}, el('a', { href: '/?topic=' + enc(t.topic), onclick: (e) => { e.preventDefault(); setParams({ topic: t.topic }); refresh(); } }, t.topic)),
        el('td', {}, el('span', { className: 'badge ' + (t.online ? 'ok' : 'off') }, t.online ? 'online' : 'offline')),
        COUNT_FIELDS.map((f) => el('td', {
          className: 'num' + (f === 'dead' && now[f] > 0 ? ' count-bad' : f === 'retrying' && now[f] > 0 ? ' count-warn' : ''),
          'data-count': f,
        }, String(now[f] || 0))),
        el('td', { className: 'num hide-narrow', 'data-total': 'added' }, String(total.added || 0)),
        el('td', { className: 'num hide-narrow', 'data-total': 'delivered' }, String(total.delivered || 0)),
        el('td', { className: 'num hide-narrow', 'data-total': 'failed' }, String(total.failed || 0))));
      if (t.unreachable_shards && t.unreachable_shards.length) {
        topicsBody.appendChild(el('tr', {}, el('td', { colspan: 12, className: 'error' },
          'not counted: shards ' + t.unreachable_shards.join(', ') + ' cannot be reached')));
      }
    }
    if (!data.topics.length) topicsBody.appendChild(el('tr', {}, el('td', { colspan: 12, className: 'muted' }, 'No topics yet. ', el('a', { href: '/topics' }, 'Add one'))));
    clear(cards);
    for (const f of COUNT_FIELDS) {
      cards.appendChild(el('div', { className: 'card' }, el('div', { className: 'value' }, String(sums[f] || 0)), el('div', { className: 'label' }, COUNT_TITLES[f])));
    }
    const series = data.series;
    chosenLabel.textContent = series ? series.topic : '(no topic)';
    if (series) {
      const minuteRows = series.per_minute || [];
      const minuteLabels = minuteRows.map((row) => {
        const d = new Date(row.at_ms || (row.minute || 0) * 60000);
        return String(d.getHours()).padStart(2, '0') + ':' + String(d.getMinutes()).padStart(2, '0');
      });
      drawChart(minuteCanvas, minuteLabels, minuteRows);
      const dayRows = series.per_day || [];
      drawChart(dayCanvas, dayRows.map((row) => String(row.day || '').slice(4, 6) + '-' + String(row.day || '').slice(6)), dayRows);
    }
    clear(shardsBody);
    const shards = (data.shards && data.shards.shards) || [];
    for (const s of shards) {
      shardsBody.appendChild(el('tr', { 'data-shard': s.name },
        el('td', { className: 'mono' }, s.name),
        el('td', {}, el('span', { className: 'badge ' + (!data.checker_running ? 'off' : s.up ? 'ok' : 'bad') },
          !data.checker_running ? 'unknown' : s.up ? 'up' : 'down')),
        el('td', { className: 'muted' }, fmtAgo(s.since_ms))));
    }
    if (!shards.length) shardsBody.appendChild(el('tr', {}, el('td', { colspan: 3, className: 'muted' }, 'The redis checker has not reported yet.')));
    updated.textContent = 'updated ' + fmtTime(data.now_ms);
  }
  await refresh();
  state.timer = setInterval(() => { refresh().catch(() => {}); }, 3000);
}

// ---------- topics ----------

const TOPIC_FIELDS = [
  { key: 'name', label: 'Name', hint: 'A-Z a-z 0-9 _ . - (at most 64); cannot be changed later' },
  { key: 'callback_url', label: 'Callback URL', hint: 'http:// or https://; where due jobs are delivered' },
  { key: 'method', label: 'Method', options: ['POST', 'GET'], hint: 'POST: JSON body; GET: query parameters' },
  { key: 'callback_format', label: 'Callback format', options: ['json', 'form'], hint: "json: dq's JSON document; form: the body's keys as form fields or query parameters, as the PHP queue sent them" },
  { key: 'success_json', label: 'Success rule', hint: 'empty: any 2xx succeeds; PATH=VALUE (e.g. code=0): a 2xx whose JSON body differs is a failed attempt' },
  { key: 'timeout_ms', label: 'Timeout (ms)', number: true, hint: 'per delivery attempt' },
  { key: 'default_delay_s', label: 'Default delay (s)', number: true, hint: 'when a job names neither delay nor at' },
  { key: 'max_attempts', label: 'Max attempts', number: true, hint: '0: the server default; then the job is a dead letter' },
  { key: 'retry_ms', label: 'Retry schedule (ms)', hint: 'e.g. 1000,3000,5000; empty: 1, 3, 5 ... minutes (2n+1)' },
  { key: 'priority', label: 'Priority', options: ['1', '2', '3'], number: true, hint: '1 highest, 3 lowest' },
  { key: 'alert_emails', label: 'Alert emails', hint: 'comma-separated; told about dead letters' },
  { key: 'creator', label: 'Creator', hint: 'who owns this topic' },
];

async function pageTopics(main) {
  const p = params();
  let offset = Number(p.get('offset') || 0);
  const limit = 20;
  const search = el('input', { id: 'topic-search', type: 'search', placeholder: 'Search name, creator, URL', value: p.get('q') || '' });
  const body = el('tbody', { id: 'topics-body' });
  const pagerBox = el('div');
  const formBox = el('section', { className: 'panel', id: 'topic-form-panel' });
  const message = el('div', { id: 'topics-message' });
  clear(main).append(
    el('div', { className: 'row' }, el('h1', {}, 'Topics'), el('span', { className: 'spacer' }),
      el('button', { className: 'primary', type: 'button', id: 'new-topic', onclick: () => showForm(null) }, 'Add topic')),
    message,
    el('section', { className: 'panel' },
      el('div', { className: 'row' }, search, el('button', { type: 'button', id: 'topic-search-button', onclick: () => { offset = 0; load(); } }, 'Search')),
      el('div', { className: 'table-wrap' }, el('table', {},
        el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Status'), el('th', { className: 'hide-narrow' }, 'Callback'),
          el('th', { className: 'hide-narrow' }, 'Creator'), el('th', {}, 'Actions'))), body)),
      pagerBox),
    formBox);
  search.addEventListener('keydown', (e) => { if (e.key === 'Enter') { offset = 0; load(); } });

  async function load() {
    setParams({ q: search.value, offset: offset || '' });
    const answer = await api('GET', '/api/topics?q=' + enc(search.value) + '&offset=' + offset + '&limit=' + limit);
    if (!answer.ok) { notice(message, false, answer.data.error || 'HTTP ' + answer.status); return; }
    clear(body);
    for (const t of answer.data.topics) body.appendChild(topicRow(t));
    if (!answer.data.topics.length) body.appendChild(el('tr', {}, el('td', { colspan: 5, className: 'muted' }, 'No topic matches.')));
    clear(pagerBox).appendChild(pager(offset, limit, answer.data.total, (next) => { offset = next; load(); }));
  }

  function topicRow(t) {
    const result = el('div', { className: 'test-result' });
    return el('tr', { 'data-topic': t.name },
      el('td', {}, el('a', { href: '#', className: 'topic-name', onclick: (e) => { e.preventDefault(); showForm(t); } }, t.name)),
      el('td', {}, el('span', { className: 'badge ' + (t.online ? 'ok' : 'off') }, t.online ? 'online' : 'offline')),
      el('td', { className: 'mono hide-narrow' }, t.method + ' ' + t.callback_url),
      el('td', { className: 'hide-narrow topic-creator' }, t.creator),
      el('td', {},
        el('div', { className: 'row' },
          el('button', { type: 'button', className: 'small', onclick: async () => {
            const r = await api('PUT', '/api/topics/' + enc(t.name), { online: !t.online });
            if (!r.ok) notice(message, false, r.data.error); else load();
          } }, t.online ? 'Set offline' : 'Set online'),
          el('button', { type: 'button', className: 'small test-callback', onclick: async () => {
            clear(result).appendChild(el('span', { className: 'muted' }, 'calling…'));
            const r = await api('POST', '/api/topics/' + enc(t.name) + '/test');
            clear(result);
            if (!r.ok) { result.appendChild(el('span', { className: 'error' }, r.data.error)); return; }
            const d = r.data;
            result.appendChild(el('div', {},
              el('span', { className: 'badge ' + (d.ok ? 'ok' : 'bad') }, d.reached ? 'HTTP ' + d.status : 'not reached'),
              ' ', el('span', { className: 'muted' }, d.time_ms + ' ms'),
              d.error ? el('div', { className: 'error' }, d.error) : null,
              d.first_bytes ? el('pre', { className: 'mono' }, d.first_bytes) : null));
          } }, 'Test callback'),
          el('a', { href: '/jobs?topic=' + enc(t.name), className: 'small' }, 'Jobs'),
          el('a', { href: '/dead?topic=' + enc(t.name), className: 'small' }, 'Dead letters'),
          armedButton('Delete', 'Click to delete', () => deleteTopic(t.name, false), 'small')),
        result));
  }

  async function deleteTopic(name, confirmed) {
    const r = await api('DELETE', '/api/topics/' + enc(name) + (confirmed ? '?confirm=yes' : ''));
    if (r.status === 409 && r.data.jobs) {
      clear(message).appendChild(el('div', { className: 'notice bad' }, r.data.error, ' ',
        armedButton('Delete with its ' + r.data.jobs + ' job(s)', 'Click again: this deletes the jobs', () => deleteTopic(name, true), 'small')));
      return;
    }
    if (!r.ok) { notice(message, false, r.data.error); return; }
    notice(message, true, 'Topic ' + name + ' deleted' + (r.data.purged_jobs ? ' with ' + r.data.purged_jobs + ' job(s)' : '') + '.');
    load();
  }

  function showForm(topic) {
    const editing = !!topic;
    const values = topic || { method: 'POST', callback_format: 'json', success_json: '', timeout_ms: 5000, default_delay_s: 0, max_attempts: 0, priority: 2, retry_ms: '', alert_emails: '', creator: state.user, callback_url: '', name: '' };
    const inputs = {};
    const errors = {};
    const formError = el('p', { className: 'error', id: 'topic-form-error' });
    const form = el('form', { className: 'fields', id: 'topic-form', novalidate: true });
    for (const f of TOPIC_FIELDS) {
      let input;
      if (f.options) {
        input = el('select', { id: 'field-' + f.key, name: f.key }, f.options.map((o) => el('option', { value: o, selected: String(values[f.key]) === o }, o)));
      } else {
        input = el('input', { id: 'field-' + f.key, name: f.key, value: values[f.key] === undefined ? '' : String(values[f.key]), inputmode: f.number ? 'numeric' : undefined });
      }
      if (editing && f.key === 'name') input.disabled = true;
      inputs[f.key] = input;
      errors[f.key] = el('div', { className: 'field-error', 'data-error-for': f.key });
      form.append(el('label', { for: 'field-' + f.key }, f.label), el('div', {}, input, el('div', { className: 'hint' }, f.hint), errors[f.key]));
    }
    const online = el('input', { type: 'checkbox', id: 'field-online', checked: editing ? topic.online : true });
    form.append(el('label', { for: 'field-online' }, 'Online'), el('div', {}, online, el('span', { className: 'hint' }, ' offline topics keep their jobs but deliver none')));
    form.append(el('span'), el('div', { className: 'row' },
      el('button', { type: 'submit', className: 'primary', id: 'topic-save' }, editing ? 'Save' : 'Add topic'),
      el('button', { type: 'button', onclick: () => clear(formBox) }, 'Cancel')), el('span'), formError);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      for (const e of Object.values(errors)) e.textContent = '';
      formError.textContent = '';
      const data = {};
      for (const f of TOPIC_FIELDS) {
        if (editing && f.key === 'name') continue;
        const raw = inputs[f.key].value;
        if (f.number) {
          const n = Number(raw);
          if (raw.trim() === '' || !Number.isInteger(n)) { errors[f.key].textContent = 'must be a whole number'; return; }
          data[f.key] = n;
        } else {
          data[f.key] = raw;
        }
      }
      data.online = online.checked;
      const r = editing ? await api('PUT', '/api/topics/' + enc(topic.name), data) : await api('POST', '/api/topics', data);
      if (!r.ok) {
        const target = errors[r.data.field];
        if (target) target.textContent = r.data.error; else formError.textContent = r.data.error || 'HTTP ' + r.status;
        return;
      }
      clear(formBox);
      notice(message, true, 'Topic ' + r.data.name + (editing ? ' saved.' : ' added.'));
      load();
    });
    clear(formBox).append(el('h2', {}, editing ? 'Edit topic ' + topic.name : 'Add a topic'), form);
    formBox.scrollIntoView({ block: 'nearest' });
  }

  await load();
  if (p.get('new') === '1') showForm(null);
}

// ---------- jobs ----------

function jobDetails(job) {
  const rows = [
    ['Topic', job.topic], ['Id', job.id], ['State', stateBadge(job.state)], ['Attempts', String(job.attempts)],
    ['Due', fmtTime(job.due_at_ms) + ' (' + fmtAgo(job.due_at_ms) + ')'], ['Created', fmtTime(job.created_at_ms)],
    ['Last error', job.last_error ? job.last_error + ' (' + fmtTime(job.last_error_at_ms) + ')' : '—'],
    ['Body', el('pre', { className: 'mono', id: 'job-body' }, typeof job.body === 'string' ? job.body : JSON.stringify(job.body, null, 2))],
  ];
  return el('dl', { className: 'details', id: 'job-details' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

async function pageJobs(main) {
  const p = params();
  const names = await topicNames();
  let topic = p.get('topic') || names[0] || '';
  let listState = p.get('state') || 'delayed';
  let offset = 0;
  const limit = 25;
  const body = el('tbody', { id: 'jobs-body' });
  const pagerBox = el('div');
  const listMessage = el('div', { id: 'jobs-message' });
  const tabs = el('div', { className: 'tabs', id: 'state-tabs' });
  const lookupTopic = topicSelect(names, topic, () => {}, 'lookup-topic');
  const lookupId = el('input', { id: 'lookup-id', placeholder: 'job id', value: p.get('id') || '' });
  const lookupResult = el('div', { id: 'lookup-result' });
  const purgeInput = el('input', { id: 'purge-confirm', placeholder: 'type the topic name' });
  const purgeMessage = el('div', { id: 'purge-message' });
  const select = topicSelect(names, topic, (value) => { topic = value; offset = 0; lookupTopic.value = value; load(); }, 'jobs-topic');

  clear(main).append(
    el('h1', {}, 'Jobs'),
    el('section', { className: 'panel' }, el('h2', {}, 'Look up a job'),
      el('form', { className: 'row', id: 'lookup-form', onsubmit: (e) => { e.preventDefault(); lookup(); } },
        lookupTopic, lookupId, el('button', { type: 'submit', className: 'primary', id: 'lookup-button' }, 'Look up')),
      lookupResult),
    el('section', { className: 'panel' },
      el('div', { className: 'row' }, el('h2', {}, 'Pending jobs of'), select, el('span', { className: 'spacer' }), tabs),
      listMessage,
      el('div', { className: 'table-wrap' }, el('table', {},
        el('thead', {}, el('tr', {}, el('th', {}, 'Id'), el('th', {}, 'State'), el('th', { className: 'num' }, 'Attempts'),
          el('th', {}, 'Due'), el('th', { className: 'hide-narrow' }, 'Last error'), el('th', { className: 'hide-narrow' }, 'Shard'), el('th', {}, ''))), body)),
      pagerBox),
    el('section', { className: 'panel' }, el('h2', {}, 'Purge a topic'),
      el('p', { className: 'muted' }, 'Deletes every job of the topic: pending ones and its dead letters. Type the topic name to confirm.'),
      el('div', { className: 'row' }, purgeInput, el('button', { type: 'button', className: 'danger', id: 'purge-button', onclick: purge }, 'Purge jobs')),
      purgeMessage));

  function drawTabs() {
    clear(tabs);
    for (const s of ['delayed', 'ready', 'working', 'retrying']) {
      tabs.appendChild(el('button', { type: 'button', className: 'small' + (s === listState ? ' active' : ''), 'data-state': s,
        onclick: () => { listState = s; offset = 0; load(); } }, s === 'working' ? 'in flight' : s));
    }
  }

  async function load() {
    drawTabs();
    setParams({ topic, state: listState });
    clear(body);
    if (!topic) { body.appendChild(el('tr', {}, el('td', { colspan: 7, className: 'muted' }, 'No topics yet.'))); return; }
    const r = await api('GET', '/api/topics/' + enc(topic) + '/jobs?state=' + listState + '&offset=' + offset + '&limit=' + limit);
    if (!r.ok) { notice(listMessage, false, r.data.error || 'HTTP ' + r.status); return; }
    clear(listMessage);
    if (r.data.unreachable_shards && r.data.unreachable_shards.length) notice(listMessage, false, 'Not listed: shards ' + r.data.unreachable_shards.join(', ') + ' cannot be reached.');
    for (const job of r.data.jobs) {
      body.appendChild(el('tr', { 'data-job': job.id },
        el('td', { className: 'mono' }, el('a', { href: '#', onclick: (e) => { e.preventDefault(); lookupTopic.value = topic; lookupId.value = job.id; lookup(); } }, job.id)),
        el('td', {}, stateBadge(job.state)),
        el('td', { className: 'num' }, String(job.attempts)),
        el('td', {}, fmtTime(job.due_at_ms || job.due_ms)),
        el('td', { className: 'hide-narrow error' }, job.last_error || ''),
        el('td', { className: 'mono hide-narrow' }, job.shard || ''),
        el('td', {}, armedButton('Delete', 'Sure?', async () => {
          const d = await api('DELETE', '/api/topics/' + enc(topic) + '/jobs/' + enc(job.id));
          if (!d.ok) notice(listMessage, false, d.data.error); else load();
        }, 'small'))));
    }
    if (!r.data.jobs.length) body.appendChild(el('tr', {}, el('td', { colspan: 7, className: 'muted' }, 'No ' + listState + ' jobs.')));
    clear(pagerBox).appendChild(pager(offset, limit, r.data.total, (next) => { offset = next; load(); }));
  }

  async function lookup() {
    const id = lookupId.value;
    if (!lookupTopic.value || !id) return;
    setParams({ id });
    const r = await api('GET', '/api/topics/' + enc(lookupTopic.value) + '/jobs/' + enc(id));
    clear(lookupResult);
    if (!r.ok) { notice(lookupResult, false, r.data.error || 'HTTP ' + r.status); return; }
    lookupResult.append(jobDetails(r.data), el('div', { className: 'row' },
      armedButton('Delete this job', 'Click again to delete', async () => {
        const d = await api('DELETE', '/api/topics/' + enc(r.data.topic) + '/jobs/' + enc(r.data.id));
        if (!d.ok) notice(lookupResult, false, d.data.error); else { notice(lookupResult, true, 'Job ' + r.data.id + ' deleted.'); load(); }
      })));
  }

  async function purge() {
    const r = await api('POST', '/api/topics/' + enc(topic) + '/purge', { confirm: purgeInput.value });
    if (!r.ok) { notice(purgeMessage, false, r.data.error); return; }
    purgeInput.value = '';
    notice(purgeMessage, true, r.data.purged + ' job(s) of ' + topic + ' deleted.');
    load();
  }

  await load();
  if (lookupId.value) await lookup();
}

// ---------- dead letters ----------

async function pageDead(main) {
  const names = await topicNames();
  let topic = params().get('topic') || names[0] || '';
  let offset = 0;
  const limit = 25;
  const body = el('tbody', { id: 'dead-body' });
  const pagerBox = el('div');
  const message = el('div', { id: 'dead-message' });
  const all = el('input', { type: 'checkbox', id: 'dead-select-all', onchange: () => {
    for (const box of body.querySelectorAll('input[type=checkbox]')) box.checked = all.checked;
  } });
  clear(main).append(
    el('h1', {}, 'Dead letters'),
    el('section', { className: 'panel' },
      el('div', { className: 'row' }, topicSelect(names, topic, (v) => { topic = v; offset = 0; load(); }, 'dead-topic'),
        el('span', { className: 'spacer' }),
        el('button', { type: 'button', id: 'requeue-selected', onclick: () => requeue({ ids: selected() }) }, 'Requeue selected'),
        el('button', { type: 'button', id: 'requeue-all', onclick: () => requeue({ all: true }) }, 'Requeue all'),
        armedButton('Delete all', 'Click again to delete all', async () => {
          const r = await api('DELETE', '/api/topics/' + enc(topic) + '/dead');
          if (!r.ok) notice(message, false, r.data.error); else { notice(message, true, r.data.purged + ' dead letter(s) deleted.'); load(); }
        })),
      message,
      el('div', { className: 'table-wrap' }, el('table', {},
        el('thead', {}, el('tr', {}, el('th', {}, all), el('th', {}, 'Id'), el('th', { className: 'num' }, 'Attempts'),
          el('th', {}, 'Last error'), el('th', { className: 'hide-narrow' }, 'When'), el('th', { className: 'hide-narrow' }, 'Body'), el('th', {}, ''))), body)),
      pagerBox));

  function selected() {
    return Array.from(body.querySelectorAll('input[type=checkbox]:checked')).map((box) => box.getAttribute('data-id'));
  }

  async function requeue(what) {
    if (what.ids && !what.ids.length) { notice(message, false, 'Select dead letters first.'); return; }
    const r = await api('POST', '/api/topics/' + enc(topic) + '/dead/requeue', what);
    if (!r.ok) { notice(message, false, r.data.error); return; }
    notice(message, true, r.data.requeued + ' job(s) requeued.');
    load();
  }

  async function load() {
    setParams({ topic });
    clear(body);
    all.checked = false;
    if (!topic) { body.appendChild(el('tr', {}, el('td', { colspan: 7, className: 'muted' }, 'No topics yet.'))); return; }
    const r = await api('GET', '/api/topics/' + enc(topic) + '/dead?offset=' + offset + '&limit=' + limit);
    if (!r.ok) { notice(message, false, r.data.error || 'HTTP ' + r.status); return; }
    for (const job of r.data.jobs) {
      const bodyText = typeof job.body === 'string' ? job.body : JSON.stringify(job.body);
      body.appendChild(el('tr', { 'data-job': job.id },
        el('td', {}, el('input', { type: 'checkbox', 'data-id': job.id })),
        el('td', { className: 'mono' }, el('a', { href: '/jobs?topic=' + enc(topic) + '&id=' + enc(job.id) }, job.id)),
        el('td', { className: 'num' }, String(job.attempts)),
        el('td', { className: 'error' }, job.last_error || ''),
        el('td', { className: 'hide-narrow muted' }, fmtTime(job.last_error_at_ms)),
        el('td', { className: 'mono hide-narrow dead-body' }, bodyText.length > 120 ? bodyText.slice(0, 120) + '…' : bodyText),
        el('td', {}, el('div', { className: 'row' },
          el('button', { type: 'button', className: 'small requeue-one', onclick: () => requeue({ ids: [job.id] }) }, 'Requeue'),
          armedButton('Delete', 'Sure?', async () => {
            const d = await api('DELETE', '/api/topics/' + enc(topic) + '/dead/' + enc(job.id));
            if (!d.ok) notice(message, false, d.data.error); else load();
          }, 'small')))));
    }
    if (!r.data.jobs.length) body.appendChild(el('tr', {}, el('td', { colspan: 7, className: 'muted' }, 'No dead letters. Good.')));
    clear(pagerBox).appendChild(pager(offset, limit, r.data.total, (next) => { offset = next; load(); }));
  }
  await load();
}

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
    el('section', { className: 'panel' }, el('h2', {}, 'Add a shard to the registry'),
      el('p', { className: 'muted' }, 'Registry shards are listed here and kept from callback URLs; jobs are placed on the [redis] shards of the config file.'),
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
        el('td', { className: 'num' }, s.jobs >= 0 ? String(s.jobs) : '—'),
        el('td', { className: 'hide-narrow muted' }, s.source),
        el('td', {}, s.source === 'registry' ? armedButton('Remove', 'Sure?', async () => {
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
    const s = await api('PUT', '/api/alerts', data);
    if (!s.ok) {
      if (errors[s.data.field]) errors[s.data.field].textContent = s.data.error; else formError.textContent = s.data.error;
      return;
    }
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
