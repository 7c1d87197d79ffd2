// dq admin: the dashboard and topics pages (lib.js has the helpers).
'use strict';

// ---------- dashboard ----------

const COUNT_FIELDS = ['delayed', 'ready', 'working', 'retrying', 'dead'];
const COUNT_TITLES = { delayed: 'Delayed', ready: 'Ready', working: 'In flight', retrying: 'Retrying', dead: 'Dead' };

async function pageDashboard(main) {
  const topicsBody = el('tbody', { id: 'dash-topics' });
  const shardsBody = el('tbody', { id: 'dash-shards' });
  const circuitsBody = el('tbody', { id: 'dash-circuits' });
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
        el('p', { className: 'muted' }, el('a', { href: '/shards' }, 'Shard details ›')),
        // The receivers' and endpoints' circuit breakers (GET /api/circuits).
        el('h2', {}, 'Circuits'),
        el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'Receiver'), el('th', {}, 'State'), el('th', { className: 'num' }, 'Failures'))), circuitsBody))));

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
    const circuits = await api('GET', '/api/circuits');
    clear(circuitsBody);
    for (const c of (circuits.ok ? circuits.data.circuits : [])) {
      const paused = c.paused_until_ms > Date.now();
      const shown = paused && c.state === 'closed' ? 'paused' : c.state;
      circuitsBody.appendChild(el('tr', { 'data-circuit': c.receiver, title: c.last_error || '' },
        el('td', { className: 'mono' }, c.receiver),
        el('td', {}, el('span', { className: 'badge ' + (shown === 'closed' ? 'ok' : shown === 'open' ? 'bad' : 'off') }, shown.replace(/_/g, ' '))),
        el('td', { className: 'num', 'data-failures': '' }, String(c.failures))));
    }
    if (!circuitsBody.children.length) circuitsBody.appendChild(el('tr', {}, el('td', { colspan: 3, className: 'muted' }, circuits.ok ? 'No receiver has failed yet.' : 'Circuits cannot be read now.')));
    updated.textContent = 'updated ' + fmtTime(data.now_ms);
  }
  await refresh();
  state.timer = setInterval(() => { refresh().catch(() => {}); }, 3000);
}

// ---------- topics ----------

