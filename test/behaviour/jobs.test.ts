// Import and bulk jobs through the HTTP API: accepted with 202, run in the background, reported
// through their status records, and not lost when the platform is killed mid-run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { allContacts, eventually, type Job, type ApiClient, type ApiResponse, type EventRecord } from '../harness/client.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';

/** How long a job may take to finish. */
const JOB_DEADLINE = byMode({ embedded: 15_000, distributed: 60_000 });

interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, string | number | boolean>;
  createdAt: string;
  updatedAt: string;
}

let seq = 0;
const tag = () => `${++seq}-${Date.now()}`;

function upload(api: ApiClient, csv: string, field = 'file', filename = 'contacts.csv'): Promise<ApiResponse> {
  const form = new FormData();
  form.append(field, new Blob([csv], { type: 'text/csv' }), filename);
  return api.post('/contacts/import', undefined, { raw: form });
}

/** Uploads a CSV, expects the 202 and waits for the job to finish; returns its final record. */
async function importCsv(api: ApiClient, csv: string, timeoutMs = JOB_DEADLINE): Promise<Job> {
  const res = await upload(api, csv);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return finished(api, `/contacts/import/${res.body.data.jobId}`, timeoutMs);
}

async function finished(api: ApiClient, path: string, timeoutMs = JOB_DEADLINE): Promise<Job> {
  return eventually(
    async () => {
      const res = await api.get(path);
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
      const job = res.body.data as Job;
      if (job.status === 'FAILED') throw new Error(`job failed: ${JSON.stringify(job)}`);
      return job.status === 'COMPLETED' ? job : undefined;
    },
    timeoutMs,
    `${path} to complete`,
  );
}

async function byEmail(api: ApiClient, email: string): Promise<Contact[]> {
  const res = await api.get(`/contacts?limit=100&search=${encodeURIComponent(email)}`);
  expect(res.status).toBe(200);
  return (res.body.data.contacts as Contact[]).filter((c) => c.email === email);
}
async function one(api: ApiClient, email: string): Promise<Contact> {
  const found = await byEmail(api, email);
  expect(found, email).toHaveLength(1);
  return found[0];
}
const eventNames = async (api: ApiClient, id: string): Promise<string[]> => {
  const res = await api.get(`/events/contact/${id}`);
  expect(res.status).toBe(200);
  return (res.body.data as EventRecord[]).map((e) => e.name);
};


