// One rule's page: its state and why (the stop reason, the degraded node, the last error), buttons that fit the state,
// the topology with each node's exceptions and connection, a live tail of what the rule reads and writes, and its
// traces (docs/runtime.md §1.5.1, §1.11).
import { drawTopology } from './graph.js';
import { act, api, confirmAction, every, h, page, stateClass } from './ui.js';

const fmtTime = (ms) => (ms > 0 ? new Date(ms).toLocaleString() : '');
const short = (v) => {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text === undefined ? '' : text.length > 300 ? `${text.slice(0, 300)}…` : text;
};

/** Spans of a trace in the order the record went: the tree flattened depth first. */
function spansOf(root) {
  const out = [];
  const walk = (s) => {
    out.push(s);
    for (const c of s.ChildSpan ?? []) walk(c);
  };
  walk(root);
  return out;
}

/** The table of a trace's spans: node, what it received, what it emitted, its error, its time. */
function traceTable(root) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { 'data-role': 'trace-spans' },
      h('tr', {}, h('th', {}, 'Node'), h('th', {}, 'Input'), h('th', {}, 'Output'), h('th', { class: 'num' }, 'ms')),
      ...spansOf(root).map((s) =>
        h(
          'tr',
          { 'data-span': s.name },
          h('td', {}, s.name),
          h('td', { class: 'value' }, h('code', {}, short(s.attribute?.input))),
          h(
            'td',
            { class: 'value' },
            s.attribute?.error
              ? h('span', { class: 'error' }, s.attribute.error)
              : h('code', {}, (s.attribute?.output ?? []).map(short).join('\n') || '—'),
          ),
          h('td', { class: 'num' }, String(Math.max(0, s.endTime - s.startTime))),
        ),
      ),
    ),
  );
}

/**
 * The live tail and the traces: while the tail runs the rule is traced (`always`), and the input of each record (what
 * its source received) and the output (what reached a sink) are listed as they come; tracing stops with the tail.
 */
function tailAndTraces(enc) {
  const input = h('pre', { class: 'tail', 'data-role': 'tail-input' });
  const output = h('pre', { class: 'tail', 'data-role': 'tail-output' });
  const note = h('div', { class: 'muted', 'data-role': 'tail-note' }, 'The tail traces the rule while it runs.');
  const list = h('ul', { class: 'traces', 'data-role': 'traces' });
  const shown = h('div', { 'data-role': 'trace-shown' });
  const seen = new Set();
  let tailing = false;
  const append = (pre, line) => {
    const lines = pre.textContent === '' ? [] : pre.textContent.split('\n');
    lines.push(line);
    pre.textContent = lines.slice(-50).join('\n');
  };
  const open = async (traceId) => {
    const root = await act(() => api('GET', `/trace/${encodeURIComponent(traceId)}`));
    if (root) shown.replaceChildren(h('h3', {}, `Trace ${traceId}`), traceTable(root));
  };
  const poll = async () => {
    const ids = await api('GET', `/trace/rule/${enc}`);
    list.replaceChildren(
      ...(ids.length === 0
        ? [h('li', { class: 'muted' }, 'No traces yet: start the tail, or trace the rule through the API.')]
        : ids
            .slice(0, 20)
            .map((t) => h('li', {}, h('a', { href: '#', onclick: (e) => (e.preventDefault(), void open(t)) }, t)))),
    );
    if (!tailing) return;
    for (const t of [...ids].reverse()) {
      if (seen.has(t)) continue;
      seen.add(t);
      const root = await api('GET', `/trace/${encodeURIComponent(t)}`).catch(() => undefined);
      if (!root) continue;
      append(input, short(root.attribute?.input));
      for (const s of spansOf(root)) if (s.name.startsWith('sink_')) append(output, short(s.attribute?.input));
    }
  };
  const toggle = h('button', { 'data-role': 'tail' }, 'Start live tail');
  const stop = async () => {
    tailing = false;
    toggle.textContent = 'Start live tail';
    await api('POST', `/rules/${enc}/trace/stop`).catch(() => undefined);
  };
  toggle.addEventListener('click', async () => {
    if (tailing) return stop();
    // what is already traced is not news
    for (const t of await api('GET', `/trace/rule/${enc}`)) seen.add(t);
    const ok = await act(() => api('POST', `/rules/${enc}/trace/start`, { strategy: 'always' }));
    if (ok === undefined) return;
    tailing = true;
    toggle.textContent = 'Stop live tail';
  });
  page.timers.push({ stop: () => tailing && void stop() });
  every(1000, poll);
  return h(
    'div',
    { class: 'panel' },
    h('h2', {}, 'Live tail'),
    h('p', { class: 'toolbar' }, toggle),
    note,
    h(
      'div',
      { class: 'columns' },
      h('div', {}, h('h3', {}, 'Input'), input),
      h('div', {}, h('h3', {}, 'Output'), output),
    ),
    h('h2', {}, 'Traces'),
    list,
    shown,
  );
}

