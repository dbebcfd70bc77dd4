// Bundles the timeline page (web/) into web/dist with esbuild: app.js and app.css, no CDN, and
// each view's own library in a file of its own, loaded by the view that draws with it (chart.js:
// uPlot for the Activity view; diff.js: jsondiffpatch for a row whose inputs differ). Their names
// are fixed (no hash) as the server serves a fixed list of files (src/server/static-page.ts).
// Runs on install (postinstall), so `npm start` and `npm ci --omit=dev` both serve a built page.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = join(dirname(fileURLToPath(import.meta.url)), '..', 'web');
const dist = join(web, 'dist');
mkdirSync(dist, { recursive: true });
const LAZY = ['chart', 'diff'];
const built = await build({
  entryPoints: { app: join(web, 'src', 'main.tsx'), ...Object.fromEntries(LAZY.map((name) => [name, join(web, 'src', `${name}.ts`)])) },
  outdir: dist,
  entryNames: '[name]',
  bundle: true,
  splitting: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  write: false,
});
// A module both app.js and a view's library import would land in a chunk of its own, which the
// server's fixed list does not serve: the page would break only when that view first draws.
const outputs = Object.keys(built.metafile.outputs).map((path) => basename(path));
const unserved = outputs.filter((file) => !['app.js', 'app.css', ...LAZY.map((name) => `${name}.js`)].includes(file));
if (unserved.length) throw new Error(`web/dist holds ${unserved.join(', ')}, which src/server/static-page.ts does not serve: keep the lazy libraries' modules out of app.js, or serve the file`);
// Each file is written beside itself and renamed over the old one: a server serving web/dist
// during a rebuild reads a whole file, old or new, never a cut one (a blank page).
function replace(path, contents) {
  const next = `${path}.${process.pid}.tmp`;
  writeFileSync(next, contents);
  renameSync(next, path);
}
for (const { path, contents } of built.outputFiles) replace(path, contents);
for (const file of ['index.html', 'favicon.svg']) replace(join(dist, file), readFileSync(join(web, 'src', file)));
