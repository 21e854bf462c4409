import { GridFSBucket, MongoClient } from 'mongodb';
import type { BlobStore } from '../../ports/blobs.ts';

/**
 * Distributed blobs: GridFS (bucket `blobs`: `blobs.files` and `blobs.chunks` of 255 KB), which
 * the driver speaks over the MongoDB wire and FerretDB serves. The key is the file's `filename`,
 * the expiry its `metadata.expiresAt`. A put writes the new file before it removes the old ones,
 * so a reader finds one whole version at any moment (the newest by upload date).
 */
export class GridFsBlobStore implements BlobStore {
  private readonly client: MongoClient;
  private readonly bucket: GridFSBucket;

  private constructor(client: MongoClient, bucket: GridFSBucket) {
    this.client = client;
    this.bucket = bucket;
  }

  static async connect(url: string): Promise<GridFsBlobStore> {
    const client = await MongoClient.connect(url);
    const db = client.db();
    await db.collection('blobs.files').createIndex({ 'metadata.expiresAt': 1 });
    return new GridFsBlobStore(client, new GridFSBucket(db, { bucketName: 'blobs' }));
  }

  async put(key: string, bytes: Buffer, expiresAt: string): Promise<void> {
    const older = await this.versions(key);
    await new Promise<void>((resolve, reject) => {
      const upload = this.bucket.openUploadStream(key, { metadata: { expiresAt } });
      upload.once('finish', () => resolve());
      upload.once('error', reject);
      upload.end(bytes);
    });
    for (const id of older) await this.remove(id);
  }

  async get(key: string, now: string): Promise<Buffer | null> {
    const [file] = await this.bucket.find({ filename: key }, { sort: { uploadDate: -1 }, limit: 1 }).toArray();
    if (!file || !(String(file.metadata?.expiresAt ?? '') > now)) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of this.bucket.openDownloadStream(file._id)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async delete(key: string): Promise<void> {
    for (const id of await this.versions(key)) await this.remove(id);
  }

  async deleteExpired(now: string): Promise<number> {
    const expired = await this.bucket.find({ 'metadata.expiresAt': { $lte: now } }, { projection: { _id: 1 } }).toArray();
    for (const file of expired) await this.remove(file._id);
    return expired.length;
  }

  close(): Promise<void> {
    return this.client.close();
  }

  private async versions(key: string) {
    return (await this.bucket.find({ filename: key }, { projection: { _id: 1 } }).toArray()).map((file) => file._id);
  }

  /** Another remover (a second sweep, a concurrent put) may have been first. */
  private async remove(id: unknown): Promise<void> {
    try {
      await this.bucket.delete(id as never);
    } catch (err) {
      if (!/File not found/i.test((err as Error).message)) throw err;
    }
  }
}
