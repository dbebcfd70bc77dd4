// The install step's copy of a new PGlite database (src/db/pglite-template.ts): `npm install`
// (postinstall) runs it, in a process of its own, so a first start loads the copy instead of
// running initdb beside the server. An argument: the directory to create instead of the install's (bench/embedded-memory.ts).
import { serverStartParams } from '../src/db/pglite-settings.js';
import { createPgliteTemplate } from '../src/db/pglite-template.js';

console.log(`embedded database template: ${await createPgliteTemplate(serverStartParams, process.argv[2])}`);
