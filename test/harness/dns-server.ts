import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { isIPv4 } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';

/**
 * A real authoritative DNS server on loopback (UDP and TCP, one port) answering from an
 * in-memory zone that tests edit: TXT, A and MX records, TTL 0 so nothing caches them.
 * Unknown names are NXDOMAIN; a known name without the asked type is an empty NOERROR.
 * A UDP answer that does not fit (512 bytes, or the EDNS size the client offers) is sent
 * truncated (TC), and the client retries over TCP, as with a real server.
 */
export interface DnsServer {
  host: string;
  port: number;
  /** `host:port`, the form `DNS_SERVERS` takes. */
  address: string;
  /**
   * Replaces the TXT records of `name`. Each value is one record; a string longer than 255
   * bytes is split into 255-byte chunks (as DNS providers do), an array gives the chunks.
   * An empty list removes the TXT records.
   */
  setTxt(name: string, values: (string | string[])[]): void;
  setA(name: string, addresses: string[]): void;
  setMx(name: string, exchanges: { priority: number; exchange: string }[]): void;
  /** Removes every record of `name`, or of every name when none is given. */
  clear(name?: string): void;
  /** The TXT values of `name` as published (chunks joined), for assertions. */
  txt(name: string): string[];
  /** Every question asked so far, in order. */
  readonly queries: { name: string; type: string; transport: 'udp' | 'tcp' }[];
  close(): Promise<void>;
}

const TYPE = { A: 1, MX: 15, TXT: 16, OPT: 41, ANY: 255 } as const;
const TYPE_NAME: Record<number, string> = { 1: 'A', 15: 'MX', 16: 'TXT', 41: 'OPT', 255: 'ANY' };
const CLASS_IN = 1;
const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;

interface Zone {
  txt?: Buffer[][];
  a?: string[];
  mx?: { priority: number; exchange: string }[];
}

const canonical = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');

function chunk(value: string): Buffer[] {
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length === 0) return [bytes];
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 255) chunks.push(bytes.subarray(at, at + 255));
  return chunks;
}

function encodeName(name: string): Buffer {
  const parts = canonical(name)
    .split('.')
    .filter(Boolean)
    .map((label) => {
      const bytes = Buffer.from(label, 'ascii');
      if (bytes.length > 63) throw new Error(`label too long: ${label}`);
      return Buffer.concat([Buffer.from([bytes.length]), bytes]);
    });
  return Buffer.concat([...parts, Buffer.from([0])]);
}

interface Question {
  /** As asked (case preserved), dot-separated, no trailing dot. */
  name: string;
  type: number;
  klass: number;
  /** Bytes of the question section, echoed in the answer. */
  raw: Buffer;
}

interface Query {
  id: number;
  flags: number;
  question?: Question;
  /** The UDP payload size offered by an EDNS OPT record, if any. */
  ednsSize?: number;
  malformed: boolean;
}

/** Reads a (possibly compressed) name at `offset`; returns it and the offset after it. */
function readName(msg: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let next = -1;
  let at = offset;
  for (let steps = 0; steps < 128; steps++) {
    if (at >= msg.length) throw new Error('name runs past the message');
    const len = msg[at]!;
    if (len === 0) {
      return { name: labels.join('.'), next: next < 0 ? at + 1 : next };
    }
    if ((len & 0xc0) === 0xc0) {
      if (at + 1 >= msg.length) throw new Error('bad pointer');
      if (next < 0) next = at + 2;
      at = ((len & 0x3f) << 8) | msg[at + 1]!;
      continue;
    }
    if (len > 63 || at + 1 + len > msg.length) throw new Error('bad label');
    labels.push(msg.toString('latin1', at + 1, at + 1 + len));
    at += 1 + len;
  }
  throw new Error('too many labels');
}

