import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { typescriptArgs } from '../../runtime/node-typescript.ts';
import { runtimeBinaries } from './binaries.ts';
import { ferretdbSpec, postgresSpec } from './postgres.ts';
import { freePort, Supervisor, waitForHttp, waitForTcp } from './processes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface StackOptions {
  /** Public port of the (first) api app. */
  port: number;
  /** Working directory: logs, rendered components, Redis and PostgreSQL data, the dev outbox. */
  dir: string;
  /** Extra environment for the apps (SMTP_URL, PUBLIC_URL, API_RATE_PER_MINUTE, …). */
  env?: Record<string, string>;
  /** Use this MongoDB instead of starting FerretDB. */
  mongodbUrl?: string;
  /** api replicas, each behind its own sidecar, sharing one app id (default 1). */
  apiReplicas?: number;
  /** mailer replicas, each behind its own sidecar, sharing one app id and so one consumer group (default 1). */
  mailerReplicas?: number;
  /** More apps behind their own sidecars on the same runtime (tests host probe actors this way). */
  extraApps?: { name: string; appId: string; entry: string }[];
  logLevel?: string;
}

export interface Stack {
  /** The public URL of each api replica; the first is "the" API. */
  apiUrls: string[];
  /** Where the (first) mailer app serves /health and /metrics. */
  mailerUrl: string;
  /** The same for every mailer replica; the first is `mailerUrl`. */
  mailerUrls: string[];
  supervisor: Supervisor;
  /**
   * Process names, for kill/restart: `api-0`, `daprd-api-0`, `mailer`, `daprd-mailer`, …; the
   * mailer replicas after the first are `mailer-1`, `daprd-mailer-1`, …
   */
  names: { api: string[]; apiSidecars: string[]; mailer: string; mailerSidecar: string; mailers: string[]; mailerSidecars: string[] };
  /** The HTTP port of each app's sidecar, by process name of the app. */
  sidecarHttpPorts: Record<string, number>;
  /** The app channel port (APP_PORT) of each app, where its sidecar calls it, by process name. */
  appPorts: Record<string, number>;
  mongodbUrl: string;
  redisUrl: string;
  stop(): Promise<void>;
}

