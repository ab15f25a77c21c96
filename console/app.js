// Eddy's web console: plain ES modules and the DOM, no framework and no build step (ARCHITECTURE.md "Web console").
// Every call goes to the REST API of the server that serves these files; a 401 asks for a token, kept for the tab.
import { rulePage } from './rule.js';
import { dataPage } from './data.js';
import { act, api, every, fmtBytes, fmtNum, h, page, stateClass, confirmAction } from './ui.js';

const main = document.getElementById('main');

/**
 * A SQL editor: a textarea checked as you type (`POST /eddy/sql/check`); a syntax error is shown at its line and
 * column with a caret under the offending token.
 */
function sqlEditor(initial, rows = 4) {
  const area = h('textarea', { class: 'code', rows, spellcheck: 'false', 'data-role': 'sql' });
  area.value = initial;
  const status = h('div', { class: 'sql-error', 'data-role': 'sql-status' });
  let seq = 0;
  const check = async () => {
    const my = ++seq;
    const sql = area.value;
    if (sql.trim() === '') {
      status.replaceChildren();
      return;
    }
    const r = await api('POST', '/eddy/sql/check', { sql }).catch((e) => ({
      ok: false,
      message: e.message,
      line: 0,
      column: 0,
    }));
    if (my !== seq) return;
    if (r.ok) {
      status.replaceChildren(h('span', { class: 'ok' }, 'syntax ok'));
      return;
    }
    const lines = sql.split('\n');
    const text = lines[Math.max(0, (r.line || 1) - 1)] ?? '';
    status.replaceChildren(
      h('div', { class: 'error' }, `line ${r.line}, column ${r.column}: ${r.message}`),
      h('pre', {}, `${text}\n${' '.repeat(Math.max(0, (r.column || 1) - 1))}^`),
    );
  };
  let timer;
  area.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(check, 250);
  });
  if (initial) void check();
  return {
    el: h('div', {}, area, status),
    get value() {
      return area.value;
    },
    set value(v) {
      area.value = v;
      void check();
    },
  };
}

// ------------------------------------------------------------------------------------------------ streams, tables

