// Types of pglite-start-params.mjs (plain JavaScript: the install step runs it without the tsx loader).

/** GIN's pending list held to 128 kB: PGlite never vacuums, and every scan reads the whole list. */
export const ginPendingListParams: string[];

/** The server's own PGlite, sized for a laptop: 16 MB of shared buffers and maintenance_work_mem. */
export const serverStartParams: string[];
