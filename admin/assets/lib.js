// dq admin: the helpers every page uses (pages_topics.js, pages_jobs.js and
// app.js draw the pages, from the JSON API under /api/).
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
  const kind = { delayed: 'off', ready: 'ok', working: 'ok', retrying: 'warn', waiting: 'off', dead: 'bad', done: 'ok', expired: 'warn', deleted: 'off' }[name] || 'off';
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
