import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRecords, domainRecords, lookupTxt, txtValueMatches, type DomainRecord } from '../../domain/domains/verification.ts';
import { startDnsServer, type DnsServer } from '../harness/dns-server.ts';

const KEY = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA' + 'x'.repeat(340) + 'IDAQAB';
const doc = { domain: 'example.com', verificationToken: 'tok123', dkim: { selector: 'mailroom', publicKey: KEY, privateKeyPem: 'secret' } };
const records = domainRecords(doc, 'mx.mailroom.example');
const byPurpose = (purpose: DomainRecord['purpose']) => records.find((r) => r.purpose === purpose)!;

describe('domain records', () => {
  it('are the ownership and DKIM TXT (required), then SPF and DMARC (recommended), then the bounce and inbound MX (optional)', () => {
    expect(records.map(({ purpose: _, ...r }) => r)).toEqual([
      { type: 'TXT', name: '_mailroom.example.com', value: 'mailroom-verification=tok123', required: true },
      { type: 'TXT', name: 'mailroom._domainkey.example.com', value: `v=DKIM1; k=rsa; p=${KEY}`, required: true },
      { type: 'TXT', name: 'example.com', value: 'v=spf1 mx ~all', required: false },
      { type: 'TXT', name: '_dmarc.example.com', value: 'v=DMARC1; p=none', required: false },
      { type: 'MX', name: 'bounces.example.com', value: '10 mx.mailroom.example', required: false },
      { type: 'MX', name: 'example.com', value: '10 mx.mailroom.example', required: false },
    ]);
    expect(JSON.stringify(records)).not.toContain('secret');
  });

  it('ownership matches the exact value only', () => {
    const r = byPurpose('ownership');
    expect(txtValueMatches(r, 'mailroom-verification=tok123')).toBe(true);
    expect(txtValueMatches(r, ' mailroom-verification=tok123 ')).toBe(true);
    expect(txtValueMatches(r, 'mailroom-verification=tok1234')).toBe(false);
    expect(txtValueMatches(r, 'mailroom-verification=TOK123')).toBe(false);
    expect(txtValueMatches(r, '')).toBe(false);
  });

  it('DKIM matches our key with any whitespace and tag order, and nothing else', () => {
    const r = byPurpose('dkim');
    expect(txtValueMatches(r, `v=DKIM1; k=rsa; p=${KEY}`)).toBe(true);
    expect(txtValueMatches(r, `v=DKIM1;k=rsa;p=${KEY}`)).toBe(true);
    expect(txtValueMatches(r, `k=rsa; v=DKIM1; p=${KEY.slice(0, 100)} ${KEY.slice(100)};`)).toBe(true);
    expect(txtValueMatches(r, `p=${KEY}`)).toBe(true);
    expect(txtValueMatches(r, `v=DKIM1; k=rsa; t=y; p=${KEY}`)).toBe(true);
    expect(txtValueMatches(r, `v=DKIM1; k=rsa; p=${KEY.slice(0, -1)}`)).toBe(false);
    expect(txtValueMatches(r, `v=DKIM1; k=rsa; p=`)).toBe(false);
    expect(txtValueMatches(r, `v=DKIM1; k=ed25519; p=${KEY}`)).toBe(false);
    expect(txtValueMatches(r, `v=DKIM2; k=rsa; p=${KEY}`)).toBe(false);
    expect(txtValueMatches(r, 'v=DKIM1; k=rsa')).toBe(false);
  });
});

describe('DNS lookups', () => {
  let dns: DnsServer;
  beforeAll(async () => {
    dns = await startDnsServer();
  });
  afterAll(() => dns.close());

  it('join the chunks of each TXT record, over UDP or (when long) TCP', async () => {
    dns.setTxt('chunks.example.com', [['abc', 'def'], 'plain', 'z'.repeat(700)]);
    const { values, failure } = await lookupTxt('chunks.example.com', { servers: [dns.address] });
    expect(failure).toBeUndefined();
    expect(values.sort()).toEqual(['abcdef', 'plain', 'z'.repeat(700)].sort());
  });

  it('an unknown name, a name without TXT and an unreachable resolver are all "nothing published"', async () => {
    dns.setA('a-only.example.com', ['192.0.2.1']);
    expect(await lookupTxt('nothing-here.example.com', { servers: [dns.address] })).toEqual({ values: [] });
    expect(await lookupTxt('a-only.example.com', { servers: [dns.address] })).toEqual({ values: [] });
    // Real failures are still "nothing published", with the reason for the operator.
    expect(await lookupTxt('x.example.com', { servers: ['not a server'] })).toEqual({ values: [], failure: expect.any(String) });
    expect(await lookupTxt('x.example.com', { servers: ['127.0.0.1:9'], timeoutMs: 300, tries: 2 })).toEqual({
      values: [],
      failure: expect.any(String),
    });
  });

  it('a resolver that never answers is given up on within the timeout', async () => {
    const { createSocket } = await import('node:dgram');
    const silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const lookup = await lookupTxt('x.example.com', { servers: [`127.0.0.1:${silent.address().port}`], timeoutMs: 300, tries: 2 });
      expect(lookup).toEqual({ values: [], failure: 'ETIMEOUT' });
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      silent.close();
    }
  });

  it('checkRecords says which records are published, looking each name up afresh', async () => {
    dns.clear();
    dns.setTxt('_mailroom.example.com', ['something-else', 'mailroom-verification=tok123']);
    const first = await checkRecords(records, { servers: [dns.address] });
    expect(first.failures).toEqual([]);
    expect(first.checks.map((r) => [r.purpose, r.found])).toEqual([
      ['ownership', true],
      ['dkim', false],
      ['spf', false],
      ['dmarc', false],
      ['bounce', false],
      ['inbound', false],
    ]);
    dns.setTxt('mailroom._domainkey.example.com', [`v=DKIM1; k=rsa; p=${KEY}`]);
    dns.setTxt('example.com', ['v=spf1 mx ~all']);
    // An MX is ours when it names the inbound host, whatever its priority (and the name's TXT stay apart).
    dns.setMx('bounces.example.com', [{ priority: 20, exchange: 'MX.mailroom.example.' }]);
    dns.setMx('example.com', [{ priority: 10, exchange: 'mx.elsewhere.example' }]);
    const second = await checkRecords(records, { servers: [dns.address] });
    expect(second.checks.map((r) => r.found)).toEqual([true, true, true, false, true, false]);
    dns.clear('_mailroom.example.com');
    const third = await checkRecords(records, { servers: [dns.address] });
    expect(third.checks.map((r) => r.found)).toEqual([false, true, true, false, true, false]);
  });
});
