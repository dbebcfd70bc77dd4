import { readFile, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The server's own sources as one JavaScript file, for the test files that start server processes:
 * `node --import tsx src/main.ts` spends about 2 s of a 6 s start resolving and transforming them
 * one by one. The same esbuild transform tsx applies; the packages stay external, loaded from
 * node_modules as `npm run serve` loads them. `npm start` itself runs through tsx in
 * test/docs/new-user-path.e2e.test.ts and the Python client's own server.
 */
export async function bundleServer(): Promise<{ file: string; remove(): Promise<void> }> {
  // Inside the repository, so that the packages resolve from its node_modules.
  const dir = join(REPO_ROOT, 'node_modules', '.cache', 'agent-audit-tests', randomBytes(6).toString('hex'));
  const file = join(dir, 'main.mjs');
  await build({
    entryPoints: [join(REPO_ROOT, 'src', 'main.ts')],
    outfile: file,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    plugins: [sourceLocations],
    logLevel: 'warning',
  });
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Each source keeps its own `import.meta.url` (the migrations and the page are found beside it). */
const sourceLocations: Plugin = {
  name: 'source-locations',
  setup(bundle) {
    bundle.onLoad({ filter: /\/src\/.*\.ts$/ }, async ({ path }) => ({
      contents: (await readFile(path, 'utf8')).replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href)),
      loader: 'ts',
    }));
  },
};
