// Counting an audience before saving it (the dashboard's live counts): a condition counts what a
// segment saved with it would hold, and a campaign's audience what a send would queue. Nothing is saved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

let instance: Instance;
let project: ProjectAccess;
let other: ProjectAccess;

const proCondition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };

beforeAll(async () => {
  instance = await startInstance();
  project = await newProject(instance, 'Counts');
  other = await newProject(instance, 'Other');
  const people = [
    { email: 'ann@count.example', data: { plan: 'pro', visits: 5 } },
    { email: 'bob@count.example', data: { plan: 'pro', visits: 1 } },
    { email: 'cat@count.example', data: { plan: 'free', visits: 9 }, subscribed: false },
    { email: 'dan@count.example', data: { plan: 'pro', visits: 7 }, subscribed: false },
  ];
  for (const person of people) {
    const res = await project.api.post('/contacts', { subscribed: true, ...person });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  expect((await other.api.post('/contacts', { email: 'eve@count.example', data: { plan: 'pro' } })).status).toBe(201);
});

afterAll(() => instance?.dispose());

describe('POST /segments/count', () => {
  it('counts the contacts a condition selects, subscribed or not, as the segment saved with it counts them', async () => {
    const counted = await project.api.post('/segments/count', { condition: proCondition });
    expect(counted.status, JSON.stringify(counted.body)).toBe(200);
    expect(counted.body.data).toEqual({ count: 3, warnings: [] });

    const either = {
      logic: 'OR',
      groups: [{ filters: [{ field: 'data.visits', operator: 'greaterThan', value: 8 }] }, proCondition.groups[0]],
    };
    expect((await project.api.post('/segments/count', { condition: either })).body.data.count).toBe(4);

    const saved = await project.api.post('/segments', { name: 'Pro', condition: proCondition });
    expect(saved.body.data.memberCount).toBe(3);
  });

  it('saves nothing: the project has only the segments it had', async () => {
    const before = (await project.api.get('/segments')).body.data.length;
    await project.api.post('/segments/count', { condition: proCondition });
    expect((await project.api.get('/segments')).body.data).toHaveLength(before);
  });

  it('a bad filter is a 422 naming it by its path, as on create', async () => {
    const bad = { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'greaterThan', value: 'a' }] }] };
    const res = await project.api.post('/segments/count', { condition: bad });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'condition.groups.0.filters.0', code: 'operator_not_applicable' });
    expect((await project.api.post('/segments/count', {})).status).toBe(422);
  });
});

describe('POST /campaigns/audience/count', () => {
  it('counts only subscribed contacts: everyone, a segment, or a filter', async () => {
    const all = await project.api.post('/campaigns/audience/count', { audienceType: 'ALL' });
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.data).toEqual({ count: 2 });

    const filtered = await project.api.post('/campaigns/audience/count', {
      audienceType: 'FILTERED',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.visits', operator: 'greaterThanOrEqual', value: 5 }] }] },
    });
    expect(filtered.body.data).toEqual({ count: 1 });

    const segment = (await project.api.get('/segments')).body.data.find((s: { name: string }) => s.name === 'Pro');
    const bySegment = await project.api.post('/campaigns/audience/count', { audienceType: 'SEGMENT', segmentId: segment.id });
    expect(bySegment.body.data).toEqual({ count: 2 });
  });

  it("the audience fields are checked as on create; another project's segment is not found", async () => {
    const missing = await project.api.post('/campaigns/audience/count', { audienceType: 'SEGMENT' });
    expect(missing.status).toBe(422);
    expect(missing.body.error.errors[0].field).toBe('segmentId');
    const theirs = await other.api.post('/segments', { name: 'Theirs', condition: proCondition });
    const foreign = await project.api.post('/campaigns/audience/count', { audienceType: 'SEGMENT', segmentId: theirs.body.data.id });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error.errors[0]).toMatchObject({ field: 'segmentId', code: 'not_found' });
    const bad = await project.api.post('/campaigns/audience/count', {
      audienceType: 'FILTERED',
      audienceCondition: { logic: 'XOR', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe('audienceCondition.logic');
  });
});