describe('jobs on a running platform', () => {
  let instance: Instance;
  let a: ProjectAccess;
  let b: ProjectAccess;

  beforeAll(async () => {
    instance = await startInstance();
    a = await newProject(instance, 'A');
    b = await newProject(instance, 'B');
  });
  afterAll(() => instance.dispose());

  describe('CSV import', () => {
    it('accepts the file with 202 and a jobId, and the job reports exact counts, typed data and row errors', async () => {
      const t = tag();
      const csv = [
        'email,name,age,vip,joined,zip,subscribed',
        `ann-${t}@example.com,Ann,31,true,2024-01-02T03:04:05Z,01234,false`,
        `BOB-${t}@Example.COM,Bob,,FALSE,,98765,yes`,
        `not-an-email,X,1,,,,`,
        `carol-${t}@example.com,Carol,2.5,,,,`,
        `dave-${t}@example.com,Dave,,,,,maybe`,
      ].join('\n');
      const res = await upload(a.api, csv);
      expect(res.status).toBe(202);
      expect(res.body.success).toBe(true);
      expect(typeof res.body.message).toBe('string');
      const { jobId } = res.body.data;
      expect(typeof jobId).toBe('string');
      expect(res.body.data.id).toBe(jobId);
      expect(res.body.data.type).toBe('IMPORT');

      const job = await finished(a.api, `/contacts/import/${jobId}`);
      expect(job).toMatchObject({ id: jobId, type: 'IMPORT', status: 'COMPLETED', total: 5, processed: 5, created: 3, updated: 0, failed: 2 });
      expect(job.errors.map((e) => e.row)).toEqual([4, 6]);
      expect(job.errors.every((e) => typeof e.message === 'string' && e.message.length > 0)).toBe(true);
      expect(typeof job.finishedAt).toBe('string');

      const ann = await one(a.api, `ann-${t}@example.com`);
      expect(ann.subscribed).toBe(false);
      expect(ann.data).toStrictEqual({ name: 'Ann', age: 31, vip: true, joined: '2024-01-02T03:04:05Z', zip: '01234' });
      const bob = await one(a.api, `bob-${t}@example.com`);
      expect(bob.subscribed).toBe(true);
      expect(bob.data).toStrictEqual({ name: 'Bob', vip: false, zip: 98765 });
      const carol = await one(a.api, `carol-${t}@example.com`);
      expect(carol.subscribed).toBe(true);
      expect(carol.data).toStrictEqual({ name: 'Carol', age: 2.5 });
      expect(await byEmail(a.api, `dave-${t}@example.com`)).toHaveLength(0);
      // Importing a contact is creating it: no subscription event even for subscribed=false.
      expect(await eventNames(a.api, ann.id)).toEqual([]);
    });

    it.each([
      ['LF', '\n'],
      ['CRLF', '\r\n'],
    ])('row errors carry the line of the file, counting blank lines and quoted multi-line cells (%s)', async (_name, eol) => {
      const t = tag();
      const csv = [
        'email,note',
        `first-${t}@example.com,"two`,
        `lines"`,
        '',
        '   ',
        'broken@,x',
        `last-${t}@example.com,ok`,
        'also broken,y',
        '',
      ].join(eol);
      const job = await importCsv(a.api, csv);
      expect(job).toMatchObject({ total: 4, processed: 4, created: 2, failed: 2 });
      expect(job.errors.map((e) => e.row)).toEqual([6, 8]);
      expect((await one(a.api, `first-${t}@example.com`)).data).toEqual({ note: `two${eol}lines` });
    });

    it('re-importing updates the existing contacts (updated count), merges data and never duplicates', async () => {
      const t = tag();
      const first = await importCsv(a.api, [`email,plan,seats`, `x-${t}@example.com,free,1`, `y-${t}@example.com,free,2`].join('\n'));
      expect(first).toMatchObject({ total: 2, created: 2, updated: 0, failed: 0 });
      const x = await one(a.api, `x-${t}@example.com`);
      const second = await importCsv(
        a.api,
        [`email,plan,city`, `X-${t}@example.com,pro,Oslo`, `y-${t}@example.com,,`, `z-${t}@example.com,free,Rome`].join('\n'),
      );
      expect(second).toMatchObject({ total: 3, processed: 3, created: 1, updated: 2, failed: 0 });
      const x2 = await one(a.api, `x-${t}@example.com`);
      expect(x2.id).toBe(x.id);
      expect(x2.data).toEqual({ plan: 'pro', seats: 1, city: 'Oslo' });
      // Empty cells set nothing, so they do not erase what the contact has.
      expect((await one(a.api, `y-${t}@example.com`)).data).toEqual({ plan: 'free', seats: 2 });
      expect((await one(a.api, `z-${t}@example.com`)).data).toEqual({ plan: 'free', city: 'Rome' });
    });

    it('a subscribed column changes existing contacts (with the subscription event); without it they keep their state', async () => {
      const t = tag();
      const sub = `sub-${t}@example.com`;
      const unsub = `unsub-${t}@example.com`;
      expect((await a.api.post('/contacts', { email: sub })).status).toBe(201);
      expect((await a.api.post('/contacts', { email: unsub, subscribed: false })).status).toBe(201);

      const kept = await importCsv(a.api, ['email,plan', `${sub},a`, `${unsub},a`].join('\n'));
      expect(kept).toMatchObject({ updated: 2, failed: 0 });
      expect((await one(a.api, sub)).subscribed).toBe(true);
      expect((await one(a.api, unsub)).subscribed).toBe(false);

      const flipped = await importCsv(a.api, ['email,Subscribed', `${sub},no`, `${unsub},1`].join('\n'));
      expect(flipped).toMatchObject({ updated: 2, failed: 0 });
      const s = await one(a.api, sub);
      const u = await one(a.api, unsub);
      expect(s.subscribed).toBe(false);
      expect(u.subscribed).toBe(true);
      // The subscribed column is the subscription, not a data field.
      expect(s.data).toEqual({ plan: 'a' });
      expect(await eventNames(a.api, s.id)).toEqual(['contact.unsubscribed']);
      expect(await eventNames(a.api, u.id)).toEqual(['contact.subscribed']);
    });

    it('ignores id, createdAt and updatedAt columns (an export can be imported back)', async () => {
      const t = tag();
      const job = await importCsv(a.api, ['id,email,createdAt,updatedAt,plan', `abc,exp-${t}@example.com,2020-01-01,2020-01-02,gold`].join('\n'));
      expect(job).toMatchObject({ created: 1, failed: 0 });
      const c = await one(a.api, `exp-${t}@example.com`);
      expect(c.data).toEqual({ plan: 'gold' });
      expect(c.id).not.toBe('abc');
      expect(c.createdAt.startsWith('2020')).toBe(false);
    });

    it.each([
      ['no email column', 'name,plan\nAnn,free\n'],
      ['an empty file', ''],
      ['a header and no rows', 'email,plan\n'],
      ['a column that cannot be a data key', 'email,a.b\nq@example.com,1\n'],
      ['a managed column', 'email,email\nq@example.com,r@example.com\n'],
      ['a file that is not CSV', 'email,plan\n"unterminated,quote\n'],
      ['a header that does not end within the first 64 KiB', `email,${'x'.repeat(70 * 1024)}\nq@example.com,1\n`],
    ])('a file with %s is a 422 at once and queues nothing', async (_what, csv) => {
      const before = (await a.api.get('/contacts')).body.data.total;
      const res = await upload(a.api, csv);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.errors.length).toBeGreaterThan(0);
      expect(res.body.error.errors.every((e: { field: string }) => e.field.startsWith('file'))).toBe(true);
      expect((await a.api.get('/contacts')).body.data.total).toBe(before);
    });

    it('a request without a file is a 422 naming the file field', async () => {
      const form = new FormData();
      form.append('other', 'email\nx@example.com\n');
      for (const res of [
        await a.api.post('/contacts/import', undefined, { raw: form }),
        await upload(a.api, 'email\nq@example.com\n', 'upload'),
        await a.api.post('/contacts/import', { file: 'email\nq@example.com' }),
        await a.api.post('/contacts/import'),
      ]) {
        expect(res.status, JSON.stringify(res.body)).toBe(422);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
        expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain('file');
      }
      expect(await byEmail(a.api, 'q@example.com')).toHaveLength(0);
    });

    it('a file over 5 MB is a 413 and imports nothing', async () => {
      const t = tag();
      const header = 'email,padding\n';
      const row = (i: number) => `big${i}-${t}@example.com,${'x'.repeat(200)}\n`;
      let csv = header;
      for (let i = 0; csv.length < 6 * 1024 * 1024; i++) csv += row(i);
      const res = await upload(a.api, csv);
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect((await a.api.get(`/contacts?search=${encodeURIComponent(`-${t}@`)}`)).body.data.total).toBe(0);
    });

    it('a file just under 5 MB is accepted', async () => {
      const t = tag();
      // Wide rows (nine values of 9,000 characters, each within the 10,000 limit) reach the size
      // with few rows, so the check is about the size limit, not import speed.
      const columns = Array.from({ length: 9 }, (_, i) => `p${i}`);
      let csv = `email,${columns.join(',')}\n`;
      const pad = columns.map(() => 'y'.repeat(9000)).join(',');
      for (let i = 0; csv.length < 5 * 1024 * 1024 - 90_000; i++) csv += `edge${i}-${t}@example.com,${pad}\n`;
      expect(csv.length).toBeGreaterThan(4.9 * 1024 * 1024);
      const res = await upload(a.api, csv);
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(202);
      // 5000-character strings are within the 10,000 limit: every row is imported.
      const job = await finished(a.api, `/contacts/import/${res.body.data.jobId}`);
      expect(job.failed).toBe(0);
      expect(job.created).toBe(job.total);
    });

    it('the status record shows progress while a large import runs, and the API keeps answering', async () => {
      const t = tag();
      const rows = byMode({ embedded: 3000, distributed: 300 });
      const csv = ['email,n', ...Array.from({ length: rows }, (_, i) => `progress${i}-${t}@example.com,${i}`)].join('\n');
      const res = await upload(a.api, csv);
      expect(res.status).toBe(202);
      // The file is read by the job: until then its rows are not counted.
      expect(res.body.data).toMatchObject({ status: 'QUEUED', total: 0, processed: 0 });
      const seen: Job[] = [];
      await eventually(async () => {
        const job = (await a.api.get(`/contacts/import/${res.body.data.jobId}`)).body.data as Job;
        seen.push(job);
        return job.status === 'COMPLETED' ? job : undefined;
      }, byMode({ embedded: 30_000, distributed: 90_000 }), 'the import to complete');
      const midway = seen.filter((j) => j.status === 'RUNNING' && j.processed > 0 && j.processed < rows);
      expect(midway.length).toBeGreaterThan(0);
      for (let i = 1; i < seen.length; i++) expect(seen[i].processed).toBeGreaterThanOrEqual(seen[i - 1].processed);
      // The counts move together: every processed row is created, updated or failed.
      for (const j of seen) expect(j.created + j.updated + j.failed).toBe(j.processed);
      expect(seen.at(-1)).toMatchObject({ processed: rows, created: rows, failed: 0 });
      expect(seen.filter((j) => j.finishedAt !== null).every((j) => j.status === 'COMPLETED')).toBe(true);
    });

    it('a file that turns out not to be CSV after its first rows fails the job with the reason, and imports none of its rows', async () => {
      const t = tag();
      const csv = ['email,plan', `first-${t}@example.com,free`, `second-${t}@example.com,gold`, `third-${t}@example.com,"never closed`].join('\n');
      const res = await upload(a.api, csv);
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const job = await eventually(async () => {
        const j = (await a.api.get(`/contacts/import/${res.body.data.jobId}`)).body.data as Job;
        return j.status === 'QUEUED' || j.status === 'RUNNING' ? undefined : j;
      }, JOB_DEADLINE, 'the import to end');
      expect(job).toMatchObject({ status: 'FAILED', processed: 0, created: 0, updated: 0, failed: 0 });
      expect(job.finishedAt).not.toBeNull();
      expect(job.errors).toHaveLength(1);
      expect(job.errors[0].message).toMatch(/^The file is not valid CSV: Quote Not Closed: .*line 4/);
      expect(await byEmail(a.api, `first-${t}@example.com`)).toHaveLength(0);
    });

    it.each([
      ['one 4.5 MB cell', (t: string) => `email,notes\nbig-${t}@example.com,"${'x'.repeat(4.5 * 1024 * 1024)}"\n`],
      ['45,000 rows', (t: string) => ['email,subscribed,note', ...Array.from({ length: 45_000 }, (_, i) => `r${i}-${t}@example.com,maybe,${'n'.repeat(50)}`)].join('\n')],
    ])('the file is read in the background: /health answers while the job reads a file of %s', async (_what, file) => {
      const t = tag();
      const res = await upload(a.api, file(t));
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(202);
      const path = `/contacts/import/${res.body.data.jobId}`;
      // A /health answer between two looks at the job that both saw it RUNNING with its rows not
      // counted yet: the server answered while the file was being read.
      let answeredWhileReading = 0;
      const job = await eventually(async () => {
        const before = (await a.api.get(path)).body.data as Job;
        const health = await fetch(`${instance.url}/health`);
        const after = (await a.api.get(path)).body.data as Job;
        const reading = (j: Job) => j.status === 'RUNNING' && j.total === 0;
        if (health.status === 200 && reading(before) && reading(after)) answeredWhileReading++;
        return after.status === 'COMPLETED' || after.status === 'FAILED' ? after : undefined;
      }, JOB_DEADLINE, 'the import to end');
      expect(answeredWhileReading).toBeGreaterThan(0);
      // Every row is refused, as it was when the request read the file, with the reason.
      expect(job).toMatchObject({ status: 'COMPLETED', created: 0, updated: 0 });
      expect(job.failed).toBe(job.total);
      expect(job.errors[0].row).toBe(2);
      expect(job.errors[0].message).toMatch(/Too big: expected string to have <=10000 characters|subscribed must be true or false, got "maybe"/);
    });

    it('another project cannot read the import status; a bulk job id is not an import', async () => {
      const job = await upload(a.api, `email\nstatus-${tag()}@example.com\n`);
      expect(job.status).toBe(202);
      const id = job.body.data.jobId;
      await finished(a.api, `/contacts/import/${id}`);
      expect((await b.api.get(`/contacts/import/${id}`)).status).toBe(404);
      expect((await a.api.get(`/contacts/bulk/${id}`)).status).toBe(404);
      expect((await a.api.get('/contacts/import/no-such-job')).status).toBe(404);
    });
  });

  describe('bulk subscribe, unsubscribe and delete', () => {
    async function contactsOf(api: ApiClient, n: number, prefix: string): Promise<Contact[]> {
      const t = tag();
      const out: Contact[] = [];
      for (let i = 0; i < n; i++) {
        const res = await api.post('/contacts', { email: `${prefix}${i}-${t}@example.com`, data: { i } });
        expect(res.status).toBe(201);
        const { _meta, ...c } = res.body.data;
        out.push(c);
      }
      return out;
    }
    async function bulk(api: ApiClient, action: string, contactIds: string[]): Promise<Job> {
      const res = await api.post(`/contacts/bulk-${action}`, { contactIds });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(res.body.success).toBe(true);
      expect(typeof res.body.data.jobId).toBe('string');
      return finished(api, `/contacts/bulk/${res.body.data.jobId}`);
    }
    const get = (api: ApiClient, id: string) => api.get(`/contacts/${id}`);

    it('unsubscribe then subscribe: every contact changes and records the subscription event', async () => {
      const cs = await contactsOf(a.api, 3, 'bulk-sub');
      const ids = cs.map((c) => c.id);

      const off = await bulk(a.api, 'unsubscribe', ids);
      expect(off).toMatchObject({ type: 'BULK_UNSUBSCRIBE', status: 'COMPLETED', total: 3, processed: 3, updated: 3, created: 0, failed: 0, errors: [] });
      for (const c of cs) {
        const now = (await get(a.api, c.id)).body.data;
        expect(now.subscribed).toBe(false);
        expect(now.data).toEqual(c.data);
        expect(await eventNames(a.api, c.id)).toEqual(['contact.unsubscribed']);
      }

      const on = await bulk(a.api, 'subscribe', ids.slice(0, 2));
      expect(on).toMatchObject({ type: 'BULK_SUBSCRIBE', total: 2, processed: 2, updated: 2, failed: 0 });
      expect((await get(a.api, ids[0])).body.data.subscribed).toBe(true);
      expect((await get(a.api, ids[1])).body.data.subscribed).toBe(true);
      expect((await get(a.api, ids[2])).body.data.subscribed).toBe(false);
      expect(await eventNames(a.api, ids[0])).toEqual(['contact.subscribed', 'contact.unsubscribed']);
      expect(await eventNames(a.api, ids[2])).toEqual(['contact.unsubscribed']);
    });

    it("reports unknown and other-project ids as errors and leaves the other project's contact alone", async () => {
      const [mine] = await contactsOf(a.api, 1, 'bulk-mine');
      const [theirs] = await contactsOf(b.api, 1, 'bulk-theirs');
      const unknown = '01900000-0000-7000-8000-000000000001';
      const job = await bulk(a.api, 'unsubscribe', [mine.id, theirs.id, unknown, mine.id]);
      // The duplicate id counts once.
      expect(job).toMatchObject({ total: 3, processed: 3, updated: 1, failed: 2 });
      expect(job.errors.map((e) => e.contactId).sort()).toEqual([theirs.id, unknown].sort());
      expect(job.errors.every((e) => e.message.length > 0)).toBe(true);
      expect((await get(a.api, mine.id)).body.data.subscribed).toBe(false);
      expect((await get(b.api, theirs.id)).body.data.subscribed).toBe(true);
      expect(await eventNames(b.api, theirs.id)).toEqual([]);

      const del = await bulk(a.api, 'delete', [theirs.id]);
      expect(del).toMatchObject({ total: 1, updated: 0, failed: 1 });
      expect((await get(b.api, theirs.id)).status).toBe(200);
    });

    it('delete removes the contacts and their events, and only those', async () => {
      const cs = await contactsOf(a.api, 3, 'bulk-del');
      for (const c of cs) expect((await a.api.post('/v1/track', { email: c.email, event: 'bulk-del-seen' })).status).toBe(200);
      const job = await bulk(a.api, 'delete', [cs[0].id, cs[2].id]);
      expect(job).toMatchObject({ type: 'BULK_DELETE', total: 2, processed: 2, updated: 2, failed: 0 });
      expect((await get(a.api, cs[0].id)).status).toBe(404);
      expect((await get(a.api, cs[2].id)).status).toBe(404);
      expect((await get(a.api, cs[1].id)).status).toBe(200);
      expect((await a.api.get(`/events/contact/${cs[0].id}`)).status).toBe(404);
      const events = (await a.api.get('/events?name=bulk-del-seen&limit=100')).body.data as EventRecord[];
      expect(events.map((e) => e.contactId)).toEqual([cs[1].id]);
      expect(await byEmail(a.api, cs[0].email)).toHaveLength(0);
    });

    it('accepts 1,000 ids; more than 1,000, none, or no list is a 422', async () => {
      const [c] = await contactsOf(a.api, 1, 'bulk-max');
      const ids = [c.id, ...Array.from({ length: 999 }, (_, i) => `01900000-0000-7000-8000-${String(i).padStart(12, '0')}`)];
      const job = await bulk(a.api, 'unsubscribe', ids);
      expect(job).toMatchObject({ total: 1000, processed: 1000, updated: 1, failed: 999 });
      expect(job.errors).toHaveLength(999);
      expect((await get(a.api, c.id)).body.data.subscribed).toBe(false);

      for (const action of ['subscribe', 'unsubscribe', 'delete']) {
        for (const body of [{ contactIds: [...ids, 'one-too-many'] }, { contactIds: [] }, {}, { contactIds: 'abc' }]) {
          const res = await a.api.post(`/contacts/bulk-${action}`, body);
          expect(res.status, `${action} ${JSON.stringify(body).slice(0, 40)}`).toBe(422);
          expect(res.body.error.code).toBe('VALIDATION_ERROR');
          expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain('contactIds');
        }
      }
      expect((await get(a.api, c.id)).status).toBe(200);
    });

    it('the bulk status endpoint does not answer for import jobs or other projects', async () => {
      const [c] = await contactsOf(a.api, 1, 'bulk-status');
      const res = await a.api.post('/contacts/bulk-subscribe', { contactIds: [c.id] });
      const bulkId = res.body.data.jobId;
      await finished(a.api, `/contacts/bulk/${bulkId}`);
      expect((await b.api.get(`/contacts/bulk/${bulkId}`)).status).toBe(404);
      expect((await a.api.get(`/contacts/import/${bulkId}`)).status).toBe(404);

      const imported = await upload(a.api, `email\nimp-${tag()}@example.com\n`);
      const importId = imported.body.data.jobId;
      const notBulk = await a.api.get(`/contacts/bulk/${importId}`);
      expect(notBulk.status).toBe(404);
      expect(notBulk.body.error.code).toBe('NOT_FOUND');
    });
  });
});

