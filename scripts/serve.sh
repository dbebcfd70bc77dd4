#!/bin/sh
# `npm run serve`, and `npm start` after its install step: the server, replacing this shell (exec),
# so that no shell waits above it. NODE_ENV=production unless set; a 64 MB young generation, since
# a 500-item timeline read allocates more than the default 16 MB; glibc gives freed memory back
# (MALLOC_TRIM_THRESHOLD_); gc exposed for the one call src/db/pglite.ts makes after PGlite's start.
# First the embedded database's template when the install has none (scripts/pglite-template.sh: it
# exits at once when there is one), before the server starts, so that the server does not wait
# above it; not on PostgreSQL (DATABASE_URL), where the server opens no embedded database.
set -e
[ -n "${DATABASE_URL:-}" ] || sh scripts/pglite-template.sh
NODE_ENV="${NODE_ENV:-production}" MALLOC_TRIM_THRESHOLD_=131072 exec node --max-semi-space-size=64 --expose-gc --import tsx src/main.ts
