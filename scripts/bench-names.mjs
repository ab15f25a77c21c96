// Which benchmark modules `npm run bench -- <names>` runs: a name is a whole module name (`nexmark` is not
// `nexmark-mqtt`), and `<prefix>*` names every module starting with the prefix. Without names, every module but those
// run only on request. Unknown names are an error that lists the known ones.

/** @returns {{ run: string[] } | { error: string }} the `.js` files to run, in name order */
export function selectBenchmarks(files, names, onRequest) {
  const base = (f) => f.replace(/\.js$/, '');
  const matches = (f, name) => (name.endsWith('*') ? base(f).startsWith(name.slice(0, -1)) : base(f) === name);
  const modules = files.filter((f) => f.endsWith('.js'));
  const unknown = names.filter((name) => !modules.some((f) => matches(f, name)));
  if (unknown.length > 0)
    return { error: `no benchmark named ${unknown.join(', ')} (benchmarks: ${modules.map(base).join(', ')})` };
  const run = modules
    .filter((f) => (names.length === 0 ? !onRequest.has(f) : names.some((name) => matches(f, name))))
    .sort();
  return run.length === 0 ? { error: 'no benchmarks found' } : { run };
}
