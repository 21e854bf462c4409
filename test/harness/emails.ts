import type { EmailDoc } from '../../domain/mail/outbound.ts';

/**
 * An email record as the store holds it, for tests: a transactional email of project p1, QUEUED,
 * with no contact, and `fields` over that. One home for the record's required fields, so a test
 * names only what it is about.
 */
export const emailDoc = (fields: Partial<EmailDoc> & Pick<EmailDoc, '_id'>): EmailDoc => ({
  projectId: 'p1',
  contactId: null,
  kind: 'transactional',
  source: 'send',
  to: 'ann@example.com',
  from: 'news@shop.example',
  status: 'QUEUED',
  createdAt: '2026-01-01T00:00:00.000Z',
  ...fields,
});
