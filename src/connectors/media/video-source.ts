/**
 * The video source (docs/runtime.md §2.5 video; docs/connectors.md video): every `interval` ms one frame of the
 * stream or file at `url` (anything ffmpeg opens: rtsp, http, a file) is grabbed through `ffmpeg` as JPEG bytes,
 * skipping the first frames as eKuiper does (the fifth frame onwards), and decoded with the stream's FORMAT
 * (normally `binary`). A failed grab reaches the rule as an error; the next interval tries again.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import { checkFfmpeg, runFfmpeg } from './ffmpeg.js';
import { transientError } from '../../contracts/failures.js';
import { propInt, propString } from '../props.js';

const GRAB_TIMEOUT_MS = 30_000;

export class VideoSource implements SourceConnector {
  private url = '';
  private interval = 10_000;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    try {
      this.url = propString(props, 'url', '');
      if (this.url === '') throw new Error('video source url is required');
      this.interval = propInt(props, 'interval', 10_000);
      if (this.interval <= 0) throw new Error(`video source interval must be positive, got ${this.interval}`);
      checkFfmpeg();
    } catch (e) {
      throw new EddyError(ErrorCode.Executor, (e as Error).message);
    }
  }

  async connect(ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    this.closed = false;
    const grab = async (): Promise<void> => {
      try {
        const jpeg = await runFfmpeg(
          ['-i', this.url, '-vf', 'select=gte(n\\,5)', '-frames:v', '1', '-f', 'image2', '-c:v', 'mjpeg', 'pipe:1'],
          undefined,
          GRAB_TIMEOUT_MS,
        );
        if (!this.closed) emit({ payload: new Uint8Array(jpeg), meta: {}, timestamp: Date.now() });
      } catch (e) {
        if (!this.closed) {
          ctx.logger.warn('video source %s: %s', this.url, (e as Error).message);
          onError(transientError(new Error(`video source ${this.url}: ${(e as Error).message}`)));
        }
      }
    };
    const tick = (): void => {
      if (this.closed) return;
      // the next grab is scheduled once this one is done, so slow sources never pile up ffmpeg processes
      void grab().finally(() => {
        if (!this.closed) this.timer = setTimeout(tick, this.interval);
      });
    };
    this.timer = setTimeout(tick, this.interval);
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