describe('a restart loses no accepted job', () => {
  let instance: Instance;
  beforeAll(async () => {
    // The budget is off so that polling and paging through thousands of contacts is never refused.
    instance = await startInstance({ process: true, env: { API_RATE_PER_MINUTE: '0' } });
  });
  afterAll(() => instance?.dispose());

  const csvOf = (prefix: string, rows: number) =>
    ['email,n,group', ...Array.from({ length: rows }, (_, i) => `${prefix}${i}@example.com,${i},g${i % 7}`)].join('\n');

  it('an import killed right after the 202 completes after a restart, with exact counts and every contact once', { timeout: 180_000 }, async () => {
    // (An import killed while it runs: crash.test.ts.)
    const project = await newProject(instance, 'Restart');
    const rows = byMode({ embedded: 3000, distributed: 300 });
    // Killed right after the 202: the job may not have started at all.
    const early = await upload(project.api, csvOf('early', rows));
    expect(early.status).toBe(202);
    await instance.stop(); // SIGKILL: a crash, not a shutdown
    await instance.restart();

    const job = await finished(project.api, `/contacts/import/${early.body.data.jobId}`, 90_000);
    expect(job).toMatchObject({ status: 'COMPLETED', total: rows, processed: rows, created: rows, updated: 0, failed: 0, errors: [] });
    const everyone = await allContacts<Contact>(project.api);
    expect(everyone).toHaveLength(rows);
    expect(new Set(everyone.map((c) => c.email))).toEqual(new Set(Array.from({ length: rows }, (_, i) => `early${i}@example.com`)));
    expect(everyone.find((c) => c.email === `early${rows - 1}@example.com`)?.data).toEqual({ n: rows - 1, group: `g${(rows - 1) % 7}` });
    expect((await project.api.get('/contacts')).body.data.total).toBe(rows);
  });
});
