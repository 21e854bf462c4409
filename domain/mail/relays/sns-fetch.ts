import { readFile } from 'node:fs/promises';
import type { Platform } from '../../../runtime/platform.ts';
import { AppError, invalid } from '../../errors.ts';
import type { SnsEffects } from './ses.ts';

/** Signing certificates by URL: SNS signs with few, and each is fetched once per process. */
const certificates = new Map<string, string>();
const MAX_CERTIFICATES = 100;
const TIMEOUT_MS = 5_000;

/**
 * The network side of SNS: fetching a signing certificate (only ever called with a URL on an SNS
 * host, see sns.ts) and visiting a subscription link. `SNS_TEST_CERTIFICATE` (tests only) makes
 * every certificate the one in that file, so a test can sign with its own key; the host rule
 * still applies, so a message naming another host is refused as in production.
 */
export function snsEffects(p: Platform): SnsEffects {
  return {
    async certificate(url) {
      if (p.config.snsTestCertificate) return readFile(p.config.snsTestCertificate, 'utf8');
      const known = certificates.get(url);
      if (known) return known;
      let pem = '';
      try {
        const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (res.ok) pem = await res.text();
      } catch (err) {
        p.log.warn({ err, url }, 'SNS signing certificate could not be fetched');
      }
      // Without the certificate nothing can be checked: the message is refused like a forged one.
      if (!pem.includes('BEGIN CERTIFICATE')) throw new AppError('UNAUTHORIZED', 'The SNS signing certificate could not be fetched, so the signature cannot be checked');
      if (certificates.size >= MAX_CERTIFICATES) certificates.clear();
      certificates.set(url, pem);
      return pem;
    },
    async confirm(subscribeUrl) {
      let status: number | string;
      try {
        status = (await fetch(subscribeUrl, { redirect: 'error', signal: AbortSignal.timeout(TIMEOUT_MS) })).status;
      } catch (err) {
        status = (err as Error).message;
      }
      if (status !== 200) throw invalid('SubscribeURL', `The subscription could not be confirmed (${status}); request a new confirmation from the SNS console`, 'confirmation_failed');
      p.log.info({ subscribeUrl: subscribeUrl.split('?')[0] }, 'SNS subscription confirmed');
    },
  };
}