const TOPIC_FIELDS = [
  { key: 'name', label: 'Name', hint: 'A-Z a-z 0-9 _ . - (at most 64); cannot be changed later' },
  { key: 'mode', label: 'Mode', options: ['push', 'pull'], hint: 'push: due jobs are delivered to the callback URL; pull: no callback, workers reserve the jobs (GET /v1/topics/{t}/reserve) and ack them' },
  { key: 'callback_url', label: 'Callback URL', hint: 'http:// or https://; where due jobs are delivered (empty for a pull topic)' },
  { key: 'method', label: 'Method', options: ['POST', 'GET'], hint: 'POST: JSON body; GET: query parameters' },
  { key: 'callback_format', label: 'Callback format', options: ['json', 'form'], hint: "json: dq's JSON document; form: the body's keys as form fields or query parameters, as the PHP queue sent them" },
  { key: 'success_json', label: 'Success rule', hint: 'empty: any 2xx succeeds; PATH=VALUE (e.g. code=0): a 2xx whose JSON body differs is a failed attempt' },
  { key: 'timeout_ms', label: 'Timeout (ms)', number: true, hint: 'per delivery attempt' },
  { key: 'default_delay_s', label: 'Default delay (s)', number: true, hint: 'when a job names neither delay nor at' },
  { key: 'delivery_window', label: 'Delivery window', hint: 'e.g. Mon-Fri 09:00-18:00 Asia/Shanghai: jobs due outside it wait for the opening (no attempt used), spread at the max rate; no zone: the time zone above, else UTC; empty: any hour' },
  { key: 'tz', label: 'Time zone', hint: 'IANA zone, e.g. Europe/Paris: an add\'s at without an offset (and without its own tz) is read there; empty: the server\'s zone' },
  { key: 'max_attempts', label: 'Max attempts', number: true, hint: '0: the server default; then the job is a dead letter' },
  { key: 'retry_ms', label: 'Retry schedule (ms)', hint: 'e.g. 1000,3000,5000; empty: 1, 3, 5 ... minutes (2n+1)' },
  { key: 'retry_jitter', label: 'Retry jitter (%)', number: true, hint: '0-100: each retry wait is lengthened by up to this share, at random (20 recommended); 0: none' },
  { key: 'max_deferrals', label: 'Max deferrals', number: true, hint: 'a 429/503 with Retry-After waits (at most 1 h) without using an attempt, this many times per job; 0: never' },
  { key: 'dead_on', label: 'Dead on statuses', hint: 'e.g. 400,410,422: such an answer dead-letters the job at once; empty: none' },
  { key: 'priority', label: 'Priority', options: ['1', '2', '3'], number: true, hint: '1 highest, 3 lowest' },
  { key: 'alert_emails', label: 'Alert emails', hint: 'comma-separated; told about dead letters' },
  { key: 'creator', label: 'Creator', hint: 'who owns this topic' },
  { key: 'circuit_failures', label: 'Circuit failures', number: true, hint: 'receiver failures in a row (no answer, 5xx, 429) that stop calls to its host:port' },
  { key: 'circuit_open_ms', label: 'Circuit wait (ms)', number: true, hint: 'wait before the first probe; doubles while probes fail' },
  { key: 'max_in_flight', label: 'Max calls open', number: true, hint: 'calls to the callback open at once, over every consumer and host; 0: no cap' },
  { key: 'max_rate', label: 'Max calls/s', number: true, hint: 'calls to the callback per second, over every consumer and host; 0: no cap' },
  { key: 'max_burst', label: 'Max burst', number: true, hint: 'calls at once above the rate; 0: a tenth of max calls/s (at least 1)' },
  { key: 'dedup_window_s', label: 'Dedup window (s)', number: true, hint: 'how long a job that ran (delivered, or dead) is remembered: an add of the same id and body within it is a retry, answered 200 existing with how the job ended; 0: not remembered' },
  { key: 'max_retry_duration_s', label: 'Max retry duration (s)', number: true, hint: 'a job still not delivered this long after its first attempt is dead-lettered, whatever held it (retries, Retry-After pauses, an open circuit); 0: no limit' },
  { key: 'ttl', label: 'Job ttl (s)', number: true, hint: 'a job not delivered this long after it is due is never delivered (jobs may give their own ttl or expire_at); 0: no limit' },
  { key: 'keep_done_days', label: 'Keep done jobs (days)', number: true, hint: 'a delivered, deleted or expired job is kept this long in compact form, so its final state can be looked up; 0: not kept' },
  { key: 'late_policy', label: 'Late policy', hint: 'deliver (however late), dead_after:S (dead letter, reason late) or drop_after:S: for a job found more than S seconds after it was due' },
  { key: 'on_dependency_dead', label: 'On dependency dead', hint: 'dead or release: a job added with "after" whose dependency dies, expires or is deleted is dead-lettered (its reason naming that job), or goes on as if it was delivered' },
  { key: 'dead_callback', label: 'Dead-letter callback', hint: 'empty: none; else http:// or https:// URL POSTed a signed JSON document (id, body, attempts, last error) when a job dies' },
  { key: 'signing_secret', label: 'Signing secret', hint: 'Standard Webhooks HMAC: "generate", a whsec_... secret, or empty for unsigned callbacks; shown masked, a new one in full once' },
  { key: 'signing_public_key', label: 'Ed25519 key', hint: '"generate" for a new key pair, empty for none; receivers fetch it at GET /v1/signing-keys' },
  { key: 'signing_overlap_s', label: 'Rotation overlap (s)', number: true, fallback: 86400, hint: 'a replaced signing key is still sent this long (0 to 2592000)' },
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
    const circuits = await api('GET', '/api/circuits');
    circuitOf = circuits.ok ? circuits.data : null;
    clear(body);
    for (const t of answer.data.topics) body.appendChild(topicRow(t));
    if (!answer.data.topics.length) body.appendChild(el('tr', {}, el('td', { colspan: 5, className: 'muted' }, 'No topic matches.')));
    clear(pagerBox).appendChild(pager(offset, limit, answer.data.total, (next) => { offset = next; load(); }));
  }

  // The circuit breakers of the topic's receiver and endpoint beside it
  // (GET /api/circuits): the one that holds its calls, else the receiver's.
  let circuitOf = null;
  function circuitBadge(t) {
    if (!circuitOf) return null;
    const found = [circuitOf.receivers[t.name], (circuitOf.endpoints || {})[t.name]]
      .filter((name) => name)
      .map((name) => circuitOf.circuits.find((x) => x.receiver === name))
      .filter((x) => x);
    const c = found.find((x) => x.state !== 'closed') || found[0];
    if (!c) return null;
    const receiver = c.receiver;
    const since = c.since_ms ? ' since ' + new Date(c.since_ms).toLocaleString() : '';
    return el('span', { className: 'badge circuit ' + (c.state === 'closed' ? 'ok' : 'bad'), title: receiver + ': ' + c.state + since + (c.last_error ? '; last error: ' + c.last_error : '') },
      'circuit ' + c.state.replace('_', '-'));
  }

  function topicRow(t) {
    const result = el('div', { className: 'test-result' });
    return el('tr', { 'data-topic': t.name },
      el('td', {}, el('a', { href: '#', className: 'topic-name', onclick: (e) => { e.preventDefault(); showForm(t); } }, t.name)),
      el('td', {}, el('span', { className: 'badge ' + (t.online ? 'ok' : 'off') }, t.online ? 'online' : 'offline'), circuitBadge(t)),
      el('td', { className: 'mono hide-narrow' }, t.mode === 'pull' ? 'pull (workers reserve)' : t.method + ' ' + t.callback_url),
      el('td', { className: 'hide-narrow topic-creator' }, t.creator),
      el('td', {},
        el('div', { className: 'row' },
          el('button', { type: 'button', className: 'small', onclick: async () => {
            const r = await api('PUT', '/api/topics/' + enc(t.name), { online: !t.online, version: t.version });
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
          el('button', { type: 'button', className: 'small show-schedules', onclick: async () => {
            const r = await api('GET', '/api/topics/' + enc(t.name) + '/schedules');
            clear(result);
            if (!r.ok) { result.appendChild(el('span', { className: 'error' }, r.data.error)); return; }
            result.appendChild(schedulesTable(t.name, r.data.schedules));
          } }, 'Schedules'),
          el('a', { href: '/jobs?topic=' + enc(t.name), className: 'small' }, 'Jobs'),
          el('a', { href: '/dead?topic=' + enc(t.name), className: 'small' }, 'Dead letters'),
          armedButton('Delete', 'Click to delete', () => deleteTopic(t.name, false), 'small')),
        result));
  }

  // A topic's schedules with their next five run times (UTC and the
  // browser's clock); dqctl schedule and the HTTP API edit them.
  function schedulesTable(topic, schedules) {
    if (!schedules.length) {
      return el('p', { className: 'muted schedules-none' }, 'No schedule. Add one with dqctl schedule add ' + topic + ' SPEC, or POST /v1/topics/' + topic + '/schedules.');
    }
    return el('table', { className: 'schedules' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Schedule'), el('th', {}, 'Zone'), el('th', {}, 'Catch-up'),
        el('th', {}, 'State'), el('th', {}, 'Next runs'))),
      el('tbody', {}, schedules.map((s) => el('tr', { 'data-schedule': s.spec },
        el('td', { className: 'mono' }, s.spec),
        el('td', {}, s.zone),
        el('td', {}, s.catch_up),
        el('td', {}, el('span', { className: 'badge ' + (s.paused ? 'off' : 'ok') }, s.paused ? 'paused' : 'active')),
        el('td', { className: 'mono next-runs' }, s.next_runs.length
          ? s.next_runs.map((run) => el('div', { title: new Date(run).toString() }, run))
          : '-')))));
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
    const values = topic || { mode: 'push', method: 'POST', callback_format: 'json', success_json: '', timeout_ms: 5000, default_delay_s: 0, tz: '', delivery_window: '', max_attempts: 0, priority: 2, retry_ms: '', alert_emails: '', creator: state.user, callback_url: '', name: '' };
    if (!topic) Object.assign(values, { max_deferrals: 10, dead_on: '', retry_jitter: 0, circuit_failures: 5, circuit_open_ms: 10000, max_in_flight: 0, max_rate: 0, max_burst: 0, dead_callback: '', dedup_window_s: 600, max_retry_duration_s: 604800, ttl: 0, keep_done_days: 0, late_policy: 'deliver', on_dependency_dead: 'dead' });
    const inputs = {};
    const errors = {};
    const formError = el('p', { className: 'error', id: 'topic-form-error' });
    const form = el('form', { className: 'fields', id: 'topic-form', novalidate: true });
    for (const f of TOPIC_FIELDS) {
      let input;
      if (f.options) {
        input = el('select', { id: 'field-' + f.key, name: f.key }, f.options.map((o) => el('option', { value: o, selected: String(values[f.key]) === o }, o)));
      } else {
        const value = values[f.key] === undefined ? (f.fallback === undefined ? '' : f.fallback) : values[f.key];
        input = el('input', { id: 'field-' + f.key, name: f.key, value: String(value), inputmode: f.number ? 'numeric' : undefined });
      }
      if (editing && f.key === 'name') input.disabled = true;
      inputs[f.key] = input;
      errors[f.key] = el('div', { className: 'field-error', 'data-error-for': f.key });
      form.append(el('label', { for: 'field-' + f.key }, f.label), el('div', {}, input, el('div', { className: 'hint' }, f.hint), errors[f.key]));
    }
    const online = el('input', { type: 'checkbox', id: 'field-online', checked: editing ? topic.online : true });
    form.append(el('label', { for: 'field-online' }, 'Online'), el('div', {}, online, el('span', { className: 'hint' }, ' offline topics keep their jobs but deliver none')));
    const breaker = el('input', { type: 'checkbox', id: 'field-circuit_breaker', checked: editing ? topic.circuit_breaker : true });
    form.append(el('label', { for: 'field-circuit_breaker' }, 'Circuit breaker'), el('div', {}, breaker, el('span', { className: 'hint' }, ' stop calling a failing receiver; its jobs wait without using attempts')));
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
      data.circuit_breaker = breaker.checked;
      // The version this form was filled from: an edit made meanwhile elsewhere is refused (409).
      if (editing) data.version = topic.version;
      const r = editing ? await api('PUT', '/api/topics/' + enc(topic.name), data) : await api('POST', '/api/topics', data);
      if (!r.ok) {
        const target = errors[r.data.field];
        if (target) target.textContent = r.data.error; else formError.textContent = r.data.error || 'HTTP ' + r.status;
        return;
      }
      clear(formBox);
      // A new signing secret comes in full in this answer only.
      const secret = String(r.data.signing_secret || '');
      const shown = secret.startsWith('whsec_') && !secret.endsWith('...') ? ' Signing secret (shown this once, copy it now): ' + secret : '';
      notice(message, true, 'Topic ' + r.data.name + (editing ? ' saved.' : ' added.') + shown);
      load();
    });
    clear(formBox).append(el('h2', {}, editing ? 'Edit topic ' + topic.name : 'Add a topic'), form);
    formBox.scrollIntoView({ block: 'nearest' });
  }

  await load();
  if (p.get('new') === '1') showForm(null);
}
