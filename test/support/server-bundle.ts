import { readFile, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCES = join(REPO_ROOT, 'src/');

/**
 * The server as one JavaScript file, for the test files that start server processes:
 * `node --import tsx src/main.ts` spends seconds of a start resolving, reading and transforming
 * module files one by one. Its sources get the same esbuild transform tsx applies, and the packages
 * are bundled too, but for those that load files kept beside their own modules (PGlite's WASM and
 * data, Prisma's query compiler), which load from node_modules as `npm run serve` loads them.
 * `npm start` itself runs through tsx in test/docs/new-user-path.e2e.test.ts and the Python
 * client's own server.
 */
const FILES_BESIDE_THEMSELVES = ['@electric-sql/pglite', '@electric-sql/pglite/*', '@prisma/client', '@prisma/client/*', 'pglite-prisma-adapter'];

export async function bundleServer(): Promise<{ file: string; remove(): Promise<void> }> {
  // Inside the repository, so that the packages resolve from its node_modules.
  const dir = join(REPO_ROOT, 'node_modules', '.cache', 'agent-audit-tests', randomBytes(6).toString('hex'));
  const file = join(dir, 'main.mjs');
  await build({
    entryPoints: [join(REPO_ROOT, 'src', 'main.ts')],
    outfile: file,
    bundle: true,
    external: FILES_BESIDE_THEMSELVES,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // For the bundled CommonJS packages' `require` of Node's own modules and of the packages left outside.
    banner: { js: `import { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);` },
    plugins: [sourceLocations],
    logLevel: 'warning',
  });
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Each source keeps its own `import.meta.url` (the migrations, the page and the install's template are found from it). */
const sourceLocations: Plugin = {
  name: 'source-locations',
  setup(bundle) {
    bundle.onLoad({ filter: /\.(ts|mjs)$/ }, async ({ path }) =>
      path.startsWith(SOURCES)
        ? {
            contents: (await readFile(path, 'utf8')).replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href)),
            loader: path.endsWith('.mjs') ? 'js' : 'ts',
          }
        : undefined,
    );
  },
};
