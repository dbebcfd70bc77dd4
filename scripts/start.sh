#!/bin/sh
# `npm start`: the install step when something changed (scripts/install-if-changed.mjs), the
# embedded database's template once npm install has exited (scripts/pglite-template.sh: at once
# when the install has one; not on PostgreSQL), then the server in place of this shell.
set -e
AUDIT_SERVER_TEMPLATE_LATER=1 node scripts/install-if-changed.mjs
# On PostgreSQL (DATABASE_URL) the server opens no embedded database.
[ -n "${DATABASE_URL:-}" ] || sh scripts/pglite-template.sh
exec sh scripts/serve.sh