/**
 * The distributed deployment on one machine, from local binaries: Redis, Dapr placement and
 * scheduler, FerretDB on PostgreSQL (or MONGODB_URL), and the api and mailer apps each behind its own daprd.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const bin = runtimeBinaries();
  const dir = options.dir;
  await mkdir(join(dir, 'logs'), { recursive: true });
  const supervisor = new Supervisor(join(dir, 'logs'));
  const logLevel = options.logLevel ?? 'warn';
  const hostEnv = { DAPR_HOST_IP: '127.0.0.1' };

  try {
    const redisPort = await freePort();
    await mkdir(join(dir, 'redis'), { recursive: true });
    await supervisor.start({
      name: 'redis',
      command: bin.redisServer,
      // Every write on disk before Redis answers it (README, "Distributed mode": durability).
      args: ['--port', String(redisPort), '--bind', '127.0.0.1', '--dir', join(dir, 'redis'), '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''],
      ready: () => waitForTcp(redisPort),
    });

    const loopback = ['--listen-address', '127.0.0.1', '--healthz-listen-address', '127.0.0.1', '--metrics-listen-address', '127.0.0.1'];
    const [placementPort, placementHealth, placementMetrics, raftPort] = await ports(4);
    const [schedulerPort, schedulerHealth, schedulerMetrics, etcdClient, etcdPeer] = await ports(5);
    await Promise.all([
      supervisor.start({
        name: 'placement',
        command: bin.placement,
        args: [
          ...loopback, '--port', String(placementPort), '--healthz-port', String(placementHealth), '--metrics-port', String(placementMetrics),
          '--id', 'dapr-placement-0', '--initial-cluster', `dapr-placement-0=127.0.0.1:${raftPort}`, '--log-level', logLevel,
        ],
        env: hostEnv,
        ready: () => waitForHttp(`http://127.0.0.1:${placementHealth}/healthz`),
      }),
      supervisor.start({
        name: 'scheduler',
        command: bin.scheduler,
        args: [
          ...loopback, '--port', String(schedulerPort), '--healthz-port', String(schedulerHealth), '--metrics-port', String(schedulerMetrics),
          '--id', 'dapr-scheduler-server-0', '--etcd-data-dir', join(dir, 'scheduler'),
          '--etcd-client-listen-address', '127.0.0.1', '--etcd-client-port', String(etcdClient),
          '--etcd-initial-cluster', `dapr-scheduler-server-0=http://127.0.0.1:${etcdPeer}`,
          '--override-broadcast-host-port', `127.0.0.1:${schedulerPort}`, '--log-level', logLevel,
        ],
        env: hostEnv,
        ready: () => waitForHttp(`http://127.0.0.1:${schedulerHealth}/healthz`),
      }),
      startMongo(),
    ]);

    /** FerretDB on PostgreSQL (which pushes equality on top-level fields down to SQL; on SQLite it scanned). */
    async function startMongo(): Promise<void> {
      if (options.mongodbUrl) return;
      const [postgresPort, mongoPort] = await ports(2);
      const postgres = await postgresSpec(bin.postgresBin, join(dir, 'postgres'), postgresPort);
      await supervisor.start(postgres);
      await supervisor.start(ferretdbSpec(bin.ferretdb, mongoPort, postgres.url));
      options.mongodbUrl = `mongodb://127.0.0.1:${mongoPort}/mailroom`;
    }

    const components = await renderComponents(dir, `127.0.0.1:${redisPort}`);
    const appEnv = {
      MAILROOM_MODE: 'distributed',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      MONGODB_URL: options.mongodbUrl!,
      DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: logLevel,
      ...options.env,
    };

    /** One app behind one sidecar; `publicPort` is its PORT: the API, or the mailer's /health. */
    const replicas = options.apiReplicas ?? 1;
    const apiPorts = [options.port, ...(await ports(replicas - 1))];
    const mailerPorts = await ports(options.mailerReplicas ?? 1);
    const mailerNames = mailerPorts.map((_, i) => (i === 0 ? 'mailer' : `mailer-${i}`));
    const inboundOff = (options.env?.INBOUND_SMTP_PORT ?? process.env.INBOUND_SMTP_PORT) === '0';
    const apps: { name: string; appId: string; entry: string; publicPort: number; readyPath?: string; env?: Record<string, string> }[] = [
      ...apiPorts.map((publicPort, i) => ({ name: `api-${i}`, appId: 'mailroom-api', entry: 'apps/api/main.ts', publicPort, readyPath: '/health' })),
      ...mailerPorts.map((publicPort, i) => ({ name: mailerNames[i]!, appId: 'mailroom-mailer', entry: 'apps/mailer/main.ts', publicPort, readyPath: '/health' })),
      ...(await Promise.all(
        (options.extraApps ?? []).map(async (extra) => ({ ...extra, publicPort: await freePort(), readyPath: undefined })),
      )),
    ];
    // Every mailer after the first is a pod of its own: its own DATA_DIR (the commit log is one
    // process's record) and its own inbound SMTP port, unless the listener is off.
    for (const app of apps.filter((a) => a.appId === 'mailroom-mailer' && a.name !== 'mailer')) {
      app.env = { DATA_DIR: join(dir, `data-${app.name}`), ...(inboundOff ? {} : { INBOUND_SMTP_PORT: String(await freePort()) }) };
    }
    const sidecars = new Map<string, number[]>();
    for (const app of apps) sidecars.set(app.name, await ports(5));
    const config = await writeDaprConfig(dir, apps.map((app) => ({ appId: app.appId, internalPort: sidecars.get(app.name)![3] })));

    const sidecarHttpPorts: Record<string, number> = {};
    const appPorts: Record<string, number> = {};
    const startApp = async (name: string, appId: string, entry: string, publicPort: number, readyPath?: string, env?: Record<string, string>) => {
      const [appPort, httpPort, grpcPort, internalPort, metricsPort] = sidecars.get(name)!;
      sidecarHttpPorts[name] = httpPort;
      appPorts[name] = appPort;
      const sidecar = supervisor.start({
        name: `daprd-${name}`,
        command: bin.daprd,
        args: [
          '--app-id', appId, '--app-port', String(appPort), '--app-protocol', 'http', '--app-channel-address', '127.0.0.1',
          '--dapr-http-port', String(httpPort), '--dapr-grpc-port', String(grpcPort),
          '--dapr-internal-grpc-listen-address', '127.0.0.1', '--dapr-internal-grpc-port', String(internalPort),
          '--metrics-listen-address', '127.0.0.1', '--metrics-port', String(metricsPort),
          '--dapr-listen-addresses', '127.0.0.1', '--config', config,
          '--placement-host-address', `127.0.0.1:${placementPort}`,
          '--scheduler-host-address', `127.0.0.1:${schedulerPort}`,
          '--resources-path', components, '--log-level', logLevel,
        ],
        env: hostEnv,
        ready: () => waitForHttp(`http://127.0.0.1:${httpPort}/v1.0/healthz/outbound`),
      });
      const app = supervisor.start({
        name,
        command: process.execPath,
        args: [...typescriptArgs, entry],
        cwd: ROOT,
        env: { ...appEnv, ...env, PORT: String(publicPort), APP_PORT: String(appPort), DAPR_HTTP_PORT: String(httpPort), DAPR_GRPC_PORT: String(grpcPort) },
        // The sidecar is healthy once it reached the app and loaded its actors and subscriptions.
        ready: () => waitForHttp(readyPath ? `http://127.0.0.1:${publicPort}${readyPath}` : `http://127.0.0.1:${httpPort}/v1.0/healthz`),
      });
      await Promise.all([sidecar, app]);
    };

    for (const app of apps) await startApp(app.name, app.appId, app.entry, app.publicPort, app.readyPath, app.env);

    return {
      apiUrls: apiPorts.map((p) => `http://127.0.0.1:${p}`),
      mailerUrl: `http://127.0.0.1:${mailerPorts[0]}`,
      mailerUrls: mailerPorts.map((p) => `http://127.0.0.1:${p}`),
      supervisor,
      names: {
        api: apiPorts.map((_, i) => `api-${i}`),
        apiSidecars: apiPorts.map((_, i) => `daprd-api-${i}`),
        mailer: 'mailer',
        mailerSidecar: 'daprd-mailer',
        mailers: mailerNames,
        mailerSidecars: mailerNames.map((name) => `daprd-${name}`),
      },
      sidecarHttpPorts,
      appPorts,
      mongodbUrl: appEnv.MONGODB_URL,
      redisUrl: appEnv.REDIS_URL,
      // Apps, then their sidecars, then the rest, each tier at once: one by one, the sidecars'
      // graceful shutdowns (5 s each) and the scheduler's added up past the 15 s a benchmark waits
      // before it kills this process, which left the infrastructure running (and the scheduler's
      // etcd locked for the next start in the same directory).
      stop: async () => {
        await Promise.all(apps.map((app) => supervisor.stop(app.name, 5_000)));
        await Promise.all(apps.map((app) => supervisor.stop(`daprd-${app.name}`, 5_000)));
        await Promise.all(supervisor.names().map((name) => supervisor.stop(name, 5_000)));
        await supervisor.stopAll(); // nothing left to stop; forgets the exit hook
      },
    };
  } catch (err) {
    await supervisor.stopAll();
    throw err;
  }
}

