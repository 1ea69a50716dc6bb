// The lock console: reads the JSON API under the page's own path, builds its tables with
// textContent (keys and labels come from clients and are never parsed as HTML), refreshes
// every few seconds, and releases a holder by force after asking for a reason.
(() => {
  'use strict';
  const base = document.body.dataset.base || '';
  const $ = (id) => document.getElementById(id);
  let session = null;
  let pending = null;

  const el = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  };
  const label = (l) => (l ? Object.entries(l).map(([k, v]) => k + '=' + v).join(' ') : '(no label)');
  const secs = (ms) => (ms === null || ms === undefined ? '?' : (ms / 1000).toFixed(1) + ' s');

  async function call(path, options) {
    const answer = await fetch(base + path, Object.assign({ credentials: 'same-origin' }, options || {}));
    const body = await answer.json().catch(() => ({ detail: answer.statusText }));
    if (!answer.ok) throw new Error(body.detail || answer.statusText);
    return body;
  }

  function holderCell(view, key, holder) {
    const box = el('div', null, 'holder');
    box.append(el('div', label(holder.label), 'label'));
    box.append(el('div', holder.kind + ' · token ' + holder.fencing_token + ' · lease left ' + secs(holder.lease_left_ms)));
    box.append(el('code', holder.owner));
    if (session && session.force_release) {
      const button = el('button', 'Release…', 'release');
      button.type = 'button';
      button.dataset.key = key.key;
      button.dataset.primitive = key.primitive;
      button.dataset.owner = holder.owner;
      button.dataset.view = view.id;
      button.addEventListener('click', () => ask(view, key, holder));
      box.append(button);
    }
    return box;
  }

  // One table per view (the client's keys, then each cache's and idempotency store's in
  // flight); the first is `#keys`.
  function table(view, index) {
    const id = index === 0 ? 'keys' : 'keys-' + index;
    let found = $(id);
    if (found) return found;
    const section = el('section');
    section.append(el('h2', view.title));
    found = el('table');
    found.id = id;
    found.dataset.view = view.id;
    const head = found.createTHead().insertRow();
    for (const name of ['Primitive', 'Key', 'Status', 'Holders', 'Waiters (first first)', 'Permits · count']) {
      head.append(el('th', name));
    }
    found.createTBody();
    section.append(found);
    $('views').append(section);
    return found;
  }

  function amount(key) {
    if (key.permits) {
      return key.permits.in_use + ' of ' + (key.permits.size === null ? '?' : key.permits.size) + ' permits';
    }
    if (key.latch) {
      return 'count ' + key.latch.count + ' · expires in ' + secs(key.latch.expires_in_ms);
    }
    return '';
  }

  function render(view, index, keys) {
    const body = table(view, index).tBodies[0];
    body.replaceChildren();
    if (keys.length === 0) {
      const row = body.insertRow();
      const cell = row.insertCell();
      cell.colSpan = 6;
      cell.textContent = index === 0 ? 'Nothing is held or waited on.' : 'Nothing in flight.';
    }
    for (const key of keys) {
      const row = body.insertRow();
      row.dataset.key = key.key;
      row.dataset.primitive = key.primitive;
      row.insertCell().textContent = key.primitive;
      const name = row.insertCell();
      name.className = 'key';
      name.textContent = key.key;
      const status = row.insertCell();
      status.className = key.status;
      status.textContent = key.status;
      const holders = row.insertCell();
      holders.className = 'holders';
      for (const holder of key.holders) holders.append(holderCell(view, key, holder));
      const waiters = row.insertCell();
      waiters.className = 'waiters';
      if (key.waiters === null) {
        waiters.textContent = 'not kept by this store';
      } else if (key.waiters.length === 0) {
        waiters.textContent = 'none';
      } else {
        const list = el('ol');
        for (const waiter of key.waiters) {
          list.append(el('li', label(waiter.label) + ' · waiting ' + secs(waiter.waiting_ms), 'label'));
        }
        waiters.append(list);
      }
      row.insertCell().textContent = amount(key);
    }
  }

  function renderAudit(records) {
    const body = $('audit').tBodies[0];
    body.replaceChildren();
    for (const record of records) {
      const row = body.insertRow();
      row.dataset.key = record.key;
      row.insertCell().textContent = new Date(record.at_ms).toLocaleString();
      const key = row.insertCell();
      key.className = 'key';
      key.textContent = (record.view ? record.view + ' · ' : '') + record.primitive + ' ' + record.key;
      row.insertCell().textContent = record.operator;
      const reason = row.insertCell();
      reason.className = 'reason';
      reason.textContent = record.reason;
      row.insertCell().textContent = record.old_kind + ' ' + label(record.old_label) + ' (' + record.old_owner + ')';
      row.insertCell().textContent = record.old_token + ' → ' + record.new_token;
    }
  }

  async function refresh() {
    if (pending) return;
    try {
      const prefix = encodeURIComponent($('prefix').value);
      const pages = await Promise.all(session.views.map((view) =>
        call('/api/keys?limit=200&view=' + encodeURIComponent(view.id) + '&prefix=' + prefix)));
      const audits = await Promise.all(session.views.map((view, index) =>
        call('/api/audit?limit=20&view=' + encodeURIComponent(view.id)).then((records) =>
          records.map((record) => Object.assign(record, { view: index === 0 ? '' : view.title })))));
      if (pending) return;
      session.views.forEach((view, index) => render(view, index, pages[index].keys));
      renderAudit(audits.flat().sort((a, b) => b.at_ms - a.at_ms).slice(0, 20));
      $('status').textContent = 'updated ' + new Date().toLocaleTimeString();
    } catch (error) {
      $('status').textContent = 'error: ' + error.message;
    }
  }

  function ask(view, key, holder) {
    pending = { view: view.id, key: key.key, primitive: key.primitive, owner: holder.owner };
    $('release-key').textContent = key.primitive + ' ' + key.key;
    $('release-owner').textContent = holder.owner;
    $('reason').value = '';
    $('release-form').hidden = false;
    $('reason').focus();
  }

  function done(text, failed) {
    pending = null;
    $('release-form').hidden = true;
    $('message').textContent = text;
    $('message').className = failed ? 'error' : '';
    refresh();
  }

  $('release-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!pending) return;
    const form = new URLSearchParams(pending);
    form.set('reason', $('reason').value);
    try {
      const record = await call('/api/release', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': session.csrf },
        body: form.toString(),
      });
      done('Released ' + record.key + ' (token ' + record.old_token + ' → ' + record.new_token + ').', false);
    } catch (error) {
      done('Not released: ' + error.message, true);
    }
  });
  $('cancel').addEventListener('click', () => done('', false));
  $('prefix').addEventListener('input', () => refresh());

  (async () => {
    try {
      session = await call('/api/session');
    } catch (error) {
      $('status').textContent = 'error: ' + error.message;
      return;
    }
    $('who').textContent = session.operator + ' · ' + session.backend +
      (session.namespace ? ' · ' + session.namespace : '') +
      (session.force_release ? '' : ' · read-only');
    await refresh();
    setInterval(refresh, session.refresh_ms);
  })();
})();
