// The install step's copy of a new PGlite database (src/db/pglite-template.mjs): `npm install`
// (postinstall) runs it, in a process of its own, so a first start loads the copy instead of
// running initdb beside the server. npm runs it with `--liftoff-only --wasm-lazy-compilation`
// (package.json): PGlite's WebAssembly compiled by the baseline compiler alone, each function at its
// first call; TurboFan's tier-up held 65-90 MB more at this step's peak, for no time saved (run EM2).
// An argument: the directory to create instead of the install's (bench/embedded-memory.ts).
import { serverStartParams } from '../src/db/pglite-start-params.mjs';
import { createPgliteTemplate } from '../src/db/pglite-template.mjs';

console.log(`embedded database template: ${await createPgliteTemplate(serverStartParams, process.argv[2])}`);
