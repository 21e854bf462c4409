// Fuzzes the API from its own OpenAPI document with schemathesis (run through scripts/fuzz.sh,
// which installs it). Starts the embedded platform on a free port with a fresh data directory, an
// SMTP sink and a DNS server; signs a user up and verifies them through the email the sink
// receives; seeds a project with one object of each kind so listings have something to shape;
// then runs `st run` against /openapi.json with a credential for each security scheme. Exits with
// schemathesis' status: non-zero on a server error or a response that breaks its declared schema.
//
//   FUZZ_MAX_EXAMPLES   cases per operation and phase (default 50: about a minute on two cores)
//   FUZZ_SEED           schemathesis seed, to replay a run (CI=true: a fixed one, so CI is repeatable)
//   FUZZ_CHECKS         schemathesis checks (default: server errors, response schema, documented
//                       status, content type; `all` adds its stricter and stateful ones)
//   FUZZ_KEEP=1         keep the data directory (server log: DATA_DIR/server.log)
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { boot } from '../runtime/boot.ts';
import { loadConfig } from '../runtime/config.ts';
import { embeddedAdapters } from '../runtime/embedded.ts';
import { newProject } from '../test/harness/accounts.ts';
import { ApiClient } from '../test/harness/client.ts';
import { startDnsServer } from '../test/harness/dns-server.ts';
import { verifiedDomain } from '../test/harness/domains.ts';
import type { Instance } from '../test/harness/instance.ts';
import { startSmtpSink } from '../test/harness/smtp-sink.ts';
import { freePort } from './stack/processes.ts';

const st = process.env.SCHEMATHESIS_BIN;
if (!st) {
  console.error('scripts/fuzz.ts: run it through scripts/fuzz.sh (SCHEMATHESIS_BIN is not set)');
  process.exit(2);
}

const fuzzSeed = process.env.FUZZ_SEED ?? (process.env.CI ? '7' : undefined);

/** Operations left out: they end the credential the rest of the run uses. */
const EXCLUDED = ['postAuthLogout', 'deleteAuthSession', 'postProjectsIdKeysRotate'];

const dataDir = await mkdtemp(join(tmpdir(), 'mailroom-fuzz-'));
const smtp = await startSmtpSink();
const dns = await startDnsServer();
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const config = loadConfig({
  ...process.env,
  PORT: String(port),
  DATA_DIR: dataDir,
  SMTP_URL: smtp.url,
  DNS_SERVERS: dns.address,
  PUBLIC_URL: url,
  // The fuzzer sends far more than 1,000 requests a minute; a 429 would only hide the routes.
  API_RATE_PER_MINUTE: '0',
  // HTTP only: no inbound SMTP listener, so a fuzz run beside `npm start` does not fight for 2525.
  INBOUND_SMTP_PORT: '0',
});
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination({ dest: join(dataDir, 'server.log'), sync: true }));
const running = await boot(config, await embeddedAdapters(config, log), { api: true, mailer: true }, log);