async function streamsPage(kind) {
  const plural = `${kind}s`;
  const list = h('tbody');
  const detail = h('div');
  const load = async () => {
    const items = await api('GET', `/${kind}details`);
    list.replaceChildren(
      ...(items.length === 0
        ? [
            h(
              'tr',
              {},
              h(
                'td',
                { colspan: 4, class: 'muted', 'data-role': 'empty' },
                `no ${plural} yet — write a CREATE ${kind.toUpperCase()} statement below`,
              ),
            ),
          ]
        : items.map((s) =>
            h(
              'tr',
              { 'data-name': s.name },
              h('td', {}, h('a', { href: '#', onclick: (e) => (e.preventDefault(), describe(s.name)) }, s.name)),
              h('td', {}, s.type),
              h('td', {}, s.format),
              h(
                'td',
                { class: 'actions' },
                h('button', { onclick: () => edit(s.name), 'data-role': 'edit' }, 'Edit'),
                ' ',
                h('button', { class: 'danger', onclick: () => drop(s.name) }, 'Drop'),
              ),
            ),
          )),
    );
  };
  const describe = async (name) => {
    const d = await act(() => api('GET', `/${plural}/${encodeURIComponent(name)}`));
    if (!d) return;
    const typeName = (t) =>
      t.Type === 7
        ? `array(${typeName(t.ElementType ?? {})})`
        : t.Type === 8
          ? `struct(${(t.Fields ?? []).map((f) => `${f.Name} ${typeName(f.FieldType)}`).join(', ')})`
          : (['', 'bigint', 'float', 'string', 'bytea', 'datetime', 'boolean'][t.Type] ?? `type ${t.Type}`);
    detail.replaceChildren(
      h(
        'div',
        { class: 'panel', 'data-role': 'describe' },
        h('h2', {}, `${kind} ${name}`),
        d.StreamFields.length === 0
          ? h('p', { class: 'muted' }, 'schemaless')
          : h(
              'table',
              {},
              h('tr', {}, h('th', {}, 'Field'), h('th', {}, 'Type')),
              ...d.StreamFields.map((f) => h('tr', {}, h('td', {}, f.Name), h('td', {}, typeName(f.FieldType)))),
            ),
        h('h2', {}, 'Options'),
        h(
          'table',
          {},
          ...Object.entries(d.Options ?? {}).map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, String(v)))),
        ),
      ),
    );
  };
  /** Edit: the stored statement in the editor; saving replaces the definition (`PUT /streams/{name}`). */
  let editing;
  const edit = async (name) => {
    const all = await act(() => api('GET', '/data/export'));
    const sql = all?.[plural]?.[name];
    if (!sql) return;
    editing = name;
    editor.value = sql;
    formTitle.textContent = `Edit ${kind} ${name}`;
    createButton.textContent = `Save ${kind} ${name}`;
    cancelEdit.hidden = false;
    formTitle.scrollIntoView();
  };
  const endEdit = () => {
    editing = undefined;
    formTitle.textContent = `New ${kind}`;
    createButton.textContent = `Create ${kind}`;
    cancelEdit.hidden = true;
  };
  const drop = async (name) => {
    if (!confirmAction(`Drop ${kind} ${name}? Rules reading it stop working.`)) return;
    await act(
      () => api('DELETE', `/${plural}/${encodeURIComponent(name)}`),
      (r) => r,
    );
    detail.replaceChildren();
    await load();
  };
  const example =
    kind === 'stream'
      ? 'CREATE STREAM demo (temperature FLOAT, humidity BIGINT) WITH (DATASOURCE="demo", FORMAT="json")'
      : 'CREATE TABLE lookup1 (id BIGINT, name STRING) WITH (TYPE="memory", DATASOURCE="lookup1", KIND="lookup", KEY="id")';
  const editor = sqlEditor('', 3);
  editor.value = example;
  const create = async () => {
    const r = await act(
      () =>
        editing
          ? api('PUT', `/${plural}/${encodeURIComponent(editing)}`, { sql: editor.value })
          : api('POST', `/${plural}`, { sql: editor.value }),
      (t) => t,
    );
    if (r === undefined) return;
    if (editing) await describe(editing);
    endEdit();
    await load();
  };
  const formTitle = h('h2', {}, `New ${kind}`);
  const createButton = h('button', { class: 'primary', 'data-role': 'create', onclick: create }, `Create ${kind}`);
  const cancelEdit = h('button', { hidden: true, onclick: endEdit }, 'Cancel');
  main.replaceChildren(
    h('h1', {}, kind === 'stream' ? 'Streams' : 'Tables'),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Type'), h('th', {}, 'Format'), h('th', {}, ''))),
        list,
      ),
    ),
    detail,
    h('div', { class: 'panel' }, formTitle, editor.el, h('p', { class: 'toolbar' }, createButton, cancelEdit)),
  );
  await load();
}

// ------------------------------------------------------------------------------------------------ rules

const PAGE = 50;

