// npx tsx bench/profile.ts <file.cpuprofile> [top]
// Folds a V8 CPU profile (the bench's --profile writes them under bench/results/) into self time
// per package and function, and inclusive time per package.
import { summarizeProfile } from './lib/cpuprofile.js';
import { table } from './lib/stats.js';

const [file, top = '30'] = process.argv.slice(2);
if (!file) {
  console.error('usage: npx tsx bench/profile.ts <file.cpuprofile> [top]');
  process.exit(2);
}
const summary = summarizeProfile(file, Number(top));
console.log(`busy ${summary.busyMs} ms of ${summary.wallMs} ms`);
for (const [title, rows] of [
  ['package (self)', summary.packages],
  ['package (inclusive)', summary.inclusivePackages],
  ['function (self)', summary.functions],
] as const) {
  console.log();
  console.log(table([title, 'ms', '% busy'], rows.map((row) => [row.name, row.ms, row.percentOfBusy])));
}
