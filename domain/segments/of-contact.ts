import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import { dataFieldTypes } from '../contacts/data-types.ts';
import { getContactDoc } from '../contacts/service.ts';
import { segmentMembers, segments } from './collection.ts';
import { segmentContactFilter } from './service.ts';

export interface ContactSegment {
  id: string;
  name: string;
  slug: string;
  type: 'DYNAMIC' | 'STATIC';
}

/**
 * GET /contacts/:id/segments: the segments the contact is in now, by name. A DYNAMIC segment is
 * asked with its own member query narrowed to the contact, so this list and the segment's member
 * list never disagree; a STATIC one by its `segment_members` row.
 */
export async function segmentsOfContact(p: Platform, projectId: string, contactId: string): Promise<ContactSegment[]> {
  await getContactDoc(p, projectId, contactId);
  const [all, rows, types] = await Promise.all([
    segments(p.store).find({ projectId }, { sort: { name: 1 } }),
    segmentMembers(p.store).find({ projectId, contactId }, { projection: { segmentId: 1 } }),
    dataFieldTypes(p.store, projectId),
  ]);
  const inStatic = new Set(rows.map((r) => r.segmentId));
  const now = new Date();
  const member = await Promise.all(
    all.map(async (segment) =>
      segment.type === 'STATIC'
        ? inStatic.has(segment._id)
        : // The id at the top level: FerretDB pushes top-level equalities down (under the `$and`
          // it read every contact, once per segment), the SQLite store and MongoDB look it up.
          (await contacts(p.store).countDocuments({ _id: contactId, $and: [await segmentContactFilter(p, segment, types, now)] })) > 0,
    ),
  );
  return all.filter((_, i) => member[i]).map((s) => ({ id: s._id, name: s.name, slug: s.slug, type: s.type }));
}
