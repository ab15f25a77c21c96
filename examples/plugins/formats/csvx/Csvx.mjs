// A format plugin (a custom schema): comma-separated text whose first line names the columns; one payload holds one
// row per following line. Numbers are read as numbers. `SCHEMAID="csvx.semicolon"` (or `tab`, `pipe`) changes the
// separator.

const SEPARATORS = { '': ',', comma: ',', semicolon: ';', tab: '\t', pipe: '|' };

/** @type {import('eddy/plugin').FormatExport} */
export const Csvx = {
  version: '1.0.0',
  format: (message) => {
    const sep = SEPARATORS[message];
    if (sep === undefined) throw new Error(`csvx: unknown separator ${message}`);
    const cell = (text) => (text !== '' && !Number.isNaN(Number(text)) ? Number(text) : text);
    return {
      decode(data) {
        const lines = new TextDecoder()
          .decode(data)
          .split(/\r?\n/)
          .filter((l) => l !== '');
        if (lines.length < 2) throw new Error('csvx: a header line and at least one row are needed');
        const names = lines[0].split(sep);
        return lines.slice(1).map((line) => {
          const cells = line.split(sep);
          return Object.fromEntries(names.map((n, i) => [n, cell(cells[i] ?? '')]));
        });
      },
      encode(data) {
        const rows = Array.isArray(data) ? data : [data];
        const names = rows.length > 0 ? Object.keys(rows[0]) : [];
        const text = (v) => (v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
        return [names.join(sep), ...rows.map((r) => names.map((n) => text(r[n])).join(sep))].join('\n');
      },
    };
  },
};