async function rulesPage() {
  const t0 = performance.now();
  let offset = Number(sessionStorage.getItem('eddy.rules.offset') || 0);
  let filter = '';
  const body = h('tbody');
  const pager = h('span', { class: 'muted' });
  const rows = new Map();
  const rowFor = (r) => {
    let row = rows.get(r.id);
    if (!row) {
      const cells = {
        status: h('span', { class: 'badge' }),
        reason: h('div', { class: 'muted reason-cell', 'data-role': 'rule-reason' }),
        node: h('td', { class: 'cluster-only', 'data-role': 'rule-node' }),
        in: h('td', { class: 'num wide-only' }),
        out: h('td', { class: 'num wide-only' }),
        exc: h('td', { class: 'num wide-only' }),
      };
      const id = encodeURIComponent(r.id);
      const op = (verb, question) => async () => {
        if (question && !confirmAction(question)) return;
        await act(
          () => api('POST', `/rules/${id}/${verb}`),
          (t) => t,
        );
        await refresh();
      };
      const buttons = {
        start: h('button', { onclick: op('start') }, 'Start'),
        stop: h('button', { onclick: op('stop', `Stop rule ${r.id}?`) }, 'Stop'),
        restart: h('button', { onclick: op('restart', `Restart rule ${r.id}? Its state starts again.`) }, 'Restart'),
      };
      const el = h(
        'tr',
        { 'data-rule': r.id },
        h('td', { class: 'id' }, h('a', { href: `#/rules/${id}` }, r.id)),
        h('td', { class: 'status' }, cells.status, cells.reason),
        cells.node,
        cells.in,
        cells.out,
        cells.exc,
        h(
          'td',
          { class: 'actions' },
          buttons.start,
          ' ',
          buttons.stop,
          ' ',
          buttons.restart,
          ' ',
          h(
            'button',
            {
              class: 'danger',
              onclick: async () => {
                if (!confirmAction(`Delete rule ${r.id}? Its definition and state are removed for good.`)) return;
                await act(
                  () => api('DELETE', `/rules/${id}`),
                  (t) => t,
                );
                await refresh();
              },
            },
            'Delete',
          ),
        ),
      );
      row = { el, cells, buttons };
      rows.set(r.id, row);
    }
    const state = r.state ?? (r.status === 'Running' ? 'running' : 'stopped');
    const running = r.status === 'Running';
    row.buttons.start.disabled = running;
    row.buttons.stop.disabled = !running;
    // the state, and the status text (the stop reason) beside it
    row.cells.status.textContent = state;
    row.cells.status.className = `badge ${stateClass(state, r.status)}`;
    row.cells.status.title = [r.status, r.lastException].filter(Boolean).join(' — ');
    row.cells.reason.textContent = running ? r.lastException || '' : r.status.replace(/^Stopped: /, '');
    // in a cluster, the node(s) running the rule (docs/cluster.md §5)
    row.cells.node.textContent = r.node ?? '';
    row.cells.in.textContent = fmtNum(r.recordsIn);
    row.cells.out.textContent = fmtNum(r.recordsOut);
    row.cells.exc.textContent = fmtNum(r.exceptions);
    return row.el;
  };
  let first = true;
  const refresh = async () => {
    const page = await api('GET', `/eddy/rules?offset=${offset}&limit=${PAGE}&filter=${encodeURIComponent(filter)}`);
    if (page.total > 0 && offset >= page.total) {
      offset = Math.max(0, page.total - PAGE);
      return refresh();
    }
    table.classList.toggle(
      'clustered',
      page.rules.some((r) => r.node !== undefined),
    );
    const els = page.rules.map(rowFor);
    const ids = new Set(page.rules.map((r) => r.id));
    for (const id of rows.keys()) if (!ids.has(id)) rows.delete(id);
    const emptyShown = body.querySelector('[data-role=empty]') !== null;
    if (
      (els.length === 0 && !emptyShown) ||
      (els.length > 0 && (els.length !== body.children.length || els.some((el, i) => body.children[i] !== el)))
    ) {
      body.replaceChildren(
        ...(els.length > 0
          ? els
          : [
              h(
                'tr',
                {},
                h(
                  'td',
                  { colspan: 7, class: 'empty', 'data-role': 'empty' },
                  filter
                    ? `No rule id contains “${filter}”.`
                    : h(
                        'span',
                        {},
                        'No rules yet. A rule reads a stream with SQL and writes to sinks: ',
                        h('a', { href: '#/rules/new' }, 'create the first one'),
                        '.',
                      ),
                ),
              ),
            ]),
      );
    }
    pager.textContent =
      page.total === 0 ? '0 rules' : `${offset + 1}–${Math.min(offset + PAGE, page.total)} of ${fmtNum(page.total)}`;
    prev.disabled = offset === 0;
    next.disabled = offset + PAGE >= page.total;
    if (first) {
      first = false;
      // read by the browser test: the time from opening the page to the first rows on screen
      window.eddyRulesFirstRenderMs = performance.now() - t0;
      body.setAttribute('data-rendered', '1');
    }
  };
  const move = (d) => {
    offset = Math.max(0, offset + d);
    sessionStorage.setItem('eddy.rules.offset', String(offset));
    void refresh();
  };
  const prev = h('button', { onclick: () => move(-PAGE) }, '‹ Prev');
  const next = h('button', { onclick: () => move(PAGE) }, 'Next ›');
  let ftimer;
  const search = h('input', {
    placeholder: 'filter by id',
    oninput: () => {
      clearTimeout(ftimer);
      ftimer = setTimeout(() => {
        filter = search.value.trim();
        offset = 0;
        void refresh();
      }, 200);
    },
  });
  const table = h(
    'table',
    { 'data-role': 'rules' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, 'ID'),
        h('th', {}, 'State'),
        h('th', { class: 'cluster-only' }, 'Node'),
        h('th', { class: 'num wide-only' }, 'Records in'),
        h('th', { class: 'num wide-only' }, 'Records out'),
        h('th', { class: 'num wide-only' }, 'Exceptions'),
        h('th', {}, ''),
      ),
    ),
    body,
  );
  main.replaceChildren(
    h('h1', {}, 'Rules'),
    h(
      'div',
      { class: 'toolbar' },
      h('a', { href: '#/rules/new' }, h('button', { class: 'primary' }, 'New rule')),
      search,
      prev,
      next,
      pager,
    ),
    h('div', { class: 'table-wrap' }, table),
  );
  every(1000, refresh);
}

