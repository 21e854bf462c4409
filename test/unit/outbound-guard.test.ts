// The one outbound-HTTP guard (WEBHOOK steps and event webhooks): which addresses are never
// called, checked on the address the socket uses; no redirects; a timeout; a cap on the answer.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callOutbound, forbiddenAddress, RESPONSE_SNIPPET_BYTES } from '../../domain/http/outbound.ts';

describe('the outbound guard refuses every blocked range', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.255.254', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:7f00:1', 'a loopback address'],
    ['[::1]', 'a loopback address'],
    ['10.0.0.8', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['fd12::1', 'a private address'],
    ['::ffff:10.1.2.3', 'a private address'],
    ['64:ff9b::10.1.2.3', 'a private address'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['100.127.255.254', 'a carrier-grade NAT address'],
    ['169.254.169.254', 'a link-local address'],
    ['fe80::1', 'a link-local address'],
    ['192.0.2.10', 'a documentation address'],
    ['198.51.100.7', 'a documentation address'],
    ['203.0.113.99', 'a documentation address'],
    ['2001:db8::1', 'a documentation address'],
    ['198.18.0.1', 'a benchmarking address'],
    ['198.19.255.255', 'a benchmarking address'],
    ['224.0.0.1', 'a multicast address'],
    ['239.255.255.250', 'a multicast address'],
    ['ff02::1', 'a multicast address'],
    ['0.0.0.0', 'a reserved address'],
    ['192.0.0.8', 'a reserved address'],
    ['240.0.0.1', 'a reserved address'],
    ['255.255.255.255', 'a reserved address'],
    ['::', 'a reserved address'],
  ])('%s is %s', (address, label) => {
    expect(forbiddenAddress(address)).toBe(label);
  });

  it("refuses this host's own addresses, whatever range they are in", () => {
    const own = Object.values(networkInterfaces()).flatMap((list) => list ?? []).map((i) => i.address);
    expect(own.length).toBeGreaterThan(0);
    for (const address of own) expect(forbiddenAddress(address), address).not.toBeNull();
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '198.20.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])('lets the public address %s through', (address) => {
    expect(forbiddenAddress(address)).toBeNull();
  });
});

describe('an outbound call', () => {
  let server: Server;
  let base: string;
  let calls = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      calls++;
      if (req.url === '/redirect') return res.writeHead(302, { location: '/landing' }).end();
      if (req.url === '/big') return res.writeHead(200).end('x'.repeat(1024 * 1024));
      if (req.url === '/slow') return setTimeout(() => res.end('late'), 2_000);
      res.writeHead(200).end('fine');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const post = (url: string, allowPrivate = true, timeoutMs = 1_000) => callOutbound({ url, method: 'POST', headers: {}, body: Buffer.from('{}') }, { allowPrivate, timeoutMs });

  it('is refused for a loopback literal and for a name that resolves to one, and nothing is sent', async () => {
    const before = calls;
    const literal = await post(`${base}/`, false);
    expect(literal).toMatchObject({ answered: false, refused: true, reason: expect.stringContaining('a loopback address') });
    const named = await post(base.replace('127.0.0.1', 'localhost'), false);
    expect(named).toMatchObject({ answered: false, refused: true, reason: expect.stringMatching(/localhost resolves to .*loopback/) });
    expect(calls).toBe(before);
  });

  it('goes through with WEBHOOK_ALLOW_PRIVATE, never follows a redirect, and keeps the first 1 KB of a large answer', async () => {
    expect(await post(`${base}/`)).toMatchObject({ answered: true, status: 200, snippet: 'fine' });
    const before = calls;
    expect(await post(`${base}/redirect`)).toMatchObject({ answered: true, status: 302 });
    expect(calls).toBe(before + 1);
    const big = await post(`${base}/big`);
    expect(big).toMatchObject({ answered: true, status: 200 });
    expect(big.answered && big.snippet.length).toBe(RESPONSE_SNIPPET_BYTES);
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    expect(await post(`${base}/slow`, true, 200)).toMatchObject({ answered: false, refused: false, reason: expect.stringContaining('within 200 ms') });
  });
});
