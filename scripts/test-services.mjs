// What the tests talk to, brought up by `npm test` itself (scripts/test.mjs): the Debian packages they drive, installed
// when missing, and the services on loopback, started when their port does not answer. It says what it installs and
// starts; when everything is there it costs one dpkg-query and a few port checks. EDDY_TEST_SERVICES=0 skips it (for
// machines whose services are managed otherwise).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';

/** Debian packages the tests need, and why. */
export const TEST_PACKAGES = [
  ['mosquitto', 'the MQTT broker (1883) and brokers of their own for the fault tests'],
  ['redis-server', 'the Redis store, source, lookup table and sinks (6379)'],
  ['postgresql', 'the sql connectors (5432, database test)'],
  ['mariadb-server', 'the sql connectors (3306, database test)'],
  ['nats-server', 'edgex over NATS (4222, JetStream)'],
  ['influxdb', 'the influx sink (InfluxDB 1.x, 8086)'],
  ['chromium', "the web console's browser tests"],
  ['ffmpeg', 'the video source and the image sink'],
  ['libnng-dev', "the neuron test's C peer"],
  ['gcc', "compiling the neuron test's C peer"],
  ['python3-zmq', "the zmq test's peer"],
  ['openssl', 'certificates of the TLS tests'],
];

/** Services on loopback: name, port, and the command that starts one that is down (as root). */
export const TEST_SERVICES = [
  ['Mosquitto', 1883, ['mosquitto', '-d', '-c', '/etc/mosquitto/mosquitto.conf']],
  [
    'Redis',
    6379,
    [
      'redis-server',
      '--daemonize',
      'yes',
      '--bind',
      '127.0.0.1',
      '-::1',
      '--port',
      '6379',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      '/var/lib/redis',
      '--logfile',
      '/var/log/redis/ci.log',
    ],
  ],
  ['PostgreSQL', 5432, () => ['pg_ctlcluster', '--skip-systemctl-redirect', postgresVersion(), 'main', 'start']],
  ['MariaDB', 3306, ['start-stop-daemon', '--start', '--oknodo', '--background', '--exec', '/usr/sbin/mariadbd']],
  [
    'NATS',
    4222,
    [
      'start-stop-daemon',
      '--start',
      '--oknodo',
      '--background',
      '--exec',
      '/usr/sbin/nats-server',
      '--',
      '-a',
      '127.0.0.1',
      '-p',
      '4222',
      '-js',
      '-sd',
      '/var/lib/nats-server',
    ],
  ],
  [
    'InfluxDB',
    8086,
    [
      'start-stop-daemon',
      '--start',
      '--oknodo',
      '--background',
      '--chuid',
      'influxdb',
      '--exec',
      '/usr/bin/influxd',
      '--',
      '-config',
      '/etc/influxdb/influxdb.conf',
    ],
  ],
];

function postgresVersion() {
  return existsSync('/etc/postgresql') ? (readdirSync('/etc/postgresql').sort().at(-1) ?? '') : '';
}

/** The packages of `names` dpkg does not have installed; undefined when dpkg is not there (not Debian). */
export function missingPackages(names) {
  const r = spawnSync('dpkg-query', ['-W', '-f=${db:Status-Abbrev} ${Package}\n', ...names], { encoding: 'utf8' });
  if (r.error) return undefined;
  const installed = new Set(
    r.stdout
      .split('\n')
      .filter((l) => l.startsWith('ii'))
      .map((l) => l.split(/\s+/)[1]?.split(':')[0]),
  );
  return names.filter((n) => !installed.has(n));
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
export function portOpen(port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** apt-get as root, or through a sudo that needs no password; false when neither can run. */
function apt(args, say) {
  const prefix = isRoot() ? [] : spawnSync('sudo', ['-n', 'true']).status === 0 ? ['sudo', '-n'] : undefined;
  if (!prefix) return false;
  const [cmd, ...rest] = [...prefix, 'apt-get', ...args];
  const r = spawnSync(cmd, rest, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (r.status !== 0) say(`apt-get ${args.join(' ')} failed (exit ${r.status})`);
  return r.status === 0;
}

async function waitForPort(port, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await portOpen(port)) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

/**
 * Installs the missing packages and starts the services that are down, saying so on `out`. Returns the problems left
 * (a package it could not install, a service that did not come up); the tests that need them will fail.
 */
export async function ensureTestServices(out = (line) => console.error(line)) {
  const say = (line) => out(`test services: ${line}`);
  const problems = [];
  const missing = missingPackages(TEST_PACKAGES.map(([p]) => p));
  if (missing === undefined) {
    say(`no dpkg here: install ${TEST_PACKAGES.map(([p]) => p).join(', ')} (or their equivalents) yourself`);
  } else if (missing.length > 0) {
    const why = new Map(TEST_PACKAGES);
    say(`installing ${missing.map((p) => `${p} (${why.get(p)})`).join(', ')}`);
    const ok = apt(['update', '-qq'], say) && apt(['install', '-y', '-qq', '--no-install-recommends', ...missing], say);
    if (!ok) {
      const left = missingPackages(missing) ?? missing;
      if (left.length > 0) {
        const line = `cannot install ${left.join(', ')} (needs root): sudo apt-get install ${left.join(' ')}`;
        say(line);
        problems.push(line);
      }
    }
  }
  const started = [];
  const up = [];
  for (const [name, port, command] of TEST_SERVICES) {
    if (await portOpen(port)) {
      up.push(name);
      continue;
    }
    const argv = typeof command === 'function' ? command() : command;
    say(`${name} is not answering on port ${port}: starting it (${argv.join(' ')})`);
    spawnSync(argv[0], argv.slice(1), { stdio: 'ignore' });
    if (await waitForPort(port, 60_000)) started.push(name);
    else {
      const line = `${name} did not come up on port ${port}`;
      say(line);
      problems.push(line);
    }
  }
  if (started.length > 0) say(`started ${started.join(', ')}`);
  if (missing?.length === 0 && started.length === 0 && problems.length === 0)
    say(`${TEST_PACKAGES.length} packages present; ${up.join(', ')} up`);
  return problems;
}

// run directly: `node scripts/test-services.mjs`
if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = await ensureTestServices();
  process.exit(problems.length > 0 ? 1 : 0);
}