/** The nodes of the cluster (`GET /cluster`, docs/cluster.md §5): alive or not, and the rules each runs. */
async function clusterPage() {
  const body = h('tbody');
  const backend = h('p', { class: 'muted' });
  main.replaceChildren(
    h('h1', {}, 'Cluster'),
    backend,
    h(
      'table',
      { 'data-role': 'cluster' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'Node'),
          h('th', {}, 'REST'),
          h('th', {}, 'Alive'),
          h('th', {}, 'Last heartbeat'),
          h('th', { class: 'num' }, 'Rules'),
          h('th', {}, 'Rules it runs'),
        ),
      ),
      body,
    ),
  );
  every(1000, async () => {
    const view = await api('GET', '/cluster');
    backend.textContent = `Backend: ${view.backend}`;
    body.replaceChildren(
      ...view.nodes.map((n) =>
        h(
          'tr',
          { 'data-node': n.id },
          h('td', {}, n.id),
          h('td', {}, n.rest),
          h('td', {}, h('span', { class: `badge ${n.alive ? 'running' : 'stopped'}` }, n.alive ? 'alive' : 'dead')),
          h('td', {}, new Date(n.lastSeen).toLocaleTimeString()),
          h('td', { class: 'num' }, fmtNum(n.rules.length)),
          h(
            'td',
            {},
            ...n.rules.flatMap((id, i) => [
              ...(i > 0 ? [', '] : []),
              h('a', { href: `#/rules/${encodeURIComponent(id)}` }, id),
            ]),
          ),
        ),
      ),
    );
  });
}

/** The rule editor: new (`id` undefined) or existing; validate, save, and a trial run when the server has one. */
async function ruleEditor(id) {
  const existing = id ? await api('GET', `/rules/${encodeURIComponent(id)}`) : undefined;
  const idInput = h('input', { value: id ?? '', placeholder: 'rule id', disabled: !!id, 'data-role': 'rule-id' });
  const sql = sqlEditor(existing?.sql ?? '', 3);
  const rest = { ...(existing ?? {}) };
  delete rest.id;
  delete rest.sql;
  delete rest.triggered;
  if (!rest.actions) rest.actions = [{ log: {} }];
  const other = h('textarea', { class: 'code', rows: 8, spellcheck: 'false', 'data-role': 'rule-rest' });
  other.value = JSON.stringify(rest, null, 2);
  const result = h('div', { 'data-role': 'rule-result' });
  const definition = () => {
    let extra;
    try {
      extra = JSON.parse(other.value || '{}');
    } catch (e) {
      throw new Error(`actions and options: ${e.message}`);
    }
    return { ...extra, id: idInput.value.trim(), sql: sql.value };
  };
  const show = (ok, text) => result.replaceChildren(h('div', { class: ok ? 'ok' : 'error' }, text));
  const validate = async () => {
    try {
      const r = await api('POST', '/rules/validate', definition());
      show(true, typeof r === 'string' ? r : 'valid');
    } catch (e) {
      show(false, e.message);
    }
  };
  const save = async () => {
    try {
      const def = definition();
      const r = id ? await api('PUT', `/rules/${encodeURIComponent(id)}`, def) : await api('POST', '/rules', def);
      show(true, r);
      if (!id) location.hash = `#/rules/${encodeURIComponent(def.id)}`;
    } catch (e) {
      show(false, e.message);
    }
  };
  return h(
    'div',
    { class: 'panel' },
    h('h2', {}, id ? 'Definition' : 'New rule'),
    h('p', {}, idInput),
    h('label', {}, 'SQL', sql.el),
    h('label', {}, 'Actions and options (JSON)', other),
    h(
      'p',
      { class: 'toolbar' },
      h('button', { onclick: validate, 'data-role': 'validate' }, 'Validate'),
      h('button', { class: 'primary', onclick: save, 'data-role': 'save' }, id ? 'Save' : 'Create rule'),
    ),
    result,
    trialRun(() => sql.value),
  );
}

