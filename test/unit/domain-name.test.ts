import { describe, expect, it } from 'vitest';
import { parseDomainName } from '../../domain/domains/name.ts';

const ok = (input: string) => {
  const parsed = parseDomainName(input);
  if ('error' in parsed) throw new Error(`${input}: ${parsed.error}`);
  return parsed.domain;
};
const reason = (input: string) => {
  const parsed = parseDomainName(input);
  if (!('error' in parsed)) throw new Error(`${input} was accepted as ${parsed.domain}`);
  return parsed.error;
};

describe('domain names', () => {
  it('are lower-cased and trimmed, and lose one trailing dot', () => {
    expect(ok('Example.COM')).toBe('example.com');
    expect(ok('  mail.Example.com  ')).toBe('mail.example.com');
    expect(ok('example.com.')).toBe('example.com');
    expect(ok('a-b.c-d.example.co.uk')).toBe('a-b.c-d.example.co.uk');
    expect(ok('xn--bcher-kva.de')).toBe('xn--bcher-kva.de');
    expect(ok('123.example.com')).toBe('123.example.com');
  });

  it('internationalised names become their ASCII form', () => {
    expect(ok('Bücher.de')).toBe('xn--bcher-kva.de');
  });

  it('refuse a protocol, path, port or email address', () => {
    expect(reason('https://example.com')).toMatch(/protocol/);
    expect(reason('http://example.com/')).toMatch(/protocol/);
    expect(reason('mailto:me@example.com')).toMatch(/protocol/);
    expect(reason('example.com/path')).toMatch(/path/);
    expect(reason('example.com?x=1')).toMatch(/path/);
    expect(reason('example.com:8080')).toMatch(/port/);
    expect(reason('me@example.com')).toMatch(/email/);
  });

  it('refuse IP addresses, single labels and localhost', () => {
    for (const ip of ['127.0.0.1', '10.0.0.1', '::1', '[::1]', 'fe80::1', '2001:db8::1']) expect(reason(ip)).toMatch(/IP address/);
    expect(reason('1.2.3.4.5')).toMatch(/number/);
    expect(reason('localhost')).toMatch(/localhost/);
    expect(reason('LOCALHOST.')).toMatch(/localhost/);
    expect(reason('app.localhost')).toMatch(/localhost/);
    expect(reason('example')).toMatch(/full domain name/);
  });

  it('refuse empty, over-long and badly formed labels', () => {
    expect(reason('a..b')).toMatch(/empty label/);
    expect(reason('.example.com')).toMatch(/empty label/);
    expect(reason('example.com..')).toMatch(/empty label/);
    expect(reason('')).toMatch(/empty/);
    expect(reason('.')).toMatch(/empty/);
    expect(reason(`${'a'.repeat(64)}.com`)).toMatch(/63/);
    expect(ok(`${'a'.repeat(63)}.com`)).toBe(`${'a'.repeat(63)}.com`);
    expect(reason(`${'abcdefghi.'.repeat(30)}com`)).toMatch(/at most 233/);
    expect(reason('x'.repeat(300))).toMatch(/at most 233/);
    // Room is left for `mailroom._domainkey.<domain>`, which must fit in 253 characters.
    const longest = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(37)}.com`;
    expect(longest).toHaveLength(233);
    expect(ok(longest)).toBe(longest);
    expect(reason(`e${longest}`)).toMatch(/at most 233/);
    expect(reason('-bad.example.com')).toMatch(/valid part/);
    expect(reason('bad-.example.com')).toMatch(/valid part/);
    expect(reason('under_score.example.com')).toMatch(/valid part/);
    expect(reason('spa ce.example.com')).toMatch(/valid part/);
    expect(reason('*.example.com')).toMatch(/valid part/);
  });
});
