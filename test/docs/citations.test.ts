/**
 * Every reference in the code leads somewhere a newcomer can follow: a comment that cites a section names a document
 * under docs/ whose headings carry that section number, a ledger citation names an entry of docs/compatibility.md,
 * and no comment names a person or a role.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const docsDir = join(root, 'docs');

const SECTION = '\u00a7';
const NUM = String.raw`\d+(?:\.\d+)*`;
/** `docs/<name>.md <sign><n>` followed by `, <sign><m>`, `/<sign><m>`, `; <sign><m>`, ` and <sign><m>` or a range `–<m>`. */
const DOC_CITATION = new RegExp(
  String.raw`docs/([a-z0-9-]+)\.md ${SECTION}(${NUM})((?:(?:\s*[,/;]\s*|\s+and\s+)${SECTION}${NUM}|\s*[–-]\s*${SECTION}?${NUM})*)`,
  'g',
);
const CONTINUATION = new RegExp(`${SECTION}?(${NUM})`, 'g');
const LEDGER_CITATION = /docs\/compatibility\.md ([A-Z]\d+)((?:\s*(?:[,/;–-]|and)\s*[A-Z]\d+)*)/g;
const SECTION_SIGN = new RegExp(`${SECTION}`, 'g');
const RFC_BEFORE = /RFC \d+ $/;
/** A `.md` document named without its docs/ folder (`runtime.md`, `sql.md …`). */
const BARE_DOC = /(^|[^/\w-])((?:sql|rest-api|runtime|compatibility|brief)\.md)\b/g;
const MD_SECTION = new RegExp(String.raw`([\w./-]+\.md) ${SECTION}`, 'g');
const ANY_DOC = /docs\/([a-z0-9-]+)\.md/g;
/** "engineer X", "helper E1", "C1's" (a possessive tag; V8 is an engine, not a role). */
const ROLE =
  /\b(?:[Ee]ngineers?|[Dd]evelopers?|[Hh]elpers?|[Rr]eviewers?|[Tt]eam lead|[Aa]gents?)\s+[A-Z]\d*\b|\b(?!V8')[A-Z]\d+'s\b/;
/** A parenthesised work-item tag such as "(W6)": it points at nothing in the repository. */
const WORK_TAG = /\(([A-Z]\d{1,2})\)/g;
/** The brief's decision tags K1–K24 and D1–D24 written without their document. */
const BARE_LEDGER = /(^|[^\w.-])([DK]\d{1,2})\b/g;

interface Docs {
  sections: Map<string, Set<string>>;
  ledger: Set<string>;
}

function loadDocs(): Docs {
  const sections = new Map<string, Set<string>>();
  for (const name of readdirSync(docsDir)) {
    if (!name.endsWith('.md')) continue;
    const set = new Set<string>();
    for (const line of readFileSync(join(docsDir, name), 'utf8').split('\n')) {
      const m = /^#{2,6} (\d+(?:\.\d+)*)[.\s]/.exec(line);
      if (m) set.add(m[1]);
    }
    sections.set(name.slice(0, -3), set);
  }
  const ledger = new Set<string>();
  const compat = join(docsDir, 'compatibility.md');
  if (existsSync(compat)) {
    for (const line of readFileSync(compat, 'utf8').split('\n')) {
      const m = /^(?:#{2,6} ([A-Z]\d+)\b|\| ([A-Z]\d+) \|)/.exec(line);
      if (m) ledger.add(m[1] ?? m[2]);
    }
  }
  return { sections, ledger };
}

/** The part of a line that is comment text (whole line for block-comment and line-comment lines). */
function commentPart(line: string): string {
  const t = line.trimStart();
  if (t.startsWith('*') || t.startsWith('/*') || t.startsWith('//')) return line;
  const i = line.indexOf(' // ');
  return i >= 0 ? line.slice(i) : '';
}

/** Problems on one line of source, each as a short text. */
export function checkLine(line: string, docs: Docs): string[] {
  const problems: string[] = [];
  const covered: Array<[number, number]> = [];

  for (const m of line.matchAll(DOC_CITATION)) {
    covered.push([m.index, m.index + m[0].length]);
    const doc = m[1];
    const secs = docs.sections.get(doc);
    if (!secs) {
      problems.push(`cites docs/${doc}.md, which does not exist`);
      continue;
    }
    const nums = [m[2], ...[...m[3].matchAll(CONTINUATION)].map((c) => c[1])];
    for (const n of nums)
      if (!secs.has(n)) problems.push(`cites docs/${doc}.md ${SECTION}${n}, which has no such heading`);
  }
  for (const m of line.matchAll(SECTION_SIGN)) {
    if (covered.some(([a, b]) => m.index >= a && m.index < b)) continue;
    if (RFC_BEFORE.test(line.slice(0, m.index))) continue;
    problems.push(`cites a bare ${SECTION} with no document`);
  }
  for (const m of line.matchAll(MD_SECTION)) {
    if (!m[1].startsWith('docs/')) problems.push(`cites ${m[1]} ${SECTION}, a document outside docs/`);
  }
  for (const m of line.matchAll(BARE_DOC)) problems.push(`names ${m[2]} without its docs/ folder`);
  for (const m of line.matchAll(ANY_DOC)) {
    if (!docs.sections.has(m[1])) problems.push(`names docs/${m[1]}.md, which does not exist`);
  }

  const comment = commentPart(line);
  const ledgerCovered: Array<[number, number]> = [];
  for (const m of comment.matchAll(LEDGER_CITATION)) {
    ledgerCovered.push([m.index, m.index + m[0].length]);
    const ids = [m[1], ...(m[2].match(/[A-Z]\d+/g) ?? [])];
    for (const id of ids)
      if (!docs.ledger.has(id)) problems.push(`cites docs/compatibility.md ${id}, which has no entry`);
  }
  for (const m of comment.matchAll(BARE_LEDGER)) {
    const at = m.index + m[1].length;
    if (ledgerCovered.some(([a, b]) => at >= a && at < b)) continue;
    if (docs.ledger.has(m[2])) problems.push(`cites ledger entry ${m[2]} without docs/compatibility.md`);
  }
  if (ROLE.test(comment)) problems.push('names a person or a role');
  for (const m of comment.matchAll(WORK_TAG)) {
    if (!docs.ledger.has(m[1])) problems.push(`names the tag ${m[1]}, which leads nowhere`);
  }
  return problems;
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) sourceFiles(full, out);
    else if (name.endsWith('.ts')) out.push(full);
  }
  return out;
}

