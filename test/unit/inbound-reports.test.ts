import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { bounceOf, readReport } from '../../domain/inbound/reports.ts';
import { emailIdOfReturnPath, returnPath, returnPathDomain } from '../../domain/inbound/return-path.ts';
import { loadConfig } from '../../runtime/config.ts';

const fixture = async (name: string) =>
  readReport(await simpleParser(readFileSync(join(import.meta.dirname, '../fixtures/dsn', name)), { keepDeliveryStatus: true }));

describe('bounce reports as real mail systems send them', () => {
  it.each([
    ['postfix-hard.eml', '5.1.1', /User unknown in virtual mailbox table/],
    ['postfix-3.7-hard.eml', '5.1.1', /^550 5\.1\.1 <hard@example\.com>: Recipient address rejected: User unknown$/],
    ['exim-hard.eml', '5.1.1', /No such user/],
    ['gmail-hard.eml', '5.1.1', /account that you tried to reach does not exist/],
    ['microsoft365-hard.eml', '5.1.10', /RecipientNotFound/],
    ['amazon-ses-hard.eml', '5.1.1', /user unknown/],
  ])('%s is a hard bounce with its status code and diagnostic', async (name, status, diagnostic) => {
    const bounce = bounceOf(await fixture(name));
    expect(bounce).toMatchObject({ type: 'hard', status });
    expect(bounce?.diagnostic).toMatch(diagnostic);
    expect(bounce?.diagnostic).not.toMatch(/^smtp;/i);
  });

  it('Exim\'s generic 5.0.0 gives way to the precise code its diagnostic carries', async () => {
    const report = await fixture('exim-hard.eml');
    expect(report).toMatchObject({ kind: 'dsn', recipients: [{ action: 'failed', status: '5.0.0', finalRecipient: 'gone@example.org' }] });
    expect(bounceOf(report)?.status).toBe('5.1.1');
  });

  it('a delay warning (4.x.x, still being retried) records nothing', async () => {
    const report = await fixture('postfix-delayed.eml');
    expect(report).toMatchObject({ kind: 'dsn', recipients: [{ action: 'delayed', status: '4.2.2' }] });
    expect(bounceOf(report)).toBeNull();
  });

  it('a real Postfix delay warning records nothing either', async () => {
    const report = await fixture('postfix-3.7-delayed.eml');
    expect(report).toMatchObject({ kind: 'dsn', recipients: [{ action: 'delayed', status: '4.2.2' }] });
    expect(bounceOf(report)).toBeNull();
  });

  it('a real Postfix that gave up on a full mailbox (queue lifetime over) reports a final soft bounce', async () => {
    expect(bounceOf(await fixture('postfix-3.7-expired.eml'))).toEqual({ type: 'soft', status: '4.2.2', diagnostic: '452 4.2.2 <soft@example.com>: Mailbox full' });
  });

  it('a relay that gave up on a transient failure reports a final soft bounce', () => {
    const report = { kind: 'dsn' as const, recipients: [{ action: 'failed', status: '4.4.7', diagnostic: 'delivery time expired' }] };
    expect(bounceOf(report)).toEqual({ type: 'soft', status: '4.4.7', diagnostic: 'delivery time expired' });
  });

  it('a permanent failure that refuses the message, not the address (blocked, spam, too big), is a soft bounce: no suppression', () => {
    const failed = (status: string, diagnostic: string) => bounceOf({ kind: 'dsn' as const, recipients: [{ action: 'failed', status, diagnostic }] });
    expect(failed('5.7.1', '550 5.7.1 Message rejected as spam')).toEqual({ type: 'soft', status: '5.7.1', diagnostic: '550 5.7.1 Message rejected as spam' });
    expect(failed('5.3.4', '552 5.3.4 Message size exceeds fixed limit')?.type).toBe('soft');
    expect(failed('5.6.0', '550 5.6.0 content rejected')?.type).toBe('soft');
    expect(failed('5.2.1', '550 5.2.1 mailbox disabled')?.type).toBe('hard');
  });

  it('a feedback report (ARF) is a complaint, not a bounce', async () => {
    const report = await fixture('arf-abuse.eml');
    expect(report).toEqual({ kind: 'feedback', feedbackType: 'abuse' });
    expect(bounceOf(report)).toBeNull();
  });

  it('an ordinary message (an auto-reply) is neither', async () => {
    const mail = await simpleParser('From: a@b.example\r\nSubject: Out of office\r\n\r\nBack on Monday.\r\n', { keepDeliveryStatus: true });
    expect(readReport(mail)).toEqual({ kind: 'other' });
  });
});

describe('the Return-Path of an email', () => {
  const key = Buffer.from('a test key of thirty-two bytes!!');
  const emailId = '019ab123-4567-7890-8abc-def012345678';

  it('names its email and verifies, whatever case a mail system folds it to', () => {
    const address = returnPath(key, emailId, 'bounces.shop.example');
    const local = address.split('@')[0];
    expect(local.length).toBeLessThanOrEqual(64);
    expect(emailIdOfReturnPath(key, local)).toBe(emailId);
    expect(emailIdOfReturnPath(key, local.toUpperCase())).toBe(emailId);
  });

  it('cannot be forged: another id, a changed MAC or another key does not verify', () => {
    const local = returnPath(key, emailId, 'x').split('@')[0];
    const otherId = '019ab123-4567-7890-8abc-def012345679';
    expect(emailIdOfReturnPath(key, local.replace(emailId, otherId))).toBeNull();
    expect(emailIdOfReturnPath(key, local.slice(0, -1) + (local.endsWith('0') ? '1' : '0'))).toBeNull();
    expect(emailIdOfReturnPath(Buffer.from('another key of thirty-two bytes!'), local)).toBeNull();
  });

  it('is on bounces.<domain> once that MX is published, else on the inbound host', () => {
    expect(returnPathDomain({ domain: 'shop.example', bounceMx: true }, 'mx.mailroom.example')).toBe('bounces.shop.example');
    expect(returnPathDomain({ domain: 'shop.example' }, 'mx.mailroom.example')).toBe('mx.mailroom.example');
    expect(returnPathDomain(null, '127.0.0.1')).toBe('[127.0.0.1]');
  });
});

describe('the inbound listener configuration', () => {
  it('listens on 2525 unless INBOUND_SMTP_PORT says otherwise; 0 turns it off; anything else stops the start', () => {
    expect(loadConfig({}).inboundSmtpPort).toBe(2525);
    expect(loadConfig({ INBOUND_SMTP_PORT: '25' }).inboundSmtpPort).toBe(25);
    expect(loadConfig({ INBOUND_SMTP_PORT: '0' }).inboundSmtpPort).toBe(0);
    for (const bad of ['smtp', '2525.5', '70000', '-1']) expect(() => loadConfig({ INBOUND_SMTP_PORT: bad })).toThrow(/INBOUND_SMTP_PORT/);
  });

  it('INBOUND_HOST defaults to the host of PUBLIC_URL', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://mail.example.com/app' }).inboundHost).toBe('mail.example.com');
    expect(loadConfig({ PUBLIC_URL: 'https://mail.example.com', INBOUND_HOST: 'MX.Example.com.' }).inboundHost).toBe('mx.example.com');
  });
});
