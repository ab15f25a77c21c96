/**
 * The archive reader shared by plugins and services (docs/plugins.md §7): an entry whose header understates its size is
 * cut off at the stated size instead of being unpacked whole, the unpacked total is bounded, and `install.sh` runs
 * with its parameters, fails with its output and is stopped at its time limit with what it started.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import AdmZip from 'adm-zip';
import { ARCHIVE_LIMITS, readZip, runInstallScript } from '../../src/extensions/services-archive.js';

/** A zip whose one entry unpacks to `real` bytes of zeros while its headers say `stated`. */
function lyingZip(real: number, stated: number): Buffer {
  const z = new AdmZip();
  z.addFile('big.bin', Buffer.alloc(real));
  const buf = z.toBuffer();
  for (let i = 0; i + 4 <= buf.length; i++) {
    const sig = buf.readUInt32LE(i);
    if (sig === 0x04034b50) buf.writeUInt32LE(stated, i + 22);
    if (sig === 0x02014b50) buf.writeUInt32LE(stated, i + 24);
  }
  return buf;
}

test('an entry that unpacks to more than its header says is refused without unpacking it whole', () => {
  assert.throws(() => readZip(lyingZip(8 * 1024 * 1024, 100)), /entry big\.bin cannot be unpacked within its size/);
  const honest = new AdmZip();
  honest.addFile('a.txt', Buffer.from('hello'));
  assert.deepEqual(
    readZip(honest.toBuffer()).map((e) => [e.path, e.data.toString()]),
    [['a.txt', 'hello']],
  );
});

test('the entry count and the unpacked total are bounded', () => {
  const limits = { entries: 3, unpackedBytes: 1000, ratio: 200, ratioFloorBytes: 1024 * 1024 };
  const zip = (sizes: number[]) => {
    const z = new AdmZip();
    sizes.forEach((n, i) => z.addFile(`p${i}.bin`, randomBytes(n)));
    return z.toBuffer();
  };
  assert.equal(readZip(zip([400, 500]), limits).length, 2);
  assert.throws(() => readZip(zip([600, 600]), limits), /it unpacks to more than 1000 bytes/);
  assert.throws(() => readZip(zip([1, 1, 1, 1]), limits), /more than 3 entries/);
  assert.equal(ARCHIVE_LIMITS.unpackedBytes, 256 * 1024 * 1024, 'the documented default');
});

test('install.sh runs with shellParas, its failure carries its output, and its time limit stops it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-install-'));
  try {
    const lines: string[] = [];
    writeFileSync(join(dir, 'install.sh'), 'echo "installing $1 $2"; echo "$1" > marker\n');
    await runInstallScript(dir, ['libfoo', '2.0'], 10_000, (l) => lines.push(l));
    assert.equal(readFileSync(join(dir, 'marker'), 'utf8'), 'libfoo\n');
    assert.deepEqual(lines, ['installing libfoo 2.0'], 'its output is logged');

    writeFileSync(join(dir, 'install.sh'), 'echo "no compiler" >&2; exit 4\n');
    await assert.rejects(
      runInstallScript(dir, [], 10_000, () => undefined),
      /install\.sh exited with 4: no compiler/,
    );

    writeFileSync(join(dir, 'install.sh'), '(sleep 3; touch late) & sleep 30\n');
    await assert.rejects(
      runInstallScript(dir, [], 500, () => undefined),
      /did not finish within 500 ms/,
    );
    await new Promise((r) => setTimeout(r, 3500));
    assert.ok(!existsSync(join(dir, 'late')), 'what the script started was stopped with it');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
