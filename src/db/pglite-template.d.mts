// Types of pglite-template.mjs (plain JavaScript: the install step runs it without the tsx loader).

/** node_modules/.cache/agent-audit-server/pglite-<version>: goes with the install it was made by. */
export function pgliteTemplateDir(): string;

/** Whether the install step made its new database in `templateDir` (the install's by default). */
export function hasPgliteTemplate(templateDir?: string): boolean;

/** Copies the install's new database to `pgData`; false when the install step made none (then PGlite runs initdb). */
export function copyPgliteTemplate(pgData: string, templateDir?: string): boolean;

/** PGlite's in-memory file system holding the install's new database (`fs` of a PGlite in memory); undefined when the install made none. */
export function pgliteTemplateInMemory(templateDir?: string): import('@electric-sql/pglite').Filesystem | undefined;

/** Creates `templateDir` (the install's by default) unless it exists: PGlite's initdb, closed cleanly. `startParams`: the server's. Resolves to it. */
export function createPgliteTemplate(startParams: string[], templateDir?: string): Promise<string>;
