/**
 * One yardstick of bench/send.ts, in its own process: sends `count` messages (after `warmup`
 * unmeasured ones) into the sink with at most `inFlight` of them outstanding, then reports the
 * measured window's start and end (monotonic µs) and its CPU time over IPC, and exits.
 *
 * Variants (see bench/README.md):
 *   nagle           nodemailer pool, 5 connections, Nagle's algorithm forced on: the socket's
 *                   setNoDelay is made a no-op, since nodemailer >= 10.1 turns Nagle off itself
 *   plain           nodemailer pool, 5 connections, nodemailer's own sockets and defaults
 *   nodelay         the same with TCP_NODELAY set on each socket by getSocket, as the mailer does
 *   dkim            plain + nodemailer's built-in DKIM, key given as a PEM string
 *   dkim-nodelay    nodelay + DKIM from a PEM string
 *   dkim-key-nodelay nodelay + DKIM from a KeyObject parsed once (the mailer's key handling)
 *   transport       the mailer's own transport (apps/mailer/transport.ts): each message built
 *                   (mime.ts) and DKIM-signed (dkim.ts), the bytes handed to the NODELAY pool
 *                   with the terminator hold; the commit is a no-op. Content pre-composed.
 *   compose         the mailer's compose() (template, juice, html-to-text, link tracking) and
 *                   buildMessage() per message, then `transport`: the mailer without the store,
 *                   pub/sub, claims and commit writes.
 *
 * The first five send the content composed once (by compose(), untimed) so every variant puts
 * the same bytes on the wire, give or take the per-message ids and links. `message: 'campaign'`
 * makes it a campaign's (the project's footer, List-Unsubscribe), as bench:campaign's yardstick.
 *
 *   BENCH_YARDSTICK='{"variant":"plain","smtpUrl":"smtp://127.0.0.1:2525",...}' \
 *     node --import tsx --import ./bench/orphan-guard.ts bench/send-yardstick.ts   (IPC channel)
 */
