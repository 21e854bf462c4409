// The one way the platform calls a URL its users gave (WEBHOOK steps, event webhooks): never to
// a loopback, private, link-local, carrier-grade NAT, documentation, benchmark, multicast or
// reserved address, nor to one of this host's own, unless WEBHOOK_ALLOW_PRIVATE is set. The
// address is checked where the connection is made (the DNS answer the socket actually uses), so
// a name that resolves to 127.0.0.1 is refused as well as the literal, and a rebinding answer
// between a check and the connect cannot slip through. Redirects are never followed (a 3xx is
// an answer like any other), every call has a timeout, and at most 64 KB of an answer is read.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

export interface OutboundRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** Sent as is; absent for a GET. */
  body?: Buffer;
}

export interface OutboundOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

/** What came back: an HTTP answer (any status), or why there was none. */
export type OutboundAnswer =
  | { answered: true; status: number; durationMs: number; snippet: string }
  | { answered: false; refused: boolean; reason: string; durationMs: number };

/** How much of an answer is read (the rest is cut off), and how much is kept for a log. */
export const RESPONSE_READ_BYTES = 64 * 1024;
export const RESPONSE_SNIPPET_BYTES = 1024;

const RANGES: [string, [string, number, 'ipv4' | 'ipv6'][]][] = [
  ['a loopback address', [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']]],
  ['a private address', [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['fc00::', 7, 'ipv6']]],
  ['a carrier-grade NAT address', [['100.64.0.0', 10, 'ipv4']]],
  ['a link-local address', [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']]],
  ['a documentation address', [['192.0.2.0', 24, 'ipv4'], ['198.51.100.0', 24, 'ipv4'], ['203.0.113.0', 24, 'ipv4'], ['2001:db8::', 32, 'ipv6']]],
  ['a benchmarking address', [['198.18.0.0', 15, 'ipv4'], ['2001:2::', 48, 'ipv6']]],
  ['a multicast address', [['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']]],
  [
    'a reserved address',
    [
      ['0.0.0.0', 8, 'ipv4'],
      ['192.0.0.0', 24, 'ipv4'],
      ['192.88.99.0', 24, 'ipv4'],
      ['240.0.0.0', 4, 'ipv4'], // includes 255.255.255.255
      ['::', 128, 'ipv6'],
      ['100::', 64, 'ipv6'],
      ['2001::', 23, 'ipv6'],
    ],
  ],
];
const LISTS = RANGES.map(([label, subnets]) => {
  const list = new BlockList();
  for (const [network, prefix, type] of subnets) list.addSubnet(network, prefix, type);
  return { label, list };
});

/** The addresses of this host's interfaces (a public address of the host reaches its own services). */
let ownAddresses: Set<string> | undefined;
function isOwnAddress(ip: string): boolean {
  ownAddresses ??= new Set(Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address.toLowerCase())));
  return ownAddresses.has(ip.toLowerCase());
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`), or null. */
function embeddedIpv4(ip: string): string | null {
  const m = /^(?:::ffff|64:ff9b:):(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(ip);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = parseInt(m[2], 16);
  const lo = parseInt(m[3], 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** Why an address may not be called, or null when it is a public one. */
export function forbiddenAddress(address: string): string | null {
  let ip = address.replace(/^\[|\]$/g, '');
  let family = isIP(ip);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    const v4 = embeddedIpv4(ip);
    if (v4) {
      ip = v4;
      family = 4;
    }
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const { label, list } of LISTS) if (list.check(ip, type)) return label;
  if (isOwnAddress(ip)) return "one of this host's own addresses";
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

const HINT = ' (WEBHOOK_ALLOW_PRIVATE allows it)';

/**
 * Connections are kept alive between calls (a new one per call cost event webhooks a third of
 * their CPU, both ends counted). The guard still holds: it checks the address where a socket is
 * made, and a guarded call only reuses a socket made under the guard. An idle socket is closed
 * after 4 s, before a server's usual 5 s keep-alive timeout would close it under a new request.
 */
const agentOptions = { keepAlive: true, maxSockets: 32, timeout: 4_000 };
const AGENTS = {
  guarded: { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) },
  open: { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) },
};

/** Makes one HTTP call under the guard. Never throws: a refusal, a timeout or a broken connection is an answer too. */
export async function callOutbound(request: OutboundRequest, options: OutboundOptions): Promise<OutboundAnswer> {
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return { answered: false, refused: true, reason: `Not a URL: ${request.url}`, durationMs: 0 };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { answered: false, refused: true, reason: `Refused to call ${request.url}: only http and https URLs are called`, durationMs: 0 };
  }
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivate && isIP(literal)) {
    const why = forbiddenAddress(literal);
    if (why) return { answered: false, refused: true, reason: `Refused to call ${url.origin}: ${literal} is ${why}${HINT}`, durationMs: 0 };
  }
  const headers: Record<string, string> = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
  if (request.body) headers['content-length'] = String(request.body.length);
  const client = url.protocol === 'https:' ? https : http;

  return new Promise<OutboundAnswer>((resolve) => {
    let settled = false;
    const done = (answer: OutboundAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const req = client.request(url, {
      method: request.method,
      headers,
      agent: AGENTS[options.allowPrivate ? 'open' : 'guarded'][url.protocol as 'http:' | 'https:'],
      ...(options.allowPrivate ? {} : { lookup: guardedLookup as never }),
    });
    const timer = setTimeout(() => {
      req.destroy();
      done({ answered: false, refused: false, reason: `No answer from ${url.origin} within ${options.timeoutMs} ms`, durationMs: elapsed() });
    }, options.timeoutMs);
    req.on('error', (err) => {
      if (err instanceof RefusedAddress) done({ answered: false, refused: true, reason: `Refused to call ${url.origin}: ${err.message}${HINT}`, durationMs: elapsed() });
      else done({ answered: false, refused: false, reason: `Calling ${url.origin} failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`, durationMs: elapsed() });
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let read = 0;
      const finish = () => {
        const snippet = Buffer.concat(chunks).subarray(0, RESPONSE_SNIPPET_BYTES).toString('utf8');
        done({ answered: true, status, durationMs: elapsed(), snippet });
      };
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (chunks.reduce((n, c) => n + c.length, 0) < RESPONSE_SNIPPET_BYTES) chunks.push(chunk);
        if (read >= RESPONSE_READ_BYTES) {
          // Enough: a receiver's answer is a status, not a download.
          finish();
          res.destroy();
        }
      });
      res.on('end', finish);
      res.on('error', () => done({ answered: false, refused: false, reason: `The answer from ${url.origin} broke off`, durationMs: elapsed() }));
    });
    req.end(request.body);
  });
}
