// A sink plugin: appends each row it receives as one JSON line to the file named by its `path` property.
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

/** @implements {import('eddy/plugin').SinkPlugin} */
class CollectSink {
  path = '';

  configure(props) {
    if (typeof props.path !== 'string' || props.path === '') throw new Error('property path is required');
    this.path = props.path;
  }

  async open() {
    await mkdir(dirname(this.path), { recursive: true });
  }

  async collect(_ctx, rows) {
    await appendFile(this.path, rows.map((r) => JSON.stringify(r) + '\n').join(''));
  }

  close() {}
}

/** @type {import('eddy/plugin').SinkExport} */
export const Collect = {
  version: '1.0.0',
  sink: () => new CollectSink(),
  // `POST /metadata/sinks/connection/collect`: can the file be written?
  check: async (props) => {
    if (typeof props.path !== 'string' || props.path === '') throw new Error('property path is required');
    await mkdir(dirname(props.path), { recursive: true });
    await appendFile(props.path, '');
  },
};
