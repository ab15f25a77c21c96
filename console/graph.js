// The rule topology as an SVG graph: nodes in columns by their distance from the sources, edges as curves, and each
// node's live records in/out from the rule's status (`<node>_0_records_in_total`); a node with exceptions or a lost
// connection is marked, its last exception and connection in its tooltip.

const NS = 'http://www.w3.org/2000/svg';
const W = 190;
const H = 46;
const GX = 60;
const GY = 18;

function svg(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function layout(topo) {
  const edges = topo.edges ?? {};
  const names = new Set(topo.sources ?? []);
  for (const [from, tos] of Object.entries(edges)) {
    names.add(from);
    for (const t of tos) names.add(t);
  }
  const depth = new Map([...names].map((n) => [n, 0]));
  // longest path from a source; a topology is a DAG, bounded by the node count
  for (let i = 0; i < names.size; i++) {
    for (const [from, tos] of Object.entries(edges))
      for (const t of tos) depth.set(t, Math.max(depth.get(t), depth.get(from) + 1));
  }
  const cols = [];
  for (const n of names) (cols[depth.get(n)] ??= []).push(n);
  const pos = new Map();
  cols.forEach((col, x) => col.forEach((n, y) => pos.set(n, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
  const width = 20 + cols.length * (W + GX) - GX;
  const height = 20 + Math.max(1, ...cols.map((c) => c.length)) * (H + GY) - GY;
  return { pos, edges, width, height };
}

const cache = new WeakMap();

/** Draws (first call) or updates (later calls) the graph of `topo` in `container` with the metrics of `status`. */
export function drawTopology(container, topo, status) {
  let state = cache.get(container);
  if (!state || state.topo !== topo) {
    const { pos, edges, width, height } = layout(topo);
    const root = svg('svg', { class: 'topo', width, height, viewBox: `0 0 ${width} ${height}` });
    const defs = svg('defs', {});
    const marker = svg('marker', {
      id: 'arrow',
      viewBox: '0 0 10 10',
      refX: 10,
      refY: 5,
      markerWidth: 6,
      markerHeight: 6,
      orient: 'auto',
    });
    marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#8aa4d6', stroke: 'none' }));
    defs.append(marker);
    root.append(defs);
    for (const [from, tos] of Object.entries(edges)) {
      for (const t of tos) {
        const a = pos.get(from);
        const b = pos.get(t);
        const x1 = a.x + W;
        const y1 = a.y + H / 2;
        const x2 = b.x;
        const y2 = b.y + H / 2;
        root.append(svg('path', { d: `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}` }));
      }
    }
    const labels = new Map();
    const groups = new Map();
    for (const [name, p] of pos) {
      const g = svg('g', { 'data-node': name });
      const tip = svg('title', {}, name);
      g.append(tip);
      groups.set(name, { g, tip });
      g.append(svg('rect', { x: p.x, y: p.y, width: W, height: H, rx: 5 }));
      g.append(svg('text', { x: p.x + 8, y: p.y + 18 }, name.length > 28 ? `${name.slice(0, 27)}…` : name));
      const metrics = svg('text', { x: p.x + 8, y: p.y + 36, fill: '#6b7585', 'data-role': 'metrics' }, '');
      g.append(metrics);
      labels.set(name, metrics);
      root.append(g);
    }
    container.replaceChildren(root);
    state = { topo, labels, groups };
    cache.set(container, state);
  }
  for (const [name, el] of state.labels) {
    const inN = status[`${name}_0_records_in_total`];
    const outN = status[`${name}_0_records_out_total`];
    const exc = Number(status[`${name}_0_exceptions_total`] ?? 0);
    const conn = status[`${name}_0_connection`] ?? '';
    el.textContent =
      inN === undefined
        ? 'stopped'
        : `in ${Number(inN).toLocaleString('en-US')} · out ${Number(outN ?? 0).toLocaleString('en-US')}${exc > 0 ? ` · ⚠ ${exc}` : ''}`;
    const { g, tip } = state.groups.get(name);
    g.classList.toggle('has-error', exc > 0);
    g.classList.toggle('disconnected', conn.startsWith('disconnected'));
    const last = status[`${name}_0_last_exception`];
    tip.textContent = [name, conn && `connection: ${conn}`, exc > 0 && `${exc} exceptions, last: ${last}`]
      .filter(Boolean)
      .join('\n');
  }
}