function parseQuery(msg: Buffer): Query {
  if (msg.length < 12) return { id: msg.length >= 2 ? msg.readUInt16BE(0) : 0, flags: 0, malformed: true };
  const id = msg.readUInt16BE(0);
  const flags = msg.readUInt16BE(2);
  const qdcount = msg.readUInt16BE(4);
  const ancount = msg.readUInt16BE(6);
  const nscount = msg.readUInt16BE(8);
  const arcount = msg.readUInt16BE(10);
  if (qdcount !== 1) return { id, flags, malformed: true };
  try {
    const { name, next } = readName(msg, 12);
    if (next + 4 > msg.length) return { id, flags, malformed: true };
    const question: Question = {
      name,
      type: msg.readUInt16BE(next),
      klass: msg.readUInt16BE(next + 2),
      raw: msg.subarray(12, next + 4),
    };
    // Skip answer and authority records, then look for an OPT record among the additional ones.
    let at = next + 4;
    let ednsSize: number | undefined;
    for (let i = 0; i < ancount + nscount + arcount; i++) {
      const rr = readName(msg, at);
      if (rr.next + 10 > msg.length) break;
      const type = msg.readUInt16BE(rr.next);
      const klass = msg.readUInt16BE(rr.next + 2);
      const rdlength = msg.readUInt16BE(rr.next + 8);
      if (i >= ancount + nscount && type === TYPE.OPT) ednsSize = Math.max(512, klass);
      at = rr.next + 10 + rdlength;
    }
    return { id, flags, question, ednsSize, malformed: false };
  } catch {
    return { id, flags, malformed: true };
  }
}

function rr(type: number, rdata: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xc00c, 0); // a pointer to the question's name
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(CLASS_IN, 4);
  head.writeUInt32BE(0, 6); // TTL 0: every lookup is fresh
  head.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([head, rdata]);
}

function answersFor(zone: Zone, type: number): Buffer[] {
  const out: Buffer[] = [];
  if (type === TYPE.TXT || type === TYPE.ANY) {
    for (const record of zone.txt ?? []) {
      out.push(rr(TYPE.TXT, Buffer.concat(record.flatMap((c) => [Buffer.from([c.length]), c]))));
    }
  }
  if (type === TYPE.A || type === TYPE.ANY) {
    for (const address of zone.a ?? []) out.push(rr(TYPE.A, Buffer.from(address.split('.').map(Number))));
  }
  if (type === TYPE.MX || type === TYPE.ANY) {
    for (const { priority, exchange } of zone.mx ?? []) {
      const pref = Buffer.alloc(2);
      pref.writeUInt16BE(priority, 0);
      out.push(rr(TYPE.MX, Buffer.concat([pref, encodeName(exchange)])));
    }
  }
  return out;
}

function optRecord(): Buffer {
  const opt = Buffer.alloc(11);
  opt.writeUInt8(0, 0); // root name
  opt.writeUInt16BE(TYPE.OPT, 1);
  opt.writeUInt16BE(1232, 3); // our UDP payload size
  opt.writeUInt32BE(0, 5); // extended rcode, version 0, no flags
  opt.writeUInt16BE(0, 9);
  return opt;
}

function response(query: Query, rcode: number, answers: Buffer[], options: { truncated?: boolean } = {}): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.id, 0);
  const opcode = query.flags & 0x7800;
  const rd = query.flags & 0x0100;
  // QR=1, the query's opcode, AA=1, TC when truncated, the query's RD, RA=0.
  header.writeUInt16BE(0x8000 | opcode | 0x0400 | (options.truncated ? 0x0200 : 0) | rd | rcode, 2);
  header.writeUInt16BE(query.question ? 1 : 0, 4);
  header.writeUInt16BE(answers.length, 6);
  header.writeUInt16BE(0, 8);
  const additional = query.ednsSize !== undefined ? [optRecord()] : [];
  header.writeUInt16BE(additional.length, 10);
  return Buffer.concat([header, ...(query.question ? [query.question.raw] : []), ...answers, ...additional]);
}

