// The install step's copy of a new PGlite database (src/db/pglite-template.mjs), run by
// scripts/pglite-template.sh (with its node flags) in a process of its own, so a first start loads
// the copy instead of running initdb beside the server. Prints the template only when it made one:
// `npm start` runs it at every start.
// An argument: the directory to create instead of the install's (bench/embedded-memory.ts).
import { serverStartParams } from '../src/db/pglite-start-params.mjs';
import { createPgliteTemplate, hasPgliteTemplate, pgliteTemplateDir } from '../src/db/pglite-template.mjs';

const templateDir = process.argv[2] ?? pgliteTemplateDir();
if (!hasPgliteTemplate(templateDir)) console.log(`embedded database template: ${await createPgliteTemplate(serverStartParams, templateDir)}`);