test('the ledger has an entry for every K and D decision', () => {
  const { ledger } = loadDocs();
  const missing: string[] = [];
  for (let i = 1; i <= 24; i++) for (const p of ['K', 'D']) if (!ledger.has(`${p}${i}`)) missing.push(`${p}${i}`);
  assert.deepEqual(missing, [], `docs/compatibility.md lacks ${missing.join(', ')}`);
});

test('every section, document and ledger entry cited under src/ and test/ exists, and no comment names a role', () => {
  const docs = loadDocs();
  const failures: string[] = [];
  let citations = 0;
  const self = new URL(import.meta.url).pathname;
  // this file is skipped: its examples of bad references are there on purpose
  for (const file of [...sourceFiles(join(root, 'src')), ...sourceFiles(join(root, 'test'))].filter(
    (f) => f !== self,
  )) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      citations += [...line.matchAll(DOC_CITATION)].length;
      for (const p of checkLine(line, docs)) failures.push(`${relative(root, file)}:${i + 1}: ${p}`);
    });
  }
  assert.deepEqual(failures, [], `\n${failures.join('\n')}`);
  assert.ok(citations > 100, `only ${citations} citations found: the scan is not reading the code`);
});

test('section references between the documents resolve', () => {
  const docs = loadDocs();
  const named = new RegExp(
    String.raw`([a-z0-9-]+)\.md ${SECTION}(${NUM})((?:(?:\s*[,/;]\s*|\s+and\s+)${SECTION}${NUM}|\s*[–-]\s*${SECTION}?${NUM})*)`,
    'g',
  );
  const failures: string[] = [];
  for (const [doc, own] of docs.sections) {
    const lines = readFileSync(join(docsDir, `${doc}.md`), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const covered: Array<[number, number]> = [];
      for (const m of line.matchAll(named)) {
        covered.push([m.index, m.index + m[0].length]);
        const target = docs.sections.get(m[1]);
        const nums = [m[2], ...[...m[3].matchAll(CONTINUATION)].map((c) => c[1])];
        for (const n of nums) if (!target?.has(n)) failures.push(`docs/${doc}.md:${i + 1}: ${m[1]}.md ${SECTION}${n}`);
      }
      for (const m of line.matchAll(new RegExp(`${SECTION}(${NUM})`, 'g'))) {
        if (covered.some(([a, b]) => m.index >= a && m.index < b)) continue;
        if (!own.has(m[1])) failures.push(`docs/${doc}.md:${i + 1}: ${SECTION}${m[1]}`);
      }
    });
  }
  assert.deepEqual(failures, []);
});

test('the checker flags what a newcomer could not follow', () => {
  const docs = loadDocs();
  const bad = (line: string) => checkLine(line, docs);
  const ok = (line: string) => assert.deepEqual(checkLine(line, docs), [], line);

  ok(` * Windows (docs/sql.md ${SECTION}5.1, ${SECTION}5.3) and nodes (docs/runtime.md ${SECTION}1.6).`);
  ok(` * Ranges docs/runtime.md ${SECTION}2.1–2.2 and docs/sql.md ${SECTION}2–${SECTION}5.`);
  ok(`// node id with the multicast bit set (RFC 4122 ${SECTION}4.5).`);
  ok(' * ids are unique (docs/compatibility.md D12, K21).');

  assert.match(bad(` * see docs/sql.md ${SECTION}99.1`).join(), /no such heading/);
  assert.match(bad(` * see docs/nowhere.md ${SECTION}1`).join(), /does not exist/);
  assert.match(bad(` * Float results: NaN becomes null (${SECTION}7.0).`).join(), /bare/);
  assert.match(bad(` * as runtime.md ${SECTION}3.3 says`).join(), /outside docs\/|without its docs\/ folder/);
  assert.match(bad(' * properties read as in runtime.md conventions').join(), /without its docs\/ folder/);
  assert.match(bad(' * unique task ids (docs/compatibility.md D99)').join(), /no entry/);
  assert.match(bad(' // every create path records the schema (D14)').join(), /without docs\/compatibility\.md/);
  assert.match(bad(' * ' + 'engineer' + ' X asked for this').join(), /role/);
  assert.match(bad(' /** sources run by child processes (' + 'W6' + ') */').join(), /leads nowhere/);
  assert.match(bad(' * the planner of ' + 'C1' + "'s design").join(), /role/);
});
