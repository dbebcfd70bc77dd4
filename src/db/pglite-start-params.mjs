// PGlite's start parameters for the server (README, "Memory"). Plain JavaScript (typed by
// pglite-start-params.d.mts): the install step's template (pglite-template.mjs) starts with them
// too, in a bare `node`.
import { PGlite } from '@electric-sql/pglite';

/**
 * GIN's pending list (new entries kept unsorted until a flush) held to 128 kB instead of 4 MB:
 * every scan of a GIN index reads the whole list, and a search across threads probes the search
 * index once per thread of the caller. PostgreSQL's autovacuum flushes the list; PGlite never
 * vacuums, so there it only empties when full, and a 4 MB list cost each probe ~500 pages
 * (bench/README.md, runs XS5–XS10). PostgreSQL keeps its default: there a 128 kB list cost
 * 8 writers a quarter of their rate (XS11, XS12).
 */
export const ginPendingListParams = ['-c', 'gin_pending_list_limit=128kB'];

/**
 * The server's own PGlite, sized for a laptop (README, "Memory"): PostgreSQL's 128 MB of shared
 * buffers live in PGlite's WebAssembly memory, which never shrinks, and its first start holds
 * them twice (its initdb instance beside its own). 16 MB (the test suites' size too) holds a
 * run's hot rows and index pages; the rest of the database is a read from the operating system's
 * file cache away.
 */
// max_wal_size: the write-ahead log a checkpoint keeps (src/server/wal-checkpoints.ts checkpoints
// every 64 MB written), 1 GB by default, for a database of a few hundred MB.
export const serverStartParams = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB', '-c', 'maintenance_work_mem=16MB', ...ginPendingListParams, '-c', 'max_wal_size=64MB', '-c', 'min_wal_size=32MB'];
