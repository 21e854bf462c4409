/**
 * SQLite's page cache of the store's connection, in MiB, unless SQLITE_CACHE_MB says otherwise.
 *
 * Why not more: SQLite (3.53) moves a page to the number of its locking page as a stand-in while it
 * reorders the pages of a split, which leaves the cache's highest page number far above the
 * database's end, and the commit that ends the transaction then walks the cache's whole hash
 * table to drop pages past the end (`pcache1TruncateUnsafe`). Every transaction in which a row
 * grew past its page (an email gaining its outcome, a contact its counts) splits pages, so each
 * commit cost time in proportion to the pages cached: 64 MiB made that walk the largest single
 * cost on a campaign's event loop (7.8% in perf), and its commits took 578 µs against 397 µs at
 * 16 MiB, with no statement slower and peak RSS 56 MiB lower (bench/results/campaign-profile.md,
 * session 15). Pages past the cache are read from the OS's file cache.
 */
export const DEFAULT_CACHE_MB = 16;
