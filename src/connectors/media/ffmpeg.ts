/**
 * Running the `ffmpeg` executable (Debian's `ffmpeg`) for the video source and the image sink: one process per
 * call, input from a URL/file or from stdin, output collected from stdout.
 */
import { spawn, spawnSync } from 'node:child_process';

const FFMPEG = process.env.EDDY_FFMPEG ?? 'ffmpeg';

/** Throws when no ffmpeg can be run. */
export function checkFfmpeg(): void {
  const r = spawnSync(FFMPEG, ['-version'], { stdio: 'ignore' });
  if (r.error || r.status !== 0) throw new Error(`ffmpeg is not available: ${r.error?.message ?? `exit ${r.status}`}`);
}

/** Runs ffmpeg with `args` (stdin gets `input` when given); resolves with stdout, rejects with stderr's last line. */
export function runFfmpeg(args: readonly string[], input: Uint8Array | undefined, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const p = spawn(FFMPEG, ['-hide_banner', '-loglevel', 'error', ...args], {
      stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.stdout!.on('data', (d: Buffer) => out.push(d));
    p.stderr!.on('data', (d: Buffer) => err.push(d));
    p.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      const data = Buffer.concat(out);
      if (code === 0 && data.length > 0) return resolve(data);
      const msg =
        Buffer.concat(err).toString('utf8').trim().split('\n').pop() ||
        (signal ? `killed by ${signal}` : `exit ${code}, no output`);
      reject(new Error(`ffmpeg: ${msg}`));
    });
    if (input) {
      p.stdin!.on('error', () => undefined);
      p.stdin!.end(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
    }
  });
}
