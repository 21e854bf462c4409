/**
 * The project bench/dashboard-screens.ts opens the dashboard on: bench/store-data.ts's contacts
 * (profile data keys, event stats) and events bulk-inserted into the stopped platform's store,
 * then, over the public API with the project's secret key, what a team has made around them:
 * shoppers tracked in the last minutes (the newest contacts, with a timeline), templates,
 * segments (dynamic over data keys, and a static one of the shoppers), campaigns (one sent to
 * the static segment, so it has stats; a draft; a scheduled one), and an enabled onboarding
 * workflow with a condition whose executions wait in its DELAY.
 */
import { ApiClient } from '../test/harness/client.ts';
import { currentTree, openTreeStore, sleep } from './common.ts';
import type { Sink } from './mail-harness.ts';
import { recipientOf } from './send-shared.ts';
import { EventTally, contactBatches, dataFields, eventBatches } from './store-data.ts';

/** Writes `contacts` contacts and `events` events of one project straight into a stopped platform's store. */
export async function bulkLoad(dataDir: string, projectId: string, contacts: number, events: number): Promise<void> {
  const store = await openTreeStore(currentTree(), dataDir);
  try {
    const tally = new EventTally(contacts);
    for (const batch of eventBatches(projectId, contacts, events, tally, 10_000)) await store.collection('events').insertMany(batch);
    for (const batch of contactBatches(projectId, contacts, tally, 10_000)) await store.collection('contacts').insertMany(batch.contacts);
    await store.collection('data_fields').insertMany(dataFields(projectId));
  } finally {
    await store.close();
  }
}

/** What the benchmark's clicks go to: names as the screens show them. */
export interface SideData {
  dynamicSegment: string;
  sentCampaign: string;
  template: string;
  workflow: string;
}

export const SHOPPER_KEY = 'shop';
const PLANS = ['free', 'starter', 'pro', 'team'];
const TRACKED = ['page_view', 'page_view', 'page_view', 'feature_used', 'login', 'page_view', 'purchase', 'feature_used', 'login'];
/** Events tracked per shopper after its signed_up. */
export const TRACKED_PER_SHOPPER = TRACKED.length;

const html = (heading: string, text: string) =>
  `<!doctype html>\n<html><head><style>body{font-family:sans-serif;color:#1f2937}.button{background:#1d4ed8;color:#fff;padding:8px 16px;border-radius:4px}</style></head>\n` +
  `<body><h1>${heading}</h1>\n<p>Hello {{ firstName ?? there }},</p>\n<p>${text}</p>\n` +
  `<p><a class="button" href="https://shop.example/account">Your account</a></p>\n<p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p></body></html>\n`;