/** A trial run through `/ruletest` (docs/rest-api.md §16.4): rows arrive over a websocket on the data server. */
function trialRun(getSql) {
  const out = h('pre', { 'data-role': 'trial-output' });
  const note = h('div', { class: 'muted', 'data-role': 'trial-note' });
  let testId;
  let ws;
  const stop = async () => {
    ws?.close();
    ws = undefined;
    if (testId) await api('DELETE', `/ruletest/${testId}`).catch(() => undefined);
    testId = undefined;
  };
  const start = async () => {
    await stop();
    out.textContent = '';
    testId = `console_trial_${Date.now()}`;
    try {
      const r = await api('POST', '/ruletest', { id: testId, sql: getSql() });
      ws = new WebSocket(`ws://${location.hostname}:${r.port}/test/${testId}`);
      ws.onmessage = (m) => {
        out.textContent += `${m.data}\n`;
      };
      ws.onopen = () =>
        api('POST', `/ruletest/${testId}/start`).then(
          () => (note.textContent = 'running: rows appear below as they arrive'),
        );
      page.sockets.push(ws);
    } catch (e) {
      testId = undefined;
      note.textContent =
        e.status === 404 ? 'Trial runs are not available on this server (no /ruletest endpoint).' : e.message;
    }
  };
  page.timers.push({ stop: () => void stop() });
  return h(
    'div',
    {},
    h('h2', {}, 'Trial run'),
    h(
      'p',
      { class: 'toolbar' },
      h('button', { onclick: start, 'data-role': 'trial' }, 'Run'),
      h('button', { onclick: stop }, 'Stop'),
    ),
    note,
    out,
  );
}

// ------------------------------------------------------------------------------------------------ config keys

async function configPage() {
  const kindSel = h('select', {}, ...['sources', 'sinks', 'connections'].map((k) => h('option', { value: k }, k)));
  const typeSel = h('select');
  const keys = h('div');
  const keyName = h('input', { placeholder: 'conf key name', 'data-role': 'confkey-name' });
  const keyProps = h('textarea', { class: 'code', rows: 6, 'data-role': 'confkey-props' });
  keyProps.value = '{}';
  const loadTypes = async () => {
    const list = await api('GET', `/metadata/${kindSel.value}`);
    typeSel.replaceChildren(...list.map((t) => h('option', { value: t.name ?? t }, t.name ?? t)));
    await loadKeys();
  };
  const loadKeys = async () => {
    if (!typeSel.value) return keys.replaceChildren();
    const map = await api('GET', `/metadata/${kindSel.value}/yaml/${encodeURIComponent(typeSel.value)}`).catch(
      () => ({}),
    );
    keys.replaceChildren(
      h(
        'table',
        {},
        h('tr', {}, h('th', {}, 'Key'), h('th', {}, 'Properties'), h('th', {}, '')),
        ...(Object.keys(map ?? {}).length === 0
          ? [
              h(
                'tr',
                {},
                h(
                  'td',
                  { colspan: 3, class: 'empty', 'data-role': 'empty' },
                  `No ${typeSel.value} keys yet: add one below, then name it in CONF_KEY (streams) or resourceId (actions).`,
                ),
              ),
            ]
          : []),
        ...Object.entries(map ?? {}).map(([k, v]) =>
          h(
            'tr',
            {},
            h('td', {}, k),
            h('td', {}, h('code', {}, JSON.stringify(v))),
            h(
              'td',
              {},
              h(
                'button',
                { onclick: () => ((keyName.value = k), (keyProps.value = JSON.stringify(v, null, 2))) },
                'Edit',
              ),
              ' ',
              h(
                'button',
                {
                  class: 'danger',
                  onclick: () =>
                    confirmAction(
                      `Delete the ${typeSel.value} key ${k}? Streams and actions naming it lose its settings.`,
                    )
                      ? act(
                          () =>
                            api(
                              'DELETE',
                              `/metadata/${kindSel.value}/${encodeURIComponent(typeSel.value)}/confKeys/${encodeURIComponent(k)}`,
                            ),
                          'deleted',
                        ).then(loadKeys)
                      : undefined,
                },
                'Delete',
              ),
            ),
          ),
        ),
      ),
    );
  };
  const save = () =>
    act(
      () =>
        api(
          'PUT',
          `/metadata/${kindSel.value}/${encodeURIComponent(typeSel.value)}/confKeys/${encodeURIComponent(keyName.value.trim())}`,
          keyProps.value,
        ),
      'saved',
    ).then(loadKeys);
  kindSel.addEventListener('change', loadTypes);
  typeSel.addEventListener('change', loadKeys);
  main.replaceChildren(
    h('h1', {}, 'Config keys'),
    h('div', { class: 'toolbar' }, kindSel, typeSel),
    keys,
    h(
      'div',
      { class: 'panel' },
      h('h2', {}, 'Add or change a key'),
      h('p', {}, keyName),
      keyProps,
      h('p', {}, h('button', { class: 'primary', onclick: save, 'data-role': 'confkey-save' }, 'Save key')),
    ),
  );
  await loadTypes();
}

