import type { Platform } from '../../runtime/platform.ts';
import { AppError } from '../errors.ts';
import { domainOf, domains, type DomainDoc } from './collection.ts';

/**
 * The rule every send path shares: mail goes out only from an address on a domain that is
 * added to the project and verified. Checked when a template or email is accepted, and again
 * by the mailer right before sending, so removing a domain stops its mail at once.
 */
export async function requireVerifiedSender(p: Platform, projectId: string, address: string): Promise<DomainDoc> {
  const domain = domainOf(address);
  const doc = await domains(p.store).findOne({ domain, projectId });
  if (!doc || !doc.verified) {
    throw new AppError('DOMAIN_NOT_VERIFIED', `The sender domain "${domain}" is not verified for this project`, {
      suggestion: `Add ${domain} to the project with POST /domains, publish its DNS records, then GET /domains/:id/verify.`,
    });
  }
  return doc;
}
