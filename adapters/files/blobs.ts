import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '../../ports/blobs.ts';

/**
 * Embedded blobs: one file per key under `dir` (DATA_DIR/blobs), named by the key's SHA-256 so
 * any key is a safe name. The file starts with one JSON line, `{key, expiresAt}`, then the bytes:
 * a blob and its expiry are written together by one rename, so a crash leaves either the whole
 * new file or the old one (and at worst a `.tmp` the next sweep removes).
 */
export class FileBlobStore implements BlobStore {
  private readonly dir: string;

  /** The directory is made by the first put. */
  constructor(dir: string) {
    this.dir = dir;
  }

  private path(key: string): string {
    return join(this.dir, createHash('sha256').update(key).digest('hex'));
  }

  async put(key: string, bytes: Buffer, expiresAt: string): Promise<void> {
    const path = this.path(key);
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    await mkdir(this.dir, { recursive: true });
    const file = await open(tmp, 'w');
    try {
      await file.write(`${JSON.stringify({ key, expiresAt })}\n`);
      await file.write(bytes);
      await file.datasync();
    } finally {
      await file.close();
    }
    await rename(tmp, path);
    // The rename is durable once the directory is on disk too.
    const dir = await open(this.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  async get(key: string, now: string): Promise<Buffer | null> {
    let content: Buffer;
    try {
      content = await readFile(this.path(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const newline = content.indexOf(0x0a);
    const header = headerOf(content.subarray(0, newline));
    if (!header || header.key !== key || header.expiresAt <= now) return null;
    return content.subarray(newline + 1);
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  async deleteExpired(now: string): Promise<number> {
    let removed = 0;
    const names = await readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    for (const name of names) {
      const path = join(this.dir, name);
      if (name.endsWith('.tmp')) {
        // A write a crash cut short (one under way is seconds old, not an hour).
        const written = await stat(path).catch(() => null);
        if (written && Date.parse(now) - written.mtimeMs > 3_600_000) await rm(path, { force: true });
        continue;
      }
      const header = await readHeader(path);
      if (header && header.expiresAt > now) continue;
      await rm(path, { force: true });
      removed++;
    }
    return removed;
  }
}

interface Header {
  key: string;
  expiresAt: string;
}

function headerOf(line: Buffer): Header | null {
  try {
    const header = JSON.parse(line.toString('utf8')) as Header;
    return typeof header.key === 'string' && typeof header.expiresAt === 'string' ? header : null;
  } catch {
    return null;
  }
}

/** The header line only: a sweep need not read 25 MB to learn a date. */
async function readHeader(path: string): Promise<Header | null> {
  const file = await open(path, 'r').catch(() => null);
  if (!file) return null;
  try {
    const buffer = Buffer.alloc(4096);
    const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
    const newline = buffer.subarray(0, bytesRead).indexOf(0x0a);
    return newline < 0 ? null : headerOf(buffer.subarray(0, newline));
  } finally {
    await file.close();
  }
}
