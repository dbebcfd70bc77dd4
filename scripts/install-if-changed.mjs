// `npm start`'s install step: runs `npm install` only when package.json or package-lock.json
// changed since the last install, and rebuilds the page only when its sources did, so a start on
// an unchanged checkout takes seconds. What was installed is recorded in a stamp file; with
// `--record` (the last step of postinstall, so after an `npm ci` too) it only records.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const STAMP = join('node_modules', '.audit-server-install.json');

function digest(files) {
  const hash = createHash('sha256');
  for (const file of files) hash.update(file).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

function filesUnder(dir) {
  return readdirSync(dir, { recursive: true })
    .map((name) => join(dir, String(name)))
    .filter((file) => statSync(file).isFile())
    .sort();
}

const wanted = {
  dependencies: digest(['package.json', 'package-lock.json', 'prisma/schema.prisma']),
  page: digest([...filesUnder(join('web', 'src')), 'scripts/build-web.mjs']),
};
if (process.argv.includes('--record')) {
  writeFileSync(STAMP, JSON.stringify(wanted) + '\n');
  process.exit(0);
}
let stamp = {};
try {
  stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
} catch {
  // No stamp: never installed by this script.
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
if (stamp.dependencies !== wanted.dependencies || !existsSync(join('src', 'generated', 'prisma'))) {
  console.log(
    stamp.dependencies === undefined
      ? 'First start: installing the dependencies (npm install; a few minutes on a fresh checkout)'
      : 'package.json, package-lock.json or the Prisma schema changed since the last install: npm install',
  );
  // postinstall generates the Prisma client and builds the page; --foreground-scripts streams
  // their output as it comes, where npm would otherwise hold it until the end.
  execFileSync(npm, ['install', '--no-audit', '--no-fund', '--foreground-scripts'], { stdio: 'inherit' });
} else if (stamp.page !== wanted.page || !existsSync(join('web', 'dist', 'app.js'))) {
  console.log('The timeline page changed since it was built: building it');
  execFileSync(process.execPath, ['scripts/build-web.mjs'], { stdio: 'inherit' });
}
writeFileSync(STAMP, JSON.stringify(wanted) + '\n');
