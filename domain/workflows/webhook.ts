// The WEBHOOK step's HTTP call: JSON to the configured URL, with a timeout, never following a
// redirect, and never to a loopback, private, link-local or otherwise internal address unless
// WEBHOOK_ALLOW_PRIVATE is set. The address is checked where the connection is made (the DNS
// answer the socket actually uses), so a name that resolves to 127.0.0.1 is refused as well as
// the literal, and a rebinding answer between a check and the connect cannot slip through.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP } from 'node:net';

export interface WebhookRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
  /** Sent as `X-Mailroom-Delivery`: the same on every retry of one step visit. */
  deliveryId: string;
}

export type WebhookOutcome = { ok: true; status: number } | { ok: false; retryable: boolean; reason: string };

export interface WebhookOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

const RANGES: [string, [string, number, 'ipv4' | 'ipv6'][]][] = [
  ['a loopback address', [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']]],
  ['a private address', [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['100.64.0.0', 10, 'ipv4'], ['fc00::', 7, 'ipv6']]],
  ['a link-local address', [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']]],
  [
    'a reserved address',
    [
      ['0.0.0.0', 8, 'ipv4'],
      ['192.0.0.0', 24, 'ipv4'],
      ['198.18.0.0', 15, 'ipv4'],
      ['224.0.0.0', 4, 'ipv4'],
      ['240.0.0.0', 4, 'ipv4'],
      ['::', 128, 'ipv6'],
      ['ff00::', 8, 'ipv6'],
    ],
  ],
];
const LISTS = RANGES.map(([label, subnets]) => {
  const list = new BlockList();
  for (const [network, prefix, type] of subnets) list.addSubnet(network, prefix, type);
  return { label, list };
});

/** Why an address may not be called, or null when it is a public one. */
export function forbiddenAddress(address: string): string | null {
  let ip = address.replace(/^\[|\]$/g, '');
  let family = isIP(ip);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    // IPv4-mapped IPv6 (::ffff:127.0.0.1 or ::ffff:7f00:1) is the IPv4 address it maps.
    const mapped = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(ip);
    if (mapped) {
      ip = mapped[1] ?? [parseInt(mapped[2], 16) >> 8, parseInt(mapped[2], 16) & 255, parseInt(mapped[3], 16) >> 8, parseInt(mapped[3], 16) & 255].join('.');
      family = 4;
    }
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const { label, list } of LISTS) if (list.check(ip, type)) return label;
  return null;
}

class RefusedAddress extends Error {}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for the socket that refuses every answer containing a forbidden address. */
function guardedLookup(hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void {
  dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (err, addresses) => {
    if (err) return callback(err, []);
    for (const a of addresses) {
      const why = forbiddenAddress(a.address);
      if (why) return callback(new RefusedAddress(`${hostname} resolves to ${a.address}, ${why}`) as NodeJS.ErrnoException, []);
    }
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  });
}

export async function callWebhook(request: WebhookRequest, options: WebhookOptions): Promise<WebhookOutcome> {
  const url = new URL(request.url);
  const hint = ' (WEBHOOK_ALLOW_PRIVATE allows it)';
  if (!options.allowPrivate && isIP(url.hostname.replace(/^\[|\]$/g, ''))) {
    const why = forbiddenAddress(url.hostname);
    if (why) return { ok: false, retryable: false, reason: `Refused to call ${url.origin}: ${url.hostname.replace(/^\[|\]$/g, '')} is ${why}${hint}` };
  }
  const body = request.method === 'GET' ? undefined : Buffer.from(JSON.stringify(request.body));
  const headers: Record<string, string> = {
    'user-agent': 'mailroom-webhook/1',
    'x-mailroom-delivery': request.deliveryId,
    ...Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v])),
  };
  if (body) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(body.length);
  }
  const client = url.protocol === 'https:' ? https : http;

  return new Promise<WebhookOutcome>((resolve) => {
    let settled = false;
    const done = (outcome: WebhookOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = client.request(url, {
      method: request.method,
      headers,
      agent: false,
      ...(options.allowPrivate ? {} : { lookup: guardedLookup as never }),
    });
    const timer = setTimeout(() => {
      req.destroy();
      done({ ok: false, retryable: true, reason: `No answer from ${url.origin} within ${options.timeoutMs} ms` });
    }, options.timeoutMs);
    req.on('error', (err) => {
      if (err instanceof RefusedAddress) done({ ok: false, retryable: false, reason: `Refused to call ${url.origin}: ${err.message}${hint}` });
      else done({ ok: false, retryable: true, reason: `Calling ${url.origin} failed: ${(err as NodeJS.ErrnoException).code ?? err.message}` });
    });
    req.on('response', (res) => {
      res.resume(); // the answer's body is not used
      const status = res.statusCode ?? 0;
      res.on('end', () => {
        if (status >= 200 && status < 300) done({ ok: true, status });
        else if (status === 408 || status === 429 || status >= 500) done({ ok: false, retryable: true, reason: `${url.origin} answered HTTP ${status}` });
        else done({ ok: false, retryable: false, reason: `${url.origin} answered HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}` });
      });
      res.on('error', () => done({ ok: false, retryable: true, reason: `The answer from ${url.origin} broke off` }));
    });
    req.end(body);
  });
}
