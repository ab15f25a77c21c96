/**
 * The public plugin contract as a plugin author gets it: `eddy/plugin` resolved through package.json `exports` from a
 * project that depends on Eddy (node_modules/eddy), its types checked by TypeScript under NodeNext resolution, its
 * runtime half imported by Node, and its version the one the server loads.
 */
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import ts from 'typescript';
import { SUPPORTED_API_MAJORS, checkApiVersion } from '../../src/extensions/plugins-native.js';

const root = new URL('../..', import.meta.url).pathname;

const AUTHOR_TS = `
import { PLUGIN_API_VERSION, type SourceExport, type SinkPlugin, type FunctionsExport, type FormatExport } from 'eddy/plugin';

export const version: string = PLUGIN_API_VERSION;

export const Ticks: SourceExport = {
  source: () => ({
    configure(_ds: string, _props: Record<string, unknown>) {},
    open(ctx) { ctx.emit({ n: 1 }); },
    close() {},
  }),
};

export const sink: SinkPlugin = {
  configure() {},
  open() {},
  collect(_ctx, rows) { for (const r of rows) void r; },
  close() {},
};

export const Fns: FunctionsExport = { functions: { twice: ([x]) => (typeof x === 'number' ? x * 2 : null) } };

export const Fmt: FormatExport = () => ({ decode: () => ({}), encode: () => '' });

// @ts-expect-error a source must emit rows, not numbers
export const Bad: SourceExport = { source: () => ({ configure() {}, open(ctx) { ctx.emit(42); }, close() {} }) };
`;

test('a plugin project imports eddy/plugin: types check under NodeNext, the module loads, the version is served', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-plugin-author-'));
  try {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(root, join(dir, 'node_modules', 'eddy'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'my-plugin', type: 'module' }));
    writeFileSync(join(dir, 'plugin.ts'), AUTHOR_TS);
    const program = ts.createProgram([join(dir, 'plugin.ts')], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
      types: [],
      preserveSymlinks: true,
    });
    const diags = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(diags, []);

    writeFileSync(join(dir, 'probe.mjs'), "export { PLUGIN_API_VERSION } from 'eddy/plugin';\n");
    const mod = (await import(pathToFileURL(join(dir, 'probe.mjs')).href)) as { PLUGIN_API_VERSION: string };
    assert.match(mod.PLUGIN_API_VERSION, /^\d+\.\d+$/);
    // the server loads what the package says it is
    assert.equal(checkApiVersion(mod.PLUGIN_API_VERSION), mod.PLUGIN_API_VERSION);
    assert.ok(SUPPORTED_API_MAJORS.includes(Number(mod.PLUGIN_API_VERSION.split('.')[0])));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