// ------------------------------------------------------------------------------------------------ import/export

// ------------------------------------------------------------------------------------------------ server

async function serverPage() {
  const box = h('div', { 'data-role': 'server' });
  const spark = h('div');
  const history = [];
  main.replaceChildren(h('h1', {}, 'Server'), box, h('h2', {}, 'CPU, last minute'), spark);
  every(1000, async () => {
    const s = await api('GET', '/eddy/server');
    history.push(s.cpuPercent);
    if (history.length > 60) history.shift();
    const metric = (label, value) =>
      h('div', { class: 'metric' }, h('span', { class: 'muted' }, label), h('b', {}, value));
    box.replaceChildren(
      metric('CPU (one core = 100 %)', `${s.cpuPercent.toFixed(1)} %`),
      metric('Memory (RSS)', fmtBytes(s.memory.rss)),
      metric('Heap used', `${fmtBytes(s.memory.heapUsed)} of ${fmtBytes(s.memory.heapTotal)}`),
      metric('System memory free', `${fmtBytes(s.memory.systemFree)} of ${fmtBytes(s.memory.systemTotal)}`),
      metric('Load average', s.loadAverage.map((l) => l.toFixed(2)).join(' ')),
      metric('Rules', fmtNum(s.rules)),
      metric('Up', `${s.upTimeSeconds} s`),
      metric('Version', `${s.version} (Node ${s.node})`),
    );
    const max = Math.max(100, ...history);
    const pts = history.map((v, i) => `${i * 10},${60 - (v / max) * 58}`).join(' ');
    spark.innerHTML = `<svg width="600" height="62" style="border:1px solid #d8dde5"><polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="${pts}"/></svg>`;
  });
}

// ------------------------------------------------------------------------------------------------ routing

async function route() {
  for (const t of page.timers.splice(0)) t.stop();
  for (const s of page.sockets.splice(0)) s.close();
  const hash = location.hash || '#/rules';
  for (const a of document.querySelectorAll('nav a'))
    a.classList.toggle('active', hash.startsWith(a.getAttribute('href')));
  const parts = hash.slice(2).split('/').map(decodeURIComponent);
  try {
    if (parts[0] === 'streams') await streamsPage('stream');
    else if (parts[0] === 'tables') await streamsPage('table');
    else if (parts[0] === 'rules' && parts[1] === 'new')
      main.replaceChildren(h('h1', {}, h('a', { href: '#/rules' }, 'Rules'), ' / new'), await ruleEditor(undefined));
    else if (parts[0] === 'rules' && parts[1]) await rulePage(main, parts[1], await ruleEditor(parts[1]));
    else if (parts[0] === 'config') await configPage();
    else if (parts[0] === 'data') await dataPage(main);
    else if (parts[0] === 'server') await serverPage();
    else if (parts[0] === 'cluster') await clusterPage();
    else await rulesPage();
  } catch (e) {
    main.replaceChildren(h('p', { class: 'error' }, e.message));
  }
}

window.addEventListener('hashchange', route);
// the Cluster page is offered by servers in cluster mode only
void api('GET', '/eddy/server')
  .then((s) => {
    if (s.clusterNode !== undefined) document.querySelector('nav a[data-cluster]')?.removeAttribute('hidden');
  })
  .catch(() => undefined);
void api('GET', '/')
  .then((info) => (document.getElementById('server-line').textContent = `${info.version} · ${info.os}/${info.arch}`))
  .catch(() => undefined);
void route();
