#!/bin/sh
# `npm start`: the install step when something changed (scripts/install-if-changed.mjs), then
# scripts/serve.sh in place of this shell: the embedded database's template once npm install has
# exited (scripts/pglite-template.sh), then the server.
set -e
AUDIT_SERVER_TEMPLATE_LATER=1 node scripts/install-if-changed.mjs
exec sh scripts/serve.sh
