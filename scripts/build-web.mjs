// Bundles the timeline page (web/) into web/dist with esbuild: app.js and app.css, no CDN.
// Runs on install (postinstall), so `npm start` and `npm ci --omit=dev` both serve a built page.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', 'web');
const dist = join(web, 'dist');
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: [join(web, 'src', 'main.tsx')],
  outfile: join(dist, 'app.js'),
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(join(web, 'src', file), join(dist, file));