import { createPrivateKey, createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import { compose, type Composed } from '../apps/mailer/compose.ts';
import { buildMessage } from '../apps/mailer/message.ts';
import { compileMessage, renderEmail } from '../apps/mailer/render.ts';
import { createTransport } from '../apps/mailer/transport.ts';
import { dkimSigningOf, type DomainDoc } from '../domain/domains/collection.ts';
import { emailLinks } from '../domain/mail/links.ts';
import type { EmailDoc } from '../domain/mail/outbound.ts';
import { PROJECT_NAME, SENDER_NAME, bodyWith, SUBJECT, dataOf, recipientOf, type YardstickConfig, type YardstickResult } from './send-shared.ts';

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

const config = JSON.parse(process.env.BENCH_YARDSTICK ?? 'null') as YardstickConfig | null;
if (!config) throw new Error('BENCH_YARDSTICK must hold the configuration (bench/send.ts starts this process)');
const result = await run(config);
process.send!(result, () => process.exit(result.errors ? 1 : 0));

async function run(c: YardstickConfig): Promise<YardstickResult> {
  const linkKey = createSecretKey(randomBytes(32));
  const domain: DomainDoc = {
    _id: 'bench-domain',
    projectId: 'bench-project',
    domain: c.domain,
    verified: true,
    verificationToken: 'bench',
    dkim: { selector: c.selector, publicKey: '', privateKeyPem: c.privateKeyPem },
    createdAt: new Date().toISOString(),
    verifiedAt: new Date().toISOString(),
  };
  const body = bodyWith(c.paragraphs ?? 0);
  const campaign = c.message === 'campaign';
  const emailOf = (key: string, n: number): EmailDoc => ({
    // UUIDs, as long as the platform's ids: they are in the headers and every tracked link.
    _id: randomUUID(),
    projectId: domain.projectId,
    contactId: randomUUID(),
    kind: campaign ? 'marketing' : 'transactional',
    source: campaign ? 'campaign' : 'send',
    to: recipientOf(key, n),
    from: `hello@${c.domain}`,
    fromName: SENDER_NAME,
    subject: SUBJECT,
    html: body,
    vars: dataOf(n),
    status: 'QUEUED',
    createdAt: new Date().toISOString(),
  });
  const inline = (email: EmailDoc) => ({ subject: email.subject!, html: email.html! });
  const linksOf = (email: EmailDoc) => emailLinks(c.publicUrl, linkKey, email._id, email.contactId!);
  // Composed once, untimed, for every variant but `compose`, which alone computes the links
  // (buildMessage uses them only for a marketing email's List-Unsubscribe).
  const first = emailOf(c.key, 0);
  const firstLinks = linksOf(first);
  // The project's footer settings, for a campaign's message only.
  const footer = campaign ? { name: PROJECT_NAME, language: 'en' } : null;
  const precomposed: Composed = compose(first, inline(first), firstLinks, footer);
  // A campaign's message carries List-Unsubscribe; the first email's URL, as long as any other's.
  const headerLinks = campaign ? firstLinks : undefined;

  let send: (key: string, n: number) => Promise<unknown>;
  let close: () => void;
  if (c.variant === 'transport' || c.variant === 'compose') {
    const transport = createTransport({ smtpUrl: c.smtpUrl, dataDir: '' });
    const noCommit = async () => {};
    send = (key, n) => {
      const email = emailOf(key, n);
      const signing = dkimSigningOf(domain);
      if (c.variant === 'transport') {
        return compileMessage(buildMessage(email, precomposed, signing, headerLinks, [])).then((m) => transport.send({ ...m, subject: SUBJECT }, noCommit));
      }
      const task = { email, content: inline(email), links: { publicUrl: c.publicUrl, key: linkKey }, project: footer, signing, attachments: [] };
      return renderEmail(task).then((m) => transport.send(m, noCommit));
    };
    close = () => transport.close();
  } else {
    const nodelay = c.variant.includes('nodelay');
    const nagle = c.variant === 'nagle';
    const dkim = c.variant.startsWith('dkim')
      ? {
          domainName: c.domain,
          keySelector: c.selector,
          privateKey: (c.variant === 'dkim-key-nodelay' ? createPrivateKey(c.privateKeyPem) : c.privateKeyPem) as string,
        }
      : undefined;
    const smtp = nodemailer.createTransport({
      url: c.smtpUrl,
      pool: true,
      maxConnections: c.poolSize,
      maxMessages: Infinity,
      ...(dkim ? { dkim } : {}),
      ...(nodelay || nagle
        ? {
            getSocket(options: { host?: string; port?: number }, callback: (err: Error | null, socket?: { connection: unknown }) => void) {
              const socket = connect({ host: options.host ?? 'localhost', port: options.port ?? 25 });
              if (nagle) {
                // nodemailer calls setNoDelay(true) on every socket it is given; keep Nagle on.
                socket.setNoDelay(false);
                socket.setNoDelay = () => socket;
              } else {
                socket.setNoDelay(true);
              }
              socket.once('connect', () => callback(null, { connection: socket }));
              socket.once('error', (err) => callback(err));
            },
          }
        : {}),
    } as never);
    send = (key, n) => {
      const email = emailOf(key, n);
      const message: Mail.Options = buildMessage(email, precomposed, null, headerLinks, []);
      return smtp.sendMail(message);
    };
    close = () => smtp.close();
  }

  let errors = 0;
  let firstError: string | undefined;
  /** Sends messages 0..count-1 of `key`, at most `inFlight` outstanding. */
  const batch = async (key: string, count: number) => {
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const n = next++;
        try {
          await send(key, n);
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(c.inFlight, count) }, worker));
  };

  if (c.warmup > 0) await batch(c.warmupKey, c.warmup);
  const cpu = process.cpuUsage();
  const startUs = monotonicUs();
  await batch(c.key, c.count);
  const endUs = monotonicUs();
  const used = process.cpuUsage(cpu);
  close();
  return { type: 'result', startUs, endUs, cpuSeconds: (used.user + used.system) / 1e6, errors, ...(firstError ? { firstError } : {}) };
}
