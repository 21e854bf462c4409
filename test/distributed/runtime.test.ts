// The Dapr adapters on the real runtime: reminders outlive a killed app or sidecar, and the
// api app scales out with one shared request budget.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CommunicationProtocolEnum, DaprClient } from '@dapr/dapr';
import { MongoClient } from 'mongodb';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DaprActorRuntime } from '../../adapters/dapr/actors.ts';
import { RedisStoreChanges } from '../../adapters/redis/store-changes.ts';
import { withRequestId } from '../../runtime/request-context.ts';
import { freePort } from '../../scripts/stack/processes.ts';
import { startStack, type Stack } from '../../scripts/stack/stack.ts';
import { ApiClient, eventually } from '../harness/client.ts';
import { socketsOn } from '../harness/sockets.ts';

async function stackIn(options: Omit<Parameters<typeof startStack>[0], 'dir' | 'port'>) {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-dist-'));
  const stack = await startStack({ ...options, dir, port: await freePort() });
  return { stack, dispose: async () => (await stack.stop(), await rm(dir, { recursive: true, force: true })) };
}

describe('actor reminders on the Dapr runtime', () => {
  let stack: Stack;
  let dispose: () => Promise<void>;
  let mongo: MongoClient;
  let actors: DaprActorRuntime;

  beforeAll(async () => {
    ({ stack, dispose } = await stackIn({ extraApps: [{ name: 'probe', appId: 'mailroom-probe', entry: 'test/fixtures/probe-actor-app.ts' }] }));
    mongo = await new MongoClient(stack.mongodbUrl).connect();
    const client = new DaprClient({
      daprHost: '127.0.0.1',
      daprPort: String(stack.sidecarHttpPorts.probe),
      communicationProtocol: CommunicationProtocolEnum.HTTP,
    });
    actors = new DaprActorRuntime(client);
  });
  afterAll(async () => {
    await mongo?.close();
    await dispose?.();
  });

  const wakes = () => mongo.db().collection<{ _id: string; times: number; actorId: string; reminder: string; requestId?: string | null }>('probe_wakes');
  const woke = (note: string, timeoutMs = 60_000) =>
    eventually(async () => (await wakes().findOne({ _id: note })) ?? undefined, timeoutMs, `the reminder "${note}" to fire`);
  const remind = (actorId: string, note: string, inMs: number) =>
    actors.invoke<{ reminded: number }>('ProbeActor', actorId, 'remind', { inMs, note });

  it('a reminder fires once, on the actor that set it, with its payload', async () => {
    await remind('plain', 'plain', 1_000);
    const wake = await woke('plain');
    expect(wake).toMatchObject({ actorId: 'plain', reminder: 'wake', times: 1 });
    await sleep(3_000);
    expect((await wakes().findOne({ _id: 'plain' }))?.times).toBe(1);
  });

  it("listens for the sidecar on loopback only, and keeps the sidecar's idle connections open", async () => {
    const port = stack.appPorts.probe!;
    // Actor calls on the app channel are not authenticated: no other interface may reach it.
    expect((await socketsOn(port, 'listening')).map((socket) => socket.localAddress)).toEqual(['0100007F']);
    // The sidecar pools its connections to the app for 90 s and does not retry a POST that meets
    // one the app has just closed, so an idle spell past Node's 5 s default must leave them open.
    await remind('pooled', 'pooled', 600_000);
    const pooled = (await socketsOn(port, 'established')).map((socket) => socket.peerPort);
    expect(pooled.length).toBeGreaterThan(0);
    await sleep(7_000);
    expect((await socketsOn(port, 'established')).map((socket) => socket.peerPort)).toEqual(expect.arrayContaining(pooled));
  });

  it("a call and the reminder it sets carry the caller's request id across the sidecars", async () => {
    expect(await withRequestId('req-probe', () => remind('traced', 'traced', 500))).toEqual({ reminded: 1, requestId: 'req-probe' });
    expect(await woke('traced')).toMatchObject({ actorId: 'traced', requestId: 'req-probe' });
    await remind('untraced', 'untraced', 500);
    expect((await woke('untraced')).requestId ?? null).toBeNull();
  });

  it('a reminder due while its app is down fires once the app is back, and the state is kept', async () => {
    expect(await remind('app-crash', 'first', 60_000)).toEqual({ reminded: 1 });
    await remind('app-crash', 'app-crash', 2_000);
    await stack.supervisor.kill('probe');
    // The due time passes with no app to call, and stays past for longer than Dapr's default
    // failure policy (3 tries a second apart) would keep the reminder.
    await sleep(9_000);
    expect(await wakes().findOne({ _id: 'app-crash' })).toBeNull();
    await stack.supervisor.restart('probe');
    expect(await woke('app-crash')).toMatchObject({ actorId: 'app-crash', times: 1 });
    // The actor's state lived through the crash in the Redis state store.
    expect(await remind('app-crash', 'after', 60_000)).toEqual({ reminded: 3 });
  });

  it('a reminder due while the sidecar is down fires once the sidecar is back', async () => {
    await remind('sidecar-crash', 'sidecar-crash', 2_000);
    await stack.supervisor.kill('daprd-probe');
    await sleep(9_000);
    expect(await wakes().findOne({ _id: 'sidecar-crash' })).toBeNull();
    await stack.supervisor.restart('daprd-probe');
    expect(await woke('sidecar-crash')).toMatchObject({ actorId: 'sidecar-crash', times: 1 });
  });
});

