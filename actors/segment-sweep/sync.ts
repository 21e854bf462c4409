import { CONTACT_ACTOR } from '../contact/actor.ts';
import type { Platform } from '../../runtime/platform.ts';

/** One turn of the contact: re-evaluates these tracked segments and records entry/exit events. */
export const syncContactSegments = (p: Platform, contactId: string, segmentIds: string[]) =>
  p.actors.invoke<{ eventIds: string[] }>(CONTACT_ACTOR, contactId, 'syncSegments', { segmentIds });
