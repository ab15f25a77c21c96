/**
 * A portable plugin for tests, written in JavaScript as a plugin SDK would be: it dials the control channel, answers
 * start/stop commands, runs a source (pushes counter messages), a sink (writes what it receives to a file, with
 * optional acks) and a function (reverses a string). Its NNG framing is written here independently of Eddy's.
 */
import AdmZip from 'adm-zip';

const PLUGIN_JS = String.raw`
const net = require('node:net');
const fs = require('node:fs');
const pluginName = process.env.PLUGIN_NAME || require('node:path').basename(__dirname);
JSON.parse(process.argv[2]); // the engine's single JSON argument

const SP = (id) => Buffer.from([0, 0x53, 0x50, 0, id >> 8, id & 255, 0, 0]);
function wire(socket, myId, onMsg) {
  let buf = Buffer.alloc(0), shaken = false;
  socket.write(SP(myId));
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    if (!shaken) { if (buf.length < 8) return; buf = buf.subarray(8); shaken = true; }
    while (buf.length >= 9) {
      const n = Number(buf.readBigUInt64BE(1));
      if (buf.length < 9 + n) return;
      const m = buf.subarray(9, 9 + n); buf = buf.subarray(9 + n); onMsg(Buffer.from(m));
    }
  });
  socket.on('error', () => {});
  return (payload) => { const h = Buffer.alloc(9); h[0] = 1; h.writeBigUInt64BE(BigInt(payload.length), 1); socket.write(Buffer.concat([h, payload])); };
}
let reqId = 1;
function dialReq(path, onReply, ready) {
  const s = net.connect(path, () => {
    const send = wire(s, 0x30, (m) => onReply(m.subarray(4).toString()));
    ready((text) => send(Buffer.concat([Buffer.from([0x80, 0, 0, reqId++ & 255]), Buffer.from(text)])));
  });
  s.on('error', (e) => { console.error('dial ' + path + ' failed: ' + e.message); process.exit(3); });
}
function dialPush(path, ready) {
  const s = net.connect(path, () => ready(wire(s, 0x50, () => {}), s));
  s.on('error', () => {});
}
const running = new Map();
const key = (c) => c.meta.ruleId + '_' + c.meta.opId + '_' + c.meta.instanceId;

function start(c, done) {
  if (c.pluginType === 'source') {
    dialPush('/tmp/' + key(c) + '.ipc', (push, sock) => {
      let n = 0;
      const timer = setInterval(() => push(Buffer.from(JSON.stringify({ message: { n: n++, ds: c.dataSource || '', greeting: (c.config || {}).greeting || '', pid: process.pid }, meta: { from: pluginName } }))), 30);
      running.set(key(c), () => { clearInterval(timer); sock.destroy(); });
      done('ok');
    });
  } else if (c.pluginType === 'sink') {
    const path = '/tmp/' + key(c) + '.ipc';
    try { fs.unlinkSync(path); } catch {}
    const conf = c.config || {};
    let ack = null;
    if (conf.requiredACKs) dialPush('/tmp/' + key(c) + '_ack.ipc', (push) => (ack = push));
    const server = net.createServer((s) => wire(s, 0x51, (m) => {
      fs.appendFileSync(conf.path, m.toString() + '\n');
      if (ack) ack(Buffer.from(m.toString().includes('fail') ? '{"error":"refused"}' : '{}'));
    }));
    server.listen(path, () => { running.set(key(c), () => server.close()); done('ok'); });
  } else if (c.pluginType === 'func') {
    let funcSend;
    dialReq('/tmp/func_' + c.symbolName + '.ipc', (text) => {
      const call = JSON.parse(text);
      let reply;
      if (call.func === 'Exec') {
        const a = call.arg[0];
        reply = typeof a === 'string' ? { state: true, result: a.split('').reverse().join('') } : { state: false, result: 'revert needs a string, got ' + JSON.stringify(a) };
      } else if (call.func === 'IsAggregate') reply = { state: true, result: false };
      else reply = { state: true, result: '' };
      funcSend(JSON.stringify(reply));
    }, (send) => { funcSend = send; send('handshake'); done('ok'); });
  } else done('unknown plugin type ' + c.pluginType);
}

dialReq('/tmp/plugin_' + pluginName + '.ipc', (text) => {
  const cmd = JSON.parse(text);
  const c = JSON.parse(cmd.arg);
  if (cmd.cmd === 'start') start(c, (answer) => control(answer));
  else { const stop = running.get(key(c)); running.delete(key(c)); if (stop) stop(); control('ok'); }
}, (send) => { control = send; send('handshake'); });
let control;
`;

export interface PluginZipOptions {
  name: string;
  sources?: string[];
  sinks?: string[];
  functions?: string[];
  /** overrides of the descriptor */
  descriptor?: Record<string, unknown>;
  /** leave out files */
  omit?: string[];
  installSh?: string;
}

/** The plugin archive: descriptor, an executable shell script starting node, the JS, a yaml per source. */
export function pluginZip(o: PluginZipOptions): Buffer {
  const zip = new AdmZip();
  const descriptor = {
    name: o.name,
    version: 'v1.0.0',
    language: 'go',
    executable: o.name,
    sources: o.sources ?? [],
    sinks: o.sinks ?? [],
    functions: o.functions ?? [],
    ...o.descriptor,
  };
  const files: Record<string, string> = {
    [`${o.name}.json`]: JSON.stringify(descriptor),
    [o.name]: `#!/bin/sh\nPLUGIN_NAME=${o.name} exec "${process.execPath}" "$(dirname "$0")/plugin.cjs" "$@"\n`,
    'plugin.cjs': PLUGIN_JS,
  };
  for (const s of o.sources ?? []) {
    files[`sources/${s}.yaml`] = 'default:\n  greeting: hello\n';
    files[`sources/${s}.json`] = JSON.stringify({ about: { description: { en_US: 'counter' } } });
  }
  if (o.installSh !== undefined) files['install.sh'] = o.installSh;
  for (const f of o.omit ?? []) delete files[f];
  for (const [p, text] of Object.entries(files)) zip.addFile(p, Buffer.from(text));
  return zip.toBuffer();
}
