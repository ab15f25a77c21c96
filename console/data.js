// Import and export of bundles (docs/rest-api.md §7). An import is partial by default (it adds and replaces, removes
// nothing); a full import first lists what it would remove and waits for a confirmation; the items an import could
// not apply are listed one per line.
import { act, api, h, toast } from './ui.js';

const SECTIONS = ['streams', 'tables', 'rules'];

/** What a full import of `bundle` removes: the streams, tables and rules here that the bundle does not hold. */
async function removals(bundle) {
  const out = [];
  const [streams, tables, rules] = await Promise.all([
    api('GET', '/streams'),
    api('GET', '/tables'),
    api('GET', '/rules'),
  ]);
  const here = { streams, tables, rules: rules.map((r) => r.id) };
  for (const sec of SECTIONS) {
    const kept = new Set(Object.keys(bundle[sec] ?? {}));
    for (const name of here[sec]) if (!kept.has(name)) out.push([sec, name]);
  }
  return out;
}

/** `[section, item, message]` of an import's status document (`{ConfigResponse: {rules: {r1: "…"}}}`). */
function failuresIn(doc) {
  const status = doc?.ConfigResponse ?? doc ?? {};
  return Object.entries(status).flatMap(([sec, items]) =>
    items && typeof items === 'object' ? Object.entries(items).map(([n, m]) => [sec, n, String(m)]) : [],
  );
}

/** The status document inside a failed import's message (`…: {"streams":{…},…}`), if there is one. */
function documentIn(message) {
  const at = message.indexOf('{');
  if (at < 0) return undefined;
  try {
    return JSON.parse(message.slice(at));
  } catch {
    return undefined;
  }
}

function failureList(rows) {
  return h(
    'ul',
    { class: 'failures', 'data-role': 'import-failures' },
    ...rows.map(([sec, name, msg]) => h('li', {}, h('b', {}, `${sec} ${name}`), ': ', msg)),
  );
}

export async function dataPage(main) {
  const file = h('input', { type: 'file', accept: '.json,application/json', 'data-role': 'import-file' });
  const partial = h('input', { type: 'checkbox', checked: true, 'data-role': 'import-partial' });
  const bar = h('progress', { max: 1, value: 0, 'data-role': 'import-progress' });
  const note = h('div', { 'data-role': 'import-result' });
  const confirmBox = h('div', { 'data-role': 'import-confirm' });
  const link = h('span');
  const run = async (content) => {
    confirmBox.replaceChildren();
    note.textContent = 'uploading…';
    try {
      const { id } = await api('POST', `/async/data/import${partial.checked ? '?partial=1' : ''}`, { content });
      for (;;) {
        const p = await api('GET', `/async/task/${encodeURIComponent(id)}/progress`);
        if (p.total > 0) {
          bar.max = p.total;
          bar.value = p.done;
          note.textContent = `${p.done} of ${p.total} items`;
        }
        if (p.status !== 'register' && p.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 200));
      }
      const rec = await api('GET', `/async/task/${encodeURIComponent(id)}`);
      if (rec.status !== 'finish') {
        const failed = failuresIn(documentIn(rec.message));
        note.replaceChildren(
          h('div', { class: 'error' }, `The import was not applied (${rec.status}).`),
          failed.length > 0 ? failureList(failed) : h('pre', {}, rec.message),
        );
        return;
      }
      bar.value = bar.max;
      let doc;
      try {
        doc = JSON.parse(rec.message);
      } catch {
        doc = undefined;
      }
      const failed = failuresIn(doc);
      note.replaceChildren(
        h('span', { class: 'ok' }, failed.length === 0 ? 'imported' : `imported, except ${failed.length} items:`),
        ...(failed.length > 0 ? [failureList(failed)] : []),
      );
    } catch (e) {
      const failed = failuresIn(documentIn(e.message));
      note.replaceChildren(
        h('div', { class: 'error' }, failed.length > 0 ? 'The import was not applied:' : e.message),
        ...(failed.length > 0 ? [failureList(failed)] : []),
      );
    }
  };
  const doImport = async () => {
    const f = file.files?.[0];
    if (!f) return toast('choose a bundle file first', true);
    const content = await f.text();
    if (partial.checked) return run(content);
    let bundle;
    try {
      bundle = JSON.parse(content);
    } catch (e) {
      return toast(`the file is not JSON: ${e.message}`, true);
    }
    const gone = await act(() => removals(bundle));
    if (gone === undefined) return;
    confirmBox.replaceChildren(
      h(
        'div',
        { class: 'panel warn' },
        h('h3', {}, 'A full import replaces everything'),
        gone.length === 0
          ? h('p', {}, 'Nothing here is missing from the bundle: no stream, table or rule will be removed.')
          : h(
              'div',
              {},
              h('p', {}, `These ${gone.length} items are not in the bundle and will be removed:`),
              h(
                'ul',
                { 'data-role': 'import-removals' },
                ...gone.map(([sec, name]) => h('li', {}, `${sec.slice(0, -1)} ${name}`)),
              ),
            ),
        h(
          'p',
          { class: 'toolbar' },
          h(
            'button',
            { class: 'danger', 'data-role': 'import-confirm-yes', onclick: () => run(content) },
            'Replace everything',
          ),
          h('button', { 'data-role': 'import-confirm-no', onclick: () => confirmBox.replaceChildren() }, 'Cancel'),
        ),
      ),
    );
  };
  const doExport = async () => {
    const data = await act(() => api('GET', '/data/export'));
    if (data === undefined) return;
    const url = URL.createObjectURL(
      new Blob([typeof data === 'string' ? data : JSON.stringify(data)], { type: 'application/json' }),
    );
    link.replaceChildren(
      h('a', { href: url, download: 'eddy-export.json', 'data-role': 'export-link' }, 'eddy-export.json'),
    );
  };
  main.replaceChildren(
    h('h1', {}, 'Import / export'),
    h(
      'div',
      { class: 'panel' },
      h('h2', {}, 'Import a bundle'),
      h(
        'p',
        {},
        file,
        ' ',
        h('label', {}, partial, ' partial: add and replace, remove nothing (uncheck to replace everything)'),
      ),
      h('p', {}, h('button', { class: 'primary', onclick: doImport, 'data-role': 'import' }, 'Import')),
      confirmBox,
      bar,
      note,
    ),
    h(
      'div',
      { class: 'panel' },
      h('h2', {}, 'Export everything'),
      h('p', {}, h('button', { onclick: doExport }, 'Export'), ' ', link),
    ),
  );
}
