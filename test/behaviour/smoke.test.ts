import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject } from '../harness/accounts.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

describe('a fresh platform', () => {
  let instance: Instance;
  beforeAll(async () => {
    instance = await startInstance();
  });
  afterAll(() => instance.dispose());

  it('answers /health and serves its OpenAPI document', async () => {
    expect((await instance.api.get('/health')).status).toBe(200);
    const doc = await instance.api.get('/openapi.json');
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toContain('/v1/track');
  });

  it('takes a new user from signup to a project key that tracks events', async () => {
    const project = await newProject(instance);
    const tracked = await project.api.post('/v1/track', { email: 'ann@example.com', event: 'signed-up' });
    expect(tracked.status).toBe(200);
    const events = await project.api.get('/events');
    expect(events.body.data.map((e: { name: string }) => e.name)).toEqual(['signed-up']);
  });
});
