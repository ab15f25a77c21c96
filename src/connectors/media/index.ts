/**
 * The media family's declarations (declaration.ts): the video source (snapshots of a stream) and the image sink, both
 * through an `ffmpeg` child process.
 */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { f, sink, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the media connectors', async () => {
  const [imageSink, videoSource] = await Promise.all([import('./image-sink.js'), import('./video-source.js')]);
  return { ...imageSink, ...videoSource };
});

export const mediaDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'video',
    load: impl.load,
    create: () => new (impl.get().VideoSource)(),
    defaults: 'sources/video.yaml',
    meta: source(
      {
        en_US: 'Takes periodic snapshots of a video stream or file through ffmpeg.',
        zh_CN: '通过 ffmpeg 定时截取视频流的图像。',
      },
      'sources/plugin/video',
      'Video',
      [
        f('url', 'string', 'http://localhost', 'URL', 'Video stream or file ffmpeg can open (rtsp, http, file path).', {
          optional: false,
        }),
        f('interval', 'int', 10000, 'Interval', 'Milliseconds between two snapshots.'),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'image',
    load: impl.load,
    create: () => new (impl.get().ImageSink)(),
    meta: sink(
      {
        en_US: 'Saves image fields of the results as JPEG or PNG files.',
        zh_CN: '将结果中的图像保存为 JPEG 或 PNG 文件。',
      },
      'sinks/plugin/image',
      'Image',
      [
        f('path', 'string', '', 'Path', 'Folder the images are saved in (created).', { optional: false }),
        f('imageFormat', 'string', 'jpeg', 'Image format', 'Format of the saved files.', {
          values: ['jpeg', 'png'],
          optional: false,
        }),
        f('maxAge', 'int', 72, 'Maximum age', 'Hours an image is kept.'),
        f('maxCount', 'int', 1000, 'Maximum count', 'Most images kept.'),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
];
