// A source plugin: emits {"n": 1}, {"n": 2}, … every `interval` ms (property `interval`, default 1000).
// The types are in `eddy/plugin` (docs/plugins.md); plugins import them for checking only.

/** @implements {import('eddy/plugin').SourcePlugin} */
class CounterSource {
  interval = 1000;
  n = 0;
  /** @type {NodeJS.Timeout | undefined} */
  timer = undefined;

  configure(_datasource, props) {
    const interval = props.interval ?? 1000;
    if (typeof interval !== 'number' || !(interval > 0))
      throw new Error(`interval must be a positive number, got ${interval}`);
    this.interval = interval;
  }

  open(ctx) {
    this.timer = setInterval(() => {
      this.n += 1;
      ctx.emit({ n: this.n });
    }, this.interval);
  }

  close() {
    clearInterval(this.timer);
  }
}

/** @type {import('eddy/plugin').SourceExport} */
export const Counter = {
  version: '1.0.0',
  source: () => new CounterSource(),
};
