import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitForTcp } from '../../scripts/stack/processes.ts';

const run = promisify(execFile);

export interface Postfix {
  /** `SMTP_URL` for the platform: Postfix's smtpd on loopback, which relays for 127.0.0.0/8. */
  url: string;
  port: number;
  /**
   * Where Postfix delivers each domain's mail: a port on 127.0.0.1 (`.example.com` is every
   * subdomain of example.com, `example.com` the domain itself). Replaces the routes and reloads.
   * A domain with no route is bounced at once (`default_transport = error`): nothing leaves loopback.
   */
  route(routes: Record<string, number>): Promise<void>;
  /** Postfix's log so far (`maillog_file`), for assertions and for the reason of a failure. */
  log(): string;
  stop(): Promise<void>;
}

export interface PostfixOptions {
  routes?: Record<string, number>;
  /**
   * How long a message whose next hop answers 4xx stays queued before Postfix gives up and
   * returns it with a final DSN (`maximal_queue_lifetime`); a delay warning goes after a third.
   */
  queueLifetimeSeconds?: number;
}

/** Debian's Postfix (`scripts/runtime/ensure.sh` installs it): the command, and the daemons it starts. */
const POSTFIX = ['/usr/sbin/postfix', '/usr/lib/postfix/sbin/master'];

/**
 * A private Postfix for one test file, as a real process: its own configuration, queue and data
 * directories under a temp dir (`postfix -c <dir> start-fg`, master in the foreground), smtpd on a
 * free loopback port, no DNS (every next hop is `[127.0.0.1]:port` from the transport map), and
 * timers in seconds so a transient failure becomes a delay warning and then a DSN while a test
 * waits. Fails (never skips) when Postfix is not installed. Needs root: Postfix's master does.
 */
export async function startPostfix(options: PostfixOptions = {}): Promise<Postfix> {
  const missing = POSTFIX.filter((file) => !existsSync(file));
  if (missing.length) throw new Error(`Postfix is not installed (no ${missing.join(', ')}): run scripts/runtime/ensure.sh, or apt-get install postfix`);
  if (userInfo().uid !== 0) throw new Error('a private Postfix needs root (its master process runs as root and drops to the postfix user)');

  // Postfix's daemons run as `postfix` and must reach the queue: the temp dir cannot stay 0700.
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-postfix-'));
  await chmod(dir, 0o755);
  const conf = join(dir, 'conf');
  await mkdir(conf);
  await mkdir(join(dir, 'queue'));
  await mkdir(join(dir, 'data'));
  const owner = await run('id', ['-u', 'postfix']).then((r) => Number(r.stdout.trim()));
  await chown(join(dir, 'data'), owner, -1);

  const port = await freePort();
  const lifetime = options.queueLifetimeSeconds ?? 6;
  await writeFile(join(conf, 'main.cf'), mainCf(dir, lifetime));
  await writeFile(join(conf, 'master.cf'), masterCf(port));
  const transport = join(conf, 'transport');
  await writeFile(transport, transportMap(options.routes ?? {}));

  // Postfix logs to /dev/stdout, which it opens by name: a file, since a socket (what Node's
  // 'pipe' is) cannot be opened that way.
  const logFile = join(dir, 'maillog');
  const out = openSync(logFile, 'a');
  const master: ChildProcess = spawn('/usr/sbin/postfix', ['-c', conf, 'start-fg'], { detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  const exited = new Promise<void>((resolve) => master.once('exit', () => resolve()));
  // A test run that ends without stop() (killed, crashed) leaves no Postfix behind.
  const killGroup = () => {
    try {
      if (master.pid) process.kill(-master.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  process.once('exit', killGroup);
  let lastLog = '';
  const log = () => {
    try {
      lastLog = readFileSync(logFile, 'utf8');
    } catch {
      // removed by stop(): the last read stands
    }
    return lastLog;
  };
  const stop = async () => {
    await run('/usr/sbin/postfix', ['-c', conf, 'stop']).catch(() => {});
    const gone = await Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000))]);
    // The master's children (smtpd, qmgr, smtp…) share its process group.
    if (!gone) killGroup();
    process.removeListener('exit', killGroup);
    log();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await Promise.race([
      waitForTcp(port, 15_000),
      exited.then(() => {
        throw new Error('Postfix exited at start');
      }),
    ]);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${log()}`);
  }

  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    async route(routes) {
      await writeFile(transport, transportMap(routes));
      // texthash maps are read when a daemon starts: a reload makes the new ones take over.
      await run('/usr/sbin/postfix', ['-c', conf, 'reload']);
    },
    log,
    stop,
  };
}

const transportMap = (routes: Record<string, number>) =>
  Object.entries(routes)
    .map(([domain, port]) => `${domain} smtp:[127.0.0.1]:${port}\n`)
    .join('');

function mainCf(dir: string, lifetime: number): string {
  return `# A private relay for tests: loopback only, no DNS, no local delivery, short queue timers.
compatibility_level = 3.6
queue_directory = ${dir}/queue
data_directory = ${dir}/data
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
meta_directory = /etc/postfix
shlib_directory = /usr/lib/postfix
mail_owner = postfix
setgid_group = postdrop
maillog_file = /dev/stdout
myhostname = relay.mailroom.test
mydomain = mailroom.test
myorigin = $myhostname
mydestination =
local_transport = error:no local delivery in this relay
alias_maps =
alias_database =
local_recipient_maps =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
smtp_dns_support_level = disabled
smtp_host_lookup = native
transport_maps = texthash:${dir}/conf/transport
default_transport = error:no route to this domain in the test relay
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
maximal_queue_lifetime = ${lifetime}s
bounce_queue_lifetime = ${lifetime}s
delay_warning_time = ${Math.max(1, Math.floor(lifetime / 3))}s
`;
}

/** The services of Debian's master.cf that a relay uses, none chrooted (the queue is a temp dir). */
function masterCf(port: number): string {
  return `127.0.0.1:${port} inet n - n - - smtpd
pickup    unix  n - n 60    1 pickup
cleanup   unix  n - n -     0 cleanup
qmgr      unix  n - n 300   1 qmgr
rewrite   unix  - - n -     - trivial-rewrite
bounce    unix  - - n -     0 bounce
defer     unix  - - n -     0 bounce
trace     unix  - - n -     0 bounce
verify    unix  - - n -     1 verify
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n -     - proxymap
smtp      unix  - - n -     - smtp
relay     unix  - - n -     - smtp
showq     unix  n - n -     - showq
error     unix  - - n -     - error
retry     unix  - - n -     - error
discard   unix  - - n -     - discard
anvil     unix  - - n -     1 anvil
scache    unix  - - n -     1 scache
postlog   unix-dgram n - n - 1 postlogd
`;
}
