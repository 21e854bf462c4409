/**
 * Preloaded (`node --import ./bench/orphan-guard.ts ...`) into the servers bench/track.ts starts.
 * The benchmark holds the write end of each server's stdin; when it goes away without stopping
 * its servers (SIGKILL, a crash), that pipe closes and the server exits here instead of living on
 * as an orphan, removing its benchmark data directory too. Nothing else is touched.
 */
import { rmSync } from 'node:fs';
import { basename } from 'node:path';
import { isMainThread } from 'node:worker_threads';

const orphaned = () => {
  const dir = process.env.DATA_DIR;
  if (dir && basename(dir).startsWith('mailroom-bench-')) rmSync(dir, { recursive: true, force: true });
  process.exit(1);
};
// Only the server's main thread: a worker thread (the store's scan workers) inherits this preload,
// and its own stdin ends at once, which deleted the benchmark's data directory under the server.
if (isMainThread) {
  process.stdin.on('end', orphaned);
  process.stdin.on('error', orphaned);
  process.stdin.resume();
}