/** Calls the API with the secret key; anything but the expected status stops the benchmark, naming the call. */
function caller(api: ApiClient, secretKey: string) {
  return async <T = Record<string, unknown>>(method: 'GET' | 'POST' | 'PATCH', path: string, body: unknown, status: number, what: string): Promise<T> => {
    const res = await api.call(method, path, body, { auth: secretKey });
    if (res.status !== status) throw new Error(`${what}: ${method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body.data as T;
  };
}

/** `count` calls of `call(i)`, `inFlight` at a time. */
async function inParallel(count: number, inFlight: number, call: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < count) await call(next++);
  }));
}

export async function seedOverApi(api: ApiClient, secretKey: string, domain: string, sink: Sink, shoppers: number): Promise<SideData> {
  const call = caller(api, secretKey);
  const from = `hello@${domain}`;
  const template = async (name: string, type: 'TRANSACTIONAL' | 'MARKETING', subject: string, text: string) =>
    (await call<{ id: string }>('POST', '/templates', { name, type, subject, body: html(subject, text), from, fromName: 'Bench Shop' }, 201, `template ${name}`)).id;
  const welcome = await template('Welcome', 'TRANSACTIONAL', 'Welcome to the shop, {{ firstName ?? there }}', 'Your account is ready. Here is what to do first.');
  await template('Receipt', 'TRANSACTIONAL', 'Your receipt', 'Thank you for your order.');
  await template('Password reset', 'TRANSACTIONAL', 'Reset your password', 'Follow the link to choose a new password.');
  const proTips = await template('Pro tips', 'MARKETING', 'Three things pro customers do', 'Reports, alerts and the API: a tour.');
  await template('November newsletter', 'MARKETING', 'What is new in November', 'New integrations, faster exports and a winter sale.');

  // Onboarding: welcome, two days, then pro tips for pro customers; enabled before the shoppers sign up.
  const workflow = await call<{ id: string; steps: { id: string; type: string }[] }>('POST', '/workflows', { name: 'Onboarding', eventName: 'signed_up', enabled: false }, 201, 'the workflow');
  const step = async (body: Record<string, unknown>, y: number) =>
    (await call<{ id: string }>('POST', `/workflows/${workflow.id}/steps`, { position: { x: 0, y }, ...body }, 201, `step ${String(body.name)}`)).id;
  await step({ type: 'SEND_EMAIL', name: 'Welcome email', templateId: welcome, autoConnect: true }, 140);
  await step({ type: 'DELAY', name: 'Two days', config: { amount: 2, unit: 'days' }, autoConnect: true }, 280);
  const isPro = await step({ type: 'CONDITION', name: 'Pro plan?', config: { field: 'data.plan', operator: 'equals', value: 'pro' }, autoConnect: true }, 420);
  const tips = await step({ type: 'SEND_EMAIL', name: 'Pro tips email', templateId: proTips, autoConnect: false }, 560);
  const exit = await step({ type: 'EXIT', name: 'Done', autoConnect: false }, 560);
  for (const [toStepId, branch] of [[tips, 'yes'], [exit, 'no']]) {
    await call('POST', `/workflows/${workflow.id}/transitions`, { fromStepId: isPro, toStepId, condition: { branch } }, 201, `the ${branch} branch`);
  }
  await call('PATCH', `/workflows/${workflow.id}`, { enabled: true }, 200, 'enabling the workflow');

  // The shoppers: signed up (each starts an onboarding execution and gets the welcome email), then browsing.
  const shopper = (i: number) => recipientOf(SHOPPER_KEY, i);
  await inParallel(shoppers, 8, (i) =>
    call('POST', '/v1/track', { email: shopper(i), event: 'signed_up', data: { firstName: `Shopper ${i}`, plan: PLANS[i % PLANS.length], country: i % 3 ? 'DE' : 'FR' } }, 200, 'tracking signed_up'),
  );
  await inParallel(shoppers * TRACKED.length, 8, (k) => {
    const event = TRACKED[k % TRACKED.length];
    const data = event === 'purchase' ? { amount: 10 + (k % 90), currency: 'EUR' } : event === 'page_view' ? { path: ['/', '/pricing', '/docs'][k % 3] } : {};
    return call('POST', '/v1/track', { email: shopper(Math.floor(k / TRACKED.length)), event, data }, 200, `tracking ${event}`);
  });

  const condition = (field: string, value: string) => ({ logic: 'AND', groups: [{ filters: [{ field, operator: 'equals', value }] }] });
  const pro = await call<{ id: string }>('POST', '/segments', { name: 'Pro plan', condition: condition('data.plan', 'pro'), trackMembership: false }, 201, 'the Pro plan segment');
  await call('POST', '/segments', { name: 'Germany', condition: condition('data.country', 'DE') }, 201, 'the Germany segment');
  const picked = await call<{ id: string }>('POST', '/segments', { name: 'Shoppers', type: 'STATIC' }, 201, 'the Shoppers segment');
  await call('POST', `/segments/${picked.id}/members`, { emails: Array.from({ length: shoppers }, (_, i) => shopper(i)) }, 200, 'the static members');

  const campaign = async (name: string, audience: Record<string, unknown>) =>
    (await call<{ id: string }>('POST', '/campaigns', { name, subject: name, body: html(name, 'Our news of the month.'), from, fromName: 'Bench Shop', ...audience }, 200, `campaign ${name}`)).id;
  const sent = await campaign('November newsletter', { audienceType: 'SEGMENT', segmentId: picked.id });
  await campaign('Pro tips for December', { audienceType: 'SEGMENT', segmentId: pro.id });
  const sale = await campaign('Winter sale', { audienceType: 'FILTERED', audienceCondition: condition('data.country', 'DE') });
  await call('POST', `/campaigns/${sale}/send`, { scheduledFor: new Date(Date.now() + 30 * 86_400_000).toISOString() }, 200, 'scheduling the winter sale');
  await call('POST', `/campaigns/${sent}/send`, undefined, 200, 'sending the newsletter');
  // The welcome emails and the newsletter, each shopper's: the sink sees them all before the browser starts.
  await sink.waitFor(SHOPPER_KEY, 2 * shoppers, 60_000);
  for (const deadline = Date.now() + 60_000; ; await sleep(250)) {
    const status = (await call<{ status: string }>('GET', `/campaigns/${sent}`, undefined, 200, 'reading the newsletter')).status;
    if (status === 'SENT') break;
    if (Date.now() > deadline) throw new Error(`the newsletter is ${status}, not SENT, after 60 s`);
  }
  return { dynamicSegment: 'Pro plan', sentCampaign: 'November newsletter', template: 'Welcome', workflow: 'Onboarding' };
}
