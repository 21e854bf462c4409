// The TCP sockets on a local port, as the kernel lists them in /proc/net/tcp and tcp6 (Linux).
import { readFile } from 'node:fs/promises';

export interface Socket {
  /** The local address in the kernel's hex form: `0100007F` is 127.0.0.1, 32 zeros are ::. */
  localAddress: string;
  /** For a connection, the peer's port; 0 for a listening socket. */
  peerPort: number;
}

const STATES = { established: '01', listening: '0A' } as const;

/** The sockets in `state` whose local port is `port`, over IPv4 and IPv6. */
export async function socketsOn(port: number, state: keyof typeof STATES): Promise<Socket[]> {
  const tables = await Promise.all(['/proc/net/tcp', '/proc/net/tcp6'].map((path) => readFile(path, 'utf8')));
  return tables.flatMap((table) =>
    table
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields.length > 3 && fields[3] === STATES[state])
      .map(([, local, peer]) => ({ local: local!.split(':'), peer: peer!.split(':') }))
      .filter(({ local }) => parseInt(local[1]!, 16) === port)
      .map(({ local, peer }) => ({ localAddress: local[0]!, peerPort: parseInt(peer[1]!, 16) })),
  );
}
