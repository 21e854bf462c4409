import { expect, it } from 'vitest';
import { contacts } from '../../domain/contacts/collection.ts';
import { refusals } from '../../domain/mail/gate.ts';
import type { EmailDoc } from '../../domain/mail/outbound.ts';
import { suppress } from '../../domain/suppressions/service.ts';
import { emailDoc } from '../harness/emails.ts';
import { contactPlatform } from '../harness/store.ts';

// domain/mail/gate.ts over a real embedded store: each email is judged by its own project's
// suppression list and contacts, whatever else the batch holds.

const email = (id: string, projectId: string | null, to: string, kind: EmailDoc['kind'], contactId: string | null = null): EmailDoc =>
  emailDoc({ _id: id, projectId, contactId, kind, source: kind === 'system' ? 'system' : 'send', to, from: 'news@example.com' });

it("judges each email of a batch by its own project's suppression list and contacts", async () => {
  const { p, stop } = await contactPlatform();
  try {
    await suppress(p, 'p2', 'Blocked@Example.com', { reason: 'manual' });
    await contacts(p.store).insertMany([
      { _id: 'c-p2', projectId: 'p2', email: 'reader@example.com', subscribed: false, data: {}, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' },
      { _id: 'c-p1', projectId: 'p1', email: 'reader@example.com', subscribed: true, data: {}, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' },
    ]);
    const batch = [
      email('e1', 'p1', 'someone@example.com', 'transactional'),
      email('e2', 'p2', 'blocked@example.com', 'transactional'),
      email('e3', 'p1', 'blocked@example.com', 'transactional'),
      email('e4', 'p2', 'reader@example.com', 'marketing', 'c-p2'),
      email('e5', 'p1', 'reader@example.com', 'marketing', 'c-p1'),
      email('e6', null, 'blocked@example.com', 'system'),
    ];
    const refused = await refusals(p, batch);
    expect(Object.fromEntries([...refused].map(([id, r]) => [id, r.status]))).toEqual({ e2: 'SUPPRESSED', e4: 'SKIPPED' });
    // The same emails one project at a time give the same answers.
    const alone = new Map<string, string>();
    for (const one of batch) for (const [id, r] of await refusals(p, [one])) alone.set(id, r.status);
    expect(Object.fromEntries(alone)).toEqual({ e2: 'SUPPRESSED', e4: 'SKIPPED' });
  } finally {
    await stop();
  }
});
