/** The file family's declarations (declaration.ts): the file source (streams and scan tables) and the file sink. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { f, sink, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the file connectors', async () => {
  const [sinkModule, sourceModule] = await Promise.all([import('./sink.js'), import('./source.js')]);
  return { ...sinkModule, ...sourceModule };
});

export const fileDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'file',
    load: impl.load,
    create: (host) => new (impl.get().FileSource)(host.fileRoots),
    defaults: 'sources/file.yaml',
    meta: source(
      { en_US: 'Reads rows from files (json, csv, lines).', zh_CN: '从文件读取数据。' },
      'sources/builtin/file',
      'File',
      [
        f('fileType', 'string', 'json', 'File type', 'Content type of the files.', {
          values: ['json', 'csv', 'lines'],
        }),
        f('path', 'string', 'data', 'Path', 'Folder holding the files.'),
        f('interval', 'int', 0, 'Interval', 'Re-read period in milliseconds; 0 reads once.'),
        f('sendInterval', 'int', 0, 'Send interval', 'Pause between rows in milliseconds.'),
        f('parallel', 'bool', false, 'Parallel', 'Read the files of a folder in parallel.'),
        f('actionAfterRead', 'int', 0, 'After read', '0 keep, 1 delete, 2 move the file.', { values: [0, 1, 2] }),
        f('moveTo', 'string', '', 'Move to', 'Folder receiving read files when actionAfterRead is 2.'),
        f('hasHeader', 'bool', false, 'Header', 'The first csv line holds the column names.'),
        f('columns', 'list_string', [], 'Columns', 'Column names of a csv without header.'),
        f('ignoreStartLines', 'int', 0, 'Skip first lines', 'Lines skipped at the start.'),
        f('ignoreEndLines', 'int', 0, 'Skip last lines', 'Lines skipped at the end.'),
        f('delimiter', 'string', ',', 'Delimiter', 'Column delimiter of csv files.'),
        f('decompression', 'string', '', 'Decompression', 'Decompress the files.', { values: ['gzip'] }),
      ],
      ['data.json', 'File', 'File or folder relative to path.'],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'file',
    load: impl.load,
    create: (host) => new (impl.get().FileSink)(host.fileRoots),
    meta: sink({ en_US: 'Writes results to files.', zh_CN: '将结果写入文件。' }, 'sinks/builtin/file', 'File', [
      f('path', 'string', 'cache', 'Path', 'File path; may use templates.', { optional: false }),
      f('fileType', 'string', 'lines', 'File type', 'lines, json or csv.', { values: ['lines', 'json', 'csv'] }),
      f('hasHeader', 'bool', false, 'Header', 'Write a header line to csv files.'),
      f('rollingInterval', 'int', 0, 'Rolling interval', 'Close a file after this many milliseconds.'),
      f('checkInterval', 'int', 300000, 'Check interval', 'How often the rolling interval is checked.'),
      f('rollingCount', 'int', 1000000, 'Rolling count', 'Close a file after this many results.'),
      f('rollingNamePattern', 'string', '', 'Name pattern', 'Where the timestamp goes in rolled file names.', {
        values: ['prefix', 'suffix', 'none'],
      }),
      f('compression', 'string', '', 'Compression', 'Compress the files.', { values: ['gzip'] }),
    ]),
    check: null,
    validate: null,
    threads: { worker: true },
  },
];