let status = 1;
try {
  const instance = { url, api: new ApiClient(url), smtp, dns, dataDir, env: {} } as unknown as Instance;
  const project = await newProject(instance, 'Fuzzed');
  const seeded = await seed(instance, project);

  const configFile = join(dataDir, 'schemathesis.toml');
  await writeFile(
    configFile,
    [
      '[auth.openapi.secretKey]',
      `bearer = "${project.secretKey}"`,
      '[auth.openapi.publicKey]',
      `bearer = "${project.publicKey}"`,
      '[auth.openapi.userToken]',
      `bearer = "${project.token}"`,
      '',
      ...pinnedReads((await instance.api.get('/openapi.json')).body, { ...seeded, projectId: project.projectId }),
    ].join('\n'),
  );
  const args = [
    '--config-file', configFile,
    'run', `${url}/openapi.json`,
    '--checks', process.env.FUZZ_CHECKS ?? 'not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance',
    '--phases', 'examples,coverage,fuzzing',
    '--max-examples', process.env.FUZZ_MAX_EXAMPLES ?? '50',
    // One worker: with two, hypothesis raising the (process-wide) recursion limit in one thread
    // while the other parses source for a repr made CPython 3.11's ast.parse fail now and then
    // ("AST constructor recursion depth mismatch", a runtime error of the fuzzer, not the API).
    '--workers', '1',
    '--request-timeout', '30',
    '--suppress-health-check', 'too_slow,filter_too_much,data_too_large',
    '--generation-database', 'none',
    '--no-color',
    ...(fuzzSeed ? ['--seed', fuzzSeed] : []),
    ...EXCLUDED.flatMap((id) => ['--exclude-operation-id', id]),
  ];
  console.log(`fuzzing ${url} (data: ${dataDir})`);
  status = await new Promise<number>((resolve) => {
    const child = spawn(st, args, { stdio: 'inherit', cwd: dataDir });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  if (status !== 0) {
    const serverLog = await readFile(join(dataDir, 'server.log'), 'utf8').catch(() => '');
    const errors = serverLog.split('\n').filter((l) => l.includes('"level":50'));
    if (errors.length) console.error(`\nserver errors (${errors.length}), first ones:\n${errors.slice(0, 5).join('\n')}`);
  }
} finally {
  await running.close();
  await smtp.close();
  await dns.close();
  if (process.env.FUZZ_KEEP) console.log(`kept ${dataDir}`);
  else await rm(dataDir, { recursive: true, force: true });
}
process.exit(status);

/**
 * Read-only operations with path parameters get the seeded objects' ids instead of random ones,
 * so their responses are real objects checked against the schema, not only 404s. (Writes keep
 * random ids: a DELETE would take the objects away from the rest of the run.)
 */
function pinnedReads(doc: { paths: Record<string, Record<string, unknown>> }, ids: Record<string, string | undefined>): string[] {
  const byPath: [RegExp, Record<string, string | undefined>][] = [
    [/^\/contacts\/import\//, { jobId: ids.importJobId }],
    [/^\/contacts\/bulk\//, { jobId: ids.bulkJobId }],
    [/^\/contacts\//, { id: ids.contactId }],
    [/^\/events\/contact\//, { contactId: ids.contactId }],
    [/^\/segments\//, { id: ids.segmentId }],
    [/^\/campaigns\//, { id: ids.campaignId }],
    [/^\/templates\//, { id: ids.templateId }],
    [/^\/workflows\//, { id: ids.workflowId }],
    [/^\/webhooks\//, { id: ids.webhookId }],
    [/^\/domains\/project\//, { projectId: ids.projectId }],
    [/^\/domains\//, { id: ids.domainId }],
    [/^\/projects\//, { id: ids.projectId }],
  ];
  const lines: string[] = [];
  for (const path of Object.keys(doc.paths)) {
    if (!doc.paths[path].get || !path.includes('{')) continue;
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    const values = byPath.find(([re]) => re.test(path))?.[1] ?? {};
    if (!names.every((n) => values[n])) continue;
    lines.push('[[operations]]', `include-name = "GET ${path}"`, `parameters = { ${names.map((n) => `${n} = "${values[n]}"`).join(', ')} }`, '');
  }
  return lines;
}

/** One object of each kind, so the listings the fuzzer calls return real items to check. */
async function seed(instance: Instance, project: Awaited<ReturnType<typeof newProject>>): Promise<Record<string, string | undefined>> {
  const api = project.api;
  const must = async (what: string, res: Promise<{ status: number; body: unknown }>) => {
    const r = await res;
    if (r.status >= 300) throw new Error(`seeding ${what} failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as { data: Record<string, any> };
  };
  const domain = await verifiedDomain(instance, project);
  const from = `news@${domain.domain}`;
  const contact = await must('a contact', api.post('/contacts', { email: 'ann@example.com', data: { plan: 'pro', seats: 3, trial: false } }));
  await must('an event', api.post('/v1/track', { email: 'ann@example.com', event: 'signed-up', data: { source: 'ad', once: { value: 1, persistent: false } } }));
  const template = await must('a template', api.post('/templates', { name: 'Welcome', subject: 'Hi {{email}}', body: '<p>Hello</p>', from }));
  const segment = await must('a dynamic segment', api.post('/segments', { name: 'Pro', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } }));
  await must('a static segment', api.post('/segments', { name: 'Hand picked', type: 'STATIC' }));
  const campaign = await must('a campaign', api.post('/campaigns', { name: 'Launch', subject: 'News', body: '<p>News</p>', from, audienceType: 'ALL' }));
  await must('an email', api.post('/v1/send', { to: 'ann@example.com', from, subject: 'Receipt', body: '<p>Thanks</p>' }));
  const bulk = await must('a bulk job', api.post('/contacts/bulk-subscribe', { contactIds: [contact.data.id] }));
  const form = new FormData();
  form.append('file', new Blob(['email,plan\nbob@example.com,free\n'], { type: 'text/csv' }), 'contacts.csv');
  const imported = await must('an import job', api.post('/contacts/import', undefined, { raw: form }));
  const workflow = await api.post('/workflows', { name: 'Onboarding', eventName: 'signed-up' });
  // An endpoint on a loopback address: the guard refuses each attempt at once, so its log has entries.
  const webhook = await must('a webhook', api.post('/webhooks', { url: `${instance.url}/hooks`, events: ['signed-up', 'email.*'] }));
  await must('a webhook delivery', api.post(`/webhooks/${webhook.data.id}/test`));
  return {
    contactId: contact.data.id,
    templateId: template.data.id,
    segmentId: segment.data.id,
    campaignId: campaign.data.id,
    bulkJobId: bulk.data.jobId,
    importJobId: imported.data.jobId,
    domainId: domain.id,
    workflowId: workflow.status === 201 ? workflow.body.data.id : undefined,
    webhookId: webhook.data.id,
  };
}