describe('two api replicas', () => {
  let stack: Stack;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    ({ stack, dispose } = await stackIn({ apiReplicas: 2, env: { API_RATE_PER_MINUTE: '6' } }));
  });
  afterAll(() => dispose?.());

  it('share one per-project request budget and one view of the data', async () => {
    const [one, two] = stack.apiUrls.map((url) => new ApiClient(url));
    const signup = await one.post('/auth/signup', { email: 'ops@example.com', password: 'correct horse battery' });
    expect(signup.status).toBe(201);
    const project = await two.post('/projects', { name: 'Scaled' }, { auth: signup.body.data.token });
    expect(project.status).toBe(201);
    const key = project.body.data.secretKey as string;

    // Six calls of the budget, alternating replicas; each replica sees the other's writes.
    const created = await one.post('/contacts', { email: 'ann@example.com' }, { auth: key });
    expect(created.status).toBe(201);
    expect((await two.get(`/contacts/${created.body.data.id}`, { auth: key })).status).toBe(200);
    expect((await two.post('/v1/track', { email: 'ann@example.com', event: 'paid' }, { auth: key })).status).toBe(200);
    expect((await one.get('/events', { auth: key })).body.data.map((e: { name: string }) => e.name)).toEqual(['paid']);
    expect((await two.get('/contacts', { auth: key })).status).toBe(200);
    expect((await one.get('/contacts', { auth: key })).status).toBe(200);

    // The seventh is refused on either replica: the budget is one, in Redis.
    for (const replica of [two, one]) {
      const refused = await replica.get('/contacts', { auth: key });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
  });

  it('refuse a key rotated on the other replica at once, though each caches the key lookup', async () => {
    const [one, two] = stack.apiUrls.map((url) => new ApiClient(url));
    const login = await one.post('/auth/login', { email: 'ops@example.com', password: 'correct horse battery' });
    const token = login.body.data.token as string;
    const project = await one.post('/projects', { name: 'Rotated' }, { auth: token });
    const old = project.body.data.secretKey as string;
    expect((await two.get('/contacts', { auth: old })).status).toBe(200); // replica two now knows the key

    const rotated = await one.post(`/projects/${project.body.data.id}/keys/rotate`, undefined, { auth: token });
    expect(rotated.status).toBe(200);
    const refused = await two.get('/contacts', { auth: old });
    expect(refused.status).toBe(401);
    expect((await two.get('/contacts', { auth: rotated.body.data.secretKey })).status).toBe(200);
  });

  it('answer a write to a cached collection only once every replica has cleared, and within a second if one never does', async () => {
    const quiet = { warn: () => undefined, info: () => undefined };
    const heard: string[] = [];
    const writer = await RedisStoreChanges.connect(stack.redisUrl, { changed: () => undefined, resync: () => undefined }, quiet);
    const other = await RedisStoreChanges.connect(stack.redisUrl, { changed: (c) => heard.push(c), resync: () => undefined }, quiet);
    // A replica that takes 300 ms to clear, speaking the channel's protocol by hand.
    const late = createClient({ url: stack.redisUrl });
    const lateSubscriber = createClient({ url: stack.redisUrl });
    await Promise.all([late.connect(), lateSubscriber.connect()]);
    let lateCleared = false;
    let mute = false;
    await lateSubscriber.subscribe('mailroom:store:changed', (message) => {
      if (mute) return;
      setTimeout(() => {
        lateCleared = true;
        void late.publish('mailroom:store:cleared', message.split(' ')[1]);
      }, 300);
    });
    try {
      await writer.publish('projects');
      expect(lateCleared).toBe(true);
      expect(heard).toEqual(['projects']);

      mute = true; // now it never answers: the write still answers, at the bound
      const started = performance.now();
      await writer.publish('workflows');
      expect(performance.now() - started).toBeGreaterThanOrEqual(900);
      expect(heard).toEqual(['projects', 'workflows']);
    } finally {
      await Promise.all([writer.close(), other.close(), late.quit(), lateSubscriber.quit()]);
    }
  });
});