export async function startDnsServer(host = '127.0.0.1'): Promise<DnsServer> {
  const zones = new Map<string, Zone>();
  const queries: DnsServer['queries'] = [];

  const zoneOf = (name: string): Zone => {
    const key = canonical(name);
    let zone = zones.get(key);
    if (!zone) zones.set(key, (zone = {}));
    return zone;
  };
  const prune = (name: string) => {
    const key = canonical(name);
    const zone = zones.get(key);
    if (zone && !zone.txt?.length && !zone.a?.length && !zone.mx?.length) zones.delete(key);
  };

  function answer(msg: Buffer, transport: 'udp' | 'tcp'): Buffer {
    const query = parseQuery(msg);
    if (query.malformed || !query.question) return response({ ...query, question: undefined }, RCODE.FORMERR, []);
    const { question } = query;
    queries.push({ name: canonical(question.name), type: TYPE_NAME[question.type] ?? String(question.type), transport });
    if ((query.flags & 0x7800) !== 0) return response(query, RCODE.NOTIMP, []);
    if (question.klass !== CLASS_IN) return response(query, RCODE.REFUSED, []);
    const zone = zones.get(canonical(question.name));
    if (!zone) return response(query, RCODE.NXDOMAIN, []);
    const full = response(query, RCODE.NOERROR, answersFor(zone, question.type));
    const limit = transport === 'tcp' ? 65_535 : (query.ednsSize ?? 512);
    return full.length <= limit ? full : response(query, RCODE.NOERROR, [], { truncated: true });
  }

  // UDP on a port the system picks, then TCP on the same port (retried if that one is taken).
  let udp: UdpSocket | undefined;
  let tcp: Server | undefined;
  for (let attempt = 0; attempt < 20 && !tcp; attempt++) {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    const port = socket.address().port;
    const server = createServer((conn) => serveTcp(conn));
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, host, () => resolve(true));
    });
    if (listening) {
      udp = socket;
      tcp = server;
    } else {
      socket.close();
    }
  }
  if (!udp || !tcp) throw new Error('could not bind the test DNS server');

  udp.on('message', (msg, remote) => {
    udp!.send(answer(msg, 'udp'), remote.port, remote.address);
  });
  udp.on('error', () => undefined);

  const connections = new Set<Socket>();
  function serveTcp(conn: Socket) {
    connections.add(conn);
    conn.on('close', () => connections.delete(conn));
    conn.on('error', () => conn.destroy());
    let buffered = Buffer.alloc(0);
    conn.on('data', (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const reply = answer(buffered.subarray(2, 2 + length), 'tcp');
        buffered = buffered.subarray(2 + length);
        const prefix = Buffer.alloc(2);
        prefix.writeUInt16BE(reply.length, 0);
        conn.write(Buffer.concat([prefix, reply]));
      }
    });
  }

  const port = udp.address().port;
  return {
    host,
    port,
    address: `${host}:${port}`,
    queries,
    setTxt(name, values) {
      zoneOf(name).txt = values.map((v) => (typeof v === 'string' ? chunk(v) : v.map((c) => Buffer.from(c, 'utf8'))));
      for (const record of zoneOf(name).txt!) {
        if (record.some((c) => c.length > 255)) throw new Error('a TXT chunk has at most 255 bytes');
      }
      prune(name);
    },
    setA(name, addresses) {
      for (const a of addresses) if (!isIPv4(a)) throw new Error(`not an IPv4 address: ${a}`);
      zoneOf(name).a = [...addresses];
      prune(name);
    },
    setMx(name, exchanges) {
      zoneOf(name).mx = exchanges.map((e) => ({ ...e }));
      prune(name);
    },
    clear(name) {
      if (name === undefined) zones.clear();
      else zones.delete(canonical(name));
    },
    txt(name) {
      return (zones.get(canonical(name))?.txt ?? []).map((record) => Buffer.concat(record).toString('utf8'));
    },
    async close() {
      for (const conn of connections) conn.destroy();
      await Promise.all([
        new Promise<void>((resolve) => udp!.close(() => resolve())),
        new Promise<void>((resolve) => tcp!.close(() => resolve())),
      ]);
    },
  };
}
