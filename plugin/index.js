// The runtime half of `eddy/plugin` (the types are index.d.ts): the contract version a plugin module is written for.
// A plugin names it in its manifest (`apiVersion` in `<name>.json` or the source's `<name>.yaml`); Eddy refuses a
// module whose major version it does not know (docs/plugins.md).
export const PLUGIN_API_VERSION = '1.0';