async function ports(n: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const p = await freePort();
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/** The components of components/, pointed at this stack's Redis. */
async function renderComponents(dir: string, redisAddress: string): Promise<string> {
  const source = join(ROOT, 'components');
  const target = join(dir, 'components');
  await mkdir(target, { recursive: true });
  for (const file of await readdir(source)) {
    if (!file.endsWith('.yaml')) continue;
    const text = await readFile(join(source, file), 'utf8');
    await writeFile(join(target, file), text.replaceAll('localhost:6379', redisAddress));
  }
  return target;
}

/**
 * The sidecars' Configuration. Name resolution maps each app id to its sidecar on loopback:
 * daprd's default resolver, mDNS, would announce itself by multicast on every network interface.
 */
async function writeDaprConfig(dir: string, apps: { appId: string; internalPort: number }[]): Promise<string> {
  const first = new Map<string, number>();
  for (const app of apps) if (!first.has(app.appId)) first.set(app.appId, app.internalPort);
  const branches = [...first].map(([appId, port], i) => `${i === 0 ? '{{if' : '{{else if'} eq .ID "${appId}"}}127.0.0.1:${port}`).join('');
  const file = join(dir, 'config.yaml');
  await writeFile(
    file,
    [
      'apiVersion: dapr.io/v1alpha1',
      'kind: Configuration',
      'metadata:',
      '  name: mailroom-local',
      'spec:',
      '  nameResolution:',
      '    component: kubernetes',
      '    configuration:',
      `      template: '${branches}{{end}}'`,
      '',
    ].join('\n'),
  );
  return file;
}