/** Why the rule is in its state: the stop reason, the degraded node, the last error and when. */
function reasonOf(st) {
  const parts = [];
  if (st.status !== 'running' && st.message) parts.push(h('div', { 'data-role': 'stop-reason' }, st.message));
  if (st.stateReason && st.state === 'degraded')
    parts.push(h('div', { class: 'warn', 'data-role': 'state-reason' }, st.stateReason));
  if (st.lastError)
    parts.push(
      h(
        'div',
        { class: 'error', 'data-role': 'last-error' },
        `Last error${st.lastErrorTime ? ` (${fmtTime(st.lastErrorTime)})` : ''}: ${st.lastError}`,
      ),
    );
  return parts;
}

/** Nodes with exceptions or a connection that is not up, from the status object. */
function nodeProblems(st, topo) {
  const names = new Set([...(topo.sources ?? []), ...Object.keys(topo.edges ?? {})]);
  for (const tos of Object.values(topo.edges ?? {})) for (const t of tos) names.add(t);
  const rows = [];
  for (const n of names) {
    const exc = Number(st[`${n}_0_exceptions_total`] ?? 0);
    const conn = st[`${n}_0_connection`];
    if (exc === 0 && (!conn || conn === 'connected')) continue;
    rows.push(
      h(
        'tr',
        { 'data-problem': n },
        h('td', {}, n),
        h('td', { class: 'num' }, String(exc)),
        h('td', { class: 'value' }, st[`${n}_0_last_exception`] || ''),
        h('td', {}, conn ?? ''),
      ),
    );
  }
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No node has exceptions.');
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { 'data-role': 'node-problems' },
      h(
        'tr',
        {},
        h('th', {}, 'Node'),
        h('th', { class: 'num' }, 'Exceptions'),
        h('th', {}, 'Last exception'),
        h('th', {}, 'Connection'),
      ),
      ...rows,
    ),
  );
}

export async function rulePage(main, id, editor) {
  const enc = encodeURIComponent(id);
  const status = h('span', { class: 'badge', 'data-role': 'rule-status' });
  const reason = h('div', { class: 'reason', 'data-role': 'rule-reason' });
  const graph = h('div', { 'data-role': 'topology', class: 'graph' });
  const problems = h('div');
  let st = {};
  let topo;
  const refresh = async () => {
    topo = await api('GET', `/rules/${enc}/topo`).catch(() => topo);
    st = await api('GET', `/rules/${enc}/status`);
    const state = st.state ?? (st.status === 'running' ? 'running' : 'stopped');
    status.textContent = state;
    status.className = `badge ${stateClass(state, st.status)}`;
    reason.replaceChildren(...reasonOf(st));
    const running = st.status === 'running';
    start.disabled = running;
    stop.disabled = !running;
    if (topo) {
      drawTopology(graph, topo, st);
      problems.replaceChildren(nodeProblems(st, topo));
    }
  };
  const op = (verb, question) => async () => {
    if (question && !confirmAction(question)) return;
    await act(
      () => api('POST', `/rules/${enc}/${verb}`),
      (t) => t,
    );
    await refresh();
  };
  const start = h('button', { onclick: op('start'), 'data-role': 'start' }, 'Start');
  const stop = h(
    'button',
    { onclick: op('stop', `Stop rule ${id}? It stops reading and writing until started again.`), 'data-role': 'stop' },
    'Stop',
  );
  const restart = h(
    'button',
    { onclick: op('restart', `Restart rule ${id}? Its window and state start again.`), 'data-role': 'restart' },
    'Restart',
  );
  main.replaceChildren(
    h('h1', {}, h('a', { href: '#/rules' }, 'Rules'), ' / ', id, ' ', status),
    reason,
    h('div', { class: 'toolbar' }, start, stop, restart),
    h('div', { class: 'panel' }, h('h2', {}, 'Topology'), graph, problems),
    tailAndTraces(enc),
    editor,
  );
  every(1000, refresh);
}
