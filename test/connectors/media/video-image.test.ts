import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from '../../helpers/server.js';
import { tempDir } from '../e2-helpers.js';
import { until } from '../helpers.js';

const uid = (): string => Math.random().toString(36).slice(2, 8);
const isJpeg = (b: Buffer) => b[0] === 0xff && b[1] === 0xd8;
const isPng = (b: Buffer) => b.subarray(1, 4).toString('ascii') === 'PNG';

test('video source snapshots a video file through ffmpeg; image sink saves the frames as jpeg and png with cleanup', async () => {
  const t = tempDir('eddy-video-');
  // a 3-second test pattern made by ffmpeg itself
  const video = join(t.dir, 'clip.mp4');
  const made = spawnSync('ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc=size=64x48:rate=10',
    '-t',
    '3',
    '-pix_fmt',
    'yuv420p',
    video,
  ]);
  assert.equal(made.status, 0, made.stderr.toString());
  const jpegDir = join(t.dir, 'jpeg');
  const pngDir = join(t.dir, 'png');
  // stale files: one too old for maxAge, and more than maxCount
  mkdirSync(pngDir, { recursive: true });
  const old = join(pngDir, 'old.png');
  writeFileSync(old, 'x');
  utimesSync(old, new Date(Date.now() - 5 * 3_600_000), new Date(Date.now() - 5 * 3_600_000));
  const otherKind = join(pngDir, 'keep.txt');
  writeFileSync(otherKind, 'x');
  const s = await startTestServer();
  const id = uid();
  try {
    assert.deepEqual(((await s.req('GET', '/metadata/sources/yaml/video')).json() as Record<string, unknown>).default, {
      url: 'http://localhost',
      interval: 10000,
    });
    assert.equal(
      (await s.req('PUT', `/metadata/sources/video/confKeys/k${id}`, { url: video, interval: 200 })).status,
      200,
    );
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM vid${id} (frame bytea) WITH (TYPE="video", FORMAT="binary", CONF_KEY="k${id}")`,
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `vj${id}`,
          sql: `SELECT frame FROM vid${id}`,
          actions: [{ image: { path: jpegDir, imageFormat: 'jpeg' } }],
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `vp${id}`,
          sql: `SELECT frame AS img, 'text' AS label FROM vid${id}`,
          actions: [{ image: { path: pngDir, imageFormat: 'png', maxAge: 1, maxCount: 1000 } }],
        })
      ).status,
      201,
    );
    const files = (dir: string, ext: string) => readdirSync(dir).filter((f) => f.endsWith(ext));
    await until(() => files(jpegDir, '.jpeg').length >= 2 && files(pngDir, '.png').length >= 2, 30_000, 'saved images');
    const jpegs = files(jpegDir, '.jpeg');
    assert.match(jpegs[0], /^frame\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}-\d{9}\.jpeg$/);
    assert.ok(isJpeg(readFileSync(join(jpegDir, jpegs[0]))));
    const pngs = files(pngDir, '.png');
    assert.ok(
      pngs.every((f) => f.startsWith('img')),
      'the old file was removed by maxAge and only image fields are saved',
    );
    assert.ok(isPng(readFileSync(join(pngDir, pngs[0]))), 'a JPEG frame converted to PNG');
    assert.ok(readdirSync(pngDir).includes('keep.txt'), 'files of other formats are left alone');

    // maxCount: a restarted rule keeps only the newest images
    await until(() => files(jpegDir, '.jpeg').length >= 4, 30_000, 'four images');
    assert.equal(
      (
        await s.req('PUT', `/rules/vj${id}`, {
          id: `vj${id}`,
          sql: `SELECT frame FROM vid${id}`,
          actions: [{ image: { path: jpegDir, imageFormat: 'jpeg', maxCount: 1 } }],
        })
      ).status,
      200,
    );
    await until(() => files(jpegDir, '.jpeg').length <= 2, 30_000, 'maxCount cleanup');

    // configuration errors
    const bad = await s.req('POST', '/rules', {
      id: `vb${id}`,
      sql: `SELECT frame FROM vid${id}`,
      actions: [{ image: { path: jpegDir, imageFormat: 'gif' } }],
    });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /invalid image format: gif/);
    assert.equal(
      (
        await s.req('PUT', `/metadata/sources/video/confKeys/bad${id}`, {
          url: join(t.dir, 'missing.mp4'),
          interval: 100,
        })
      ).status,
      200,
    );
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM vbad${id} () WITH (TYPE="video", FORMAT="binary", CONF_KEY="bad${id}")`,
        })
      ).status,
      201,
    );
    assert.equal(
      (await s.req('POST', '/rules', { id: `vm${id}`, sql: `SELECT * FROM vbad${id}`, actions: [{ nop: {} }] })).status,
      201,
    );
    let text = '';
    const end = Date.now() + 20_000;
    while (!/missing\.mp4/.test(text) && Date.now() < end) {
      text = (await s.req('GET', `/rules/vm${id}/status`)).text;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(text, /video source .*missing\.mp4/);
  } finally {
    await s.dispose();
    t.remove();
  }
});
