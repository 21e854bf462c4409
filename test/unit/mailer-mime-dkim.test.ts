// The mailer's own MIME builder and DKIM signer: what receivers parse is what was sent, and the
// signature verifies (mailauth, as a receiving server checks it).
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { authenticate } from 'mailauth';
import nodemailer from 'nodemailer';
import PostalMime from 'postal-mime';
import { describe, expect, it } from 'vitest';
import { dkimSign, relaxedBody } from '../../apps/mailer/dkim.ts';
import { buildMime } from '../../apps/mailer/mime.ts';
import { mulberry32 } from '../harness/prng.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const publicDer = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const DOMAIN = 'shop.example';
const dkim = { domainName: DOMAIN, keySelector: 'mr1', privateKey };

async function verify(raw: Buffer) {
  const result = await authenticate(raw, {
    resolver: async (name: string, type: string) => {
      if (type === 'TXT' && name === `mr1._domainkey.${DOMAIN}`) return [[`v=DKIM1; k=rsa; p=${publicDer}`]];
      const err = new Error('not found') as Error & { code: string };
      err.code = 'ENOTFOUND';
      throw err;
    },
    sender: `news@${DOMAIN}`,
    ip: '127.0.0.1',
    helo: 'localhost',
    mta: 'test.example',
  });
  return result.dkim.results[0];
}

const base = {
  from: { name: 'Shop', address: `news@${DOMAIN}` },
  to: 'ann@customer.example',
  subject: 'Your order A-100001',
  messageId: `<0192-abc@${DOMAIN}>`,
  text: 'Hi Ann,\nyour order is on its way.\n',
  html: '<p style="color: red;">Hi Ann,</p>\n<p>Your order is on its way.</p>',
  headers: { 'List-Unsubscribe': `<https://m.example/unsubscribe/x>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
};

const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

describe('buildMime + dkimSign', () => {
  it('build a message receivers parse back to its parts, with a signature that verifies', async () => {
    const cases = [
      base,
      { ...base, subject: 'Grüße 🎉 und ein sehr langer Betreff, der über mehrere Zeilen gefaltet werden muss, damit er passt', from: { name: 'Zoë “Shop”, Inc.', address: `news@${DOMAIN}` } },
      { ...base, text: `${'long line '.repeat(40)}\n.starts with a dot\ntrailing spaces   \n\n\n`, html: `<p>${'x'.repeat(300)}</p>\r\n.dot\r\n<p>ünïcødé &amp; = signs</p>   ` },
      { ...base, replyTo: `help@${DOMAIN}`, from: { name: 'A "quoted" \\ name', address: `news@${DOMAIN}` }, to: { name: 'Ann Example', address: 'ann@customer.example' } },
    ];
    for (const message of cases) {
      const built = buildMime(message);
      expect(built).toBeDefined();
      expect(built!.envelope).toEqual({ from: `news@${DOMAIN}`, to: ['ann@customer.example'] });
      const raw = await dkimSign(built!.raw, dkim);
      expect(raw.toString('latin1')).not.toMatch(/[^\r]\n/); // CRLF only
      const parsed = await PostalMime.parse(raw);
      expect(parsed.subject).toBe(message.subject);
      expect(parsed.from).toMatchObject({ name: message.from.name, address: `news@${DOMAIN}` });
      expect(parsed.messageId).toBe(message.messageId);
      // Parts read back as nodemailer's composer's do (the same text and HTML, line ends aside).
      const reference = await PostalMime.parse((await composer.sendMail(message)).message as Buffer);
      const lf = (value: string | undefined) => value?.replace(/\r\n/g, '\n');
      expect(lf(parsed.text)).toBe(lf(reference.text));
      expect(lf(parsed.html)).toBe(lf(reference.html));
      expect(lf(parsed.text)?.trimEnd()).toBe(lf(message.text)!.trimEnd());
      expect(lf(parsed.html)?.trimEnd()).toBe(lf(message.html)!.trimEnd());
      expect(parsed.to).toEqual(reference.to);
      expect(parsed.replyTo).toEqual(reference.replyTo);
      expect(parsed.headers.find((h) => h.key === 'list-unsubscribe')?.value).toBe(base.headers['List-Unsubscribe']);
      const result = await verify(raw);
      expect(result?.status.result, JSON.stringify(result)).toBe('pass');
      expect(String(result?.signingHeaders?.keys).toLowerCase()).toContain('list-unsubscribe');
    }
  });

  it('sign what nodemailer composes too, and a tampered message fails', async () => {
    const info = await composer.sendMail({ ...base, attachments: [{ filename: 'a.txt', content: 'hello' }] });
    const raw = await dkimSign(info.message as Buffer, { ...dkim, privateKey: createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' })) });
    expect((await verify(raw))?.status.result).toBe('pass');
    const tampered = Buffer.from(raw.toString('latin1').replace('Your order A-100001', 'Your order A-100002'), 'latin1');
    expect((await verify(tampered))?.status.result).toBe('fail');
  });

  it('leave to nodemailer what they do not build: attachments, several recipients, non-ASCII addresses', () => {
    expect(buildMime({ ...base, attachments: [{ filename: 'a.txt', content: 'x' }] })).toBeUndefined();
    expect(buildMime({ ...base, to: 'a@x.example, b@x.example' })).toBeUndefined();
    expect(buildMime({ ...base, to: 'zoë@x.example' })).toBeUndefined();
    expect(buildMime({ ...base, headers: { 'Bad Name': 'x' } })).toBeUndefined();
  });

  it("build the email's own envelope sender (its Return-Path) into the envelope, not into the message", () => {
    const returnPath = `b-0192-abc-0123456789abcdef0123@bounces.${DOMAIN}`;
    const built = buildMime({ ...base, envelope: { from: returnPath, to: 'ann@customer.example' } });
    expect(built?.envelope).toEqual({ from: returnPath, to: ['ann@customer.example'] });
    expect(built?.raw.toString()).not.toContain(returnPath);
    // An envelope to anyone else than the To address is nodemailer's to build.
    expect(buildMime({ ...base, envelope: { from: returnPath, to: 'someone@else.example' } })).toBeUndefined();
  });
});

/** The relaxed body canonicalization as RFC 6376 §3.4.4 states it, line by line. */
function relaxedByTheRfc(body: string): string {
  const lines = body.split('\r\n').map((line) => line.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines.length === 0 ? '' : `${lines.join('\r\n')}\r\n`;
}

it('canonicalizes a body as RFC 6376 says (relaxed), whatever its whitespace, line ends and empty lines', () => {
  const random = mulberry32(6376);
  const pieces = ['a', 'b', ' ', '  ', '\t', '\r\n', '\r', '\n', '.', '='];
  const bodies = ['', '\r\n', 'a', ' ', 'a \r\n\r\n \r\n', 'a\t \tb  \r\n  c \t'];
  for (let i = 0; i < 5_000; i++) bodies.push(Array.from({ length: Math.floor(random() * 24) }, () => pieces[Math.floor(random() * pieces.length)]).join(''));
  for (const body of bodies) expect(JSON.stringify(relaxedBody(body)), JSON.stringify(body)).toBe(JSON.stringify(relaxedByTheRfc(body)));
});
