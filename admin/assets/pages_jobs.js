// dq admin: the jobs and dead-letter pages (lib.js has the helpers).
'use strict';

// ---------- jobs ----------

// A gone job's final state (its topic keeps history: keep_done_days):
// done, dead, expired or deleted, when, and what its receiver answered.
function endedJobDetails(job) {
  const rows = [
    ['Topic', job.topic], ['Id', job.id], ['State', stateBadge(job.state)], ['Attempts', String(job.attempts)],
    ['Ended', fmtTime(job.ended_at_ms) + ' (' + fmtAgo(job.ended_at_ms) + ')'], ['Was due', fmtTime(job.due_at_ms)],
    ...(job.last_status ? [['Answer', 'HTTP ' + job.last_status + ' from ' + job.delivered_by + ': ' + job.answer]] : []),
    ...(job.reason ? [['Reason', job.reason]] : []),
  ];
  return el('dl', { className: 'details', id: 'job-details' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function jobDetails(job) {
  if (job.ended_at_ms !== undefined) return endedJobDetails(job);
  const rows = [
    ['Topic', job.topic], ['Id', job.id], ['State', stateBadge(job.state)], ['Attempts', String(job.attempts)],
    ['Due', fmtTime(job.due_at_ms) + ' (' + fmtAgo(job.due_at_ms) + ')'], ['Created', fmtTime(job.created_at_ms)],
    ['Last error', job.last_error ? job.last_error + ' (' + fmtTime(job.last_error_at_ms) + ')' : '—'],
    // Why a job waits (the topic offline or out of its delivery window, a circuit open, a
    // Retry-After pause, its caps).
    ...(job.waiting ? [['Waiting', job.waiting.reason.replace(/_/g, ' ') + (job.waiting.since_ms ? ' since ' + fmtTime(job.waiting.since_ms) : '') + ': ' + job.waiting.detail]] : []),
    ['Body', el('pre', { className: 'mono', id: 'job-body' }, typeof job.body === 'string' ? job.body : JSON.stringify(job.body, null, 2))],
  ];
  return el('dl', { className: 'details', id: 'job-details' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

// "Run now" for a delayed or retrying job: due at once, attempts kept
// (POST .../run); nothing for the other states.
function runNowButton(topic, job, message, className) {
  if (job.state !== 'delayed' && job.state !== 'retrying') return '';
  return el('button', { className: ((className || '') + ' run-now').trim(), type: 'button', onclick: async () => {
    const d = await api('POST', '/api/topics/' + enc(topic) + '/jobs/' + enc(job.id) + '/run');
    if (!d.ok) notice(message, false, d.data.error || 'HTTP ' + d.status);
    else notice(message, true, 'Job ' + job.id + (d.data.moved ? ' is due now.' : ' was due already.'));
  } }, 'Run now');
}

async function pageJobs(main) {
  const p = params();
  const names = await topicNames();
  let topic = p.get('topic') || names[0] || '';
  let listState = p.get('state') || 'delayed';
  let idPrefix = p.get('id_prefix') || '';
  let counts = null; // the topic's jobs per state ({dq}:counts), shown on the tabs
  let offset = 0;
  const limit = 25;
  const body = el('tbody', { id: 'jobs-body' });
  const pagerBox = el('div');
  const listMessage = el('div', { id: 'jobs-message' });
  const tabs = el('div', { className: 'tabs', id: 'state-tabs' });
  // A search by id prefix: the list shows only matching ids, its total the matches found.
  const prefixInput = el('input', { id: 'jobs-id-prefix', placeholder: 'id starts with', value: idPrefix });
  const searchForm = el('form', { className: 'row', id: 'jobs-search', onsubmit: (e) => {
    e.preventDefault(); idPrefix = prefixInput.value; offset = 0; load();
  } }, prefixInput, el('button', { type: 'submit', className: 'small', id: 'jobs-search-button' }, 'Search'));
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
      searchForm,
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
    for (const s of ['delayed', 'ready', 'working', 'retrying', 'waiting']) {
      const label = (s === 'working' ? 'in flight' : s) + (counts ? ' (' + counts[s] + ')' : '');
      tabs.appendChild(el('button', { type: 'button', className: 'small' + (s === listState ? ' active' : ''), 'data-state': s,
        'data-count': counts ? String(counts[s]) : '', onclick: () => { listState = s; offset = 0; load(); } }, label));
    }
  }

  async function load() {
    drawTabs();
    setParams({ topic, state: listState, id_prefix: idPrefix });
    clear(body);
    if (!topic) { body.appendChild(el('tr', {}, el('td', { colspan: 7, className: 'muted' }, 'No topics yet.'))); return; }
    const [r, stats] = await Promise.all([
      api('GET', '/api/topics/' + enc(topic) + '/jobs?state=' + listState + '&offset=' + offset + '&limit=' + limit +
        (idPrefix ? '&id_prefix=' + enc(idPrefix) : '')),
      api('GET', '/api/topics/' + enc(topic) + '/stats')]);
    counts = stats.ok && stats.data.now ? stats.data.now : null;
    drawTabs();
    if (!r.ok) { notice(listMessage, false, r.data.error || 'HTTP ' + r.status); return; }
    clear(listMessage);
    if (idPrefix) notice(listMessage, true, r.data.total + ' ' + listState + ' job(s) whose id starts with "' + idPrefix + '"' +
      (r.data.truncated ? ' found before the search stopped (more may exist)' : '') + '.');
    if (r.data.unreachable_shards && r.data.unreachable_shards.length) notice(listMessage, false, 'Not listed: shards ' + r.data.unreachable_shards.join(', ') + ' cannot be reached.');
    for (const job of r.data.jobs) {
      body.appendChild(el('tr', { 'data-job': job.id },
        el('td', { className: 'mono' }, el('a', { href: '#', onclick: (e) => { e.preventDefault(); lookupTopic.value = topic; lookupId.value = job.id; lookup(); } }, job.id)),
        el('td', {}, stateBadge(job.state)),
        el('td', { className: 'num' }, String(job.attempts)),
        el('td', {}, fmtTime(job.due_at_ms || job.due_ms)),
        job.after ? el('td', { className: 'hide-narrow muted' }, 'waits for ' + job.after.map((a) => a.topic + '/' + a.id).join(', '))
          : el('td', { className: 'hide-narrow error' }, job.last_error || ''),
        el('td', { className: 'mono hide-narrow' }, job.shard || ''),
        el('td', {}, runNowButton(topic, job, listMessage, 'small'), armedButton('Delete', 'Sure?', async () => {
          const d = await api('DELETE', '/api/topics/' + enc(topic) + '/jobs/' + enc(job.id));
          if (!d.ok) notice(listMessage, false, d.data.error); else load();
        }, 'small'))));
    }
    if (!r.data.jobs.length) body.appendChild(el('tr', {}, el('td', { colspan: 7, className: 'muted' }, 'No ' + listState + ' jobs' + (idPrefix ? ' whose id starts with "' + idPrefix + '".' : '.'))));
    clear(pagerBox).appendChild(pager(offset, limit, r.data.total, (next) => { offset = next; load(); }));
  }

  async function lookup() {
    const id = lookupId.value;
    if (!lookupTopic.value || !id) return;
    setParams({ id });
    const r = await api('GET', '/api/topics/' + enc(lookupTopic.value) + '/jobs/' + enc(id));
    clear(lookupResult);
    if (!r.ok) { notice(lookupResult, false, r.data.error || 'HTTP ' + r.status); return; }
    if (r.data.ended_at_ms !== undefined) { lookupResult.append(jobDetails(r.data)); return; }  // gone: nothing to act on
    lookupResult.append(jobDetails(r.data), el('div', { className: 'row' },
      runNowButton(r.data.topic, r.data, lookupResult),
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
