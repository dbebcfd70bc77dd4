#!/bin/sh
# The install's new PGlite database (src/db/pglite-template.mjs), in a process of its own: the one
# place its command is written. package.json's postinstall runs it, so does `npm run serve`
# (scripts/serve.sh, also `npm start`'s last step, once its install step has exited) before the
# server starts, and a server started otherwise that finds none (src/db/new-pglite.ts). `npm
# start`'s install step sets
# AUDIT_SERVER_TEMPLATE_LATER so that npm's processes do not wait above this, the peak of a first
# start. A bare `node` compiling PGlite's WebAssembly with Liftoff only, lazily: TurboFan's tier-up
# held 65-90 MB more at this step's peak for no time saved (run EM2); a 1 MB young generation and
# glibc giving freed memory back (MALLOC_TRIM_THRESHOLD_) lower it further (runs ST). An argument:
# the directory to create instead of the install's (bench/embedded-memory.ts).
[ -n "${AUDIT_SERVER_TEMPLATE_LATER:-}" ] && exit 0
MALLOC_TRIM_THRESHOLD_=131072 exec node --liftoff-only --wasm-lazy-compilation --max-semi-space-size=1 scripts/create-pglite-template.mjs "$@"
