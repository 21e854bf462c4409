/**
 * The blob port: byte strings too large for a document (a raw inbound message may be 25 MB), by
 * key, each with an expiry. Embedded: files under DATA_DIR; distributed: GridFS over the
 * MongoDB wire, so every replica reads what the mailer wrote.
 */
export interface BlobStore {
  /** Stores `bytes` under `key` (replacing what it held), durably before it resolves, until `expiresAt` (ISO 8601). */
  put(key: string, bytes: Buffer, expiresAt: string): Promise<void>;
  /** The bytes under `key`, or null when there are none or they expired at or before `now`. */
  get(key: string, now: string): Promise<Buffer | null>;
  delete(key: string): Promise<void>;
  /** Removes every blob that expired at or before `now`; answers how many. */
  deleteExpired(now: string): Promise<number>;
  close?(): Promise<void>;
}
