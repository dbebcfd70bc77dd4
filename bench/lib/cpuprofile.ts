// Where the server's CPU goes: a V8 CPU profile folded into self time per function and per
// package, and inclusive time per package (a sample counts for every package on its stack).
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  parent?: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** node_modules/<package>, src/<path>, node:<builtin>, or what V8 calls it. */
export function packageOf(url: string): string {
  if (!url) return '(native / V8)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const src = url.indexOf('/src/');
  if (src >= 0) return `src/${url.slice(src + 5).split('/')[0]}`;
  return url.split('/').slice(-2).join('/');
}

export function summarizeProfile(file: string, top = 25) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  for (const node of profile.nodes) for (const child of node.children ?? []) byId.get(child)!.parent = node.id;
  const totalUs = profile.endTime - profile.startTime;
  let idleUs = 0;
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  // Inclusive: a sample counts once for every package anywhere on its stack.
  const inclusive = new Map<string, number>();
  // The profiler's own work (node:inspector, when profiling in process) is not the program's.
  const profilerSelf = new Set<number>();
  profile.samples.forEach((id, index) => {
    const seen = new Set<string>();
    for (let node = byId.get(id); node; node = node.parent === undefined ? undefined : byId.get(node.parent)) {
      if (node.callFrame.functionName === '(idle)') return;
      if (node.callFrame.url === 'node:inspector') return void profilerSelf.add(index);
      if (node.callFrame.url) seen.add(packageOf(node.callFrame.url));
    }
    for (const pkg of seen) inclusive.set(pkg, (inclusive.get(pkg) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    if (profilerSelf.has(index)) idleUs += profile.timeDeltas[index] ?? 0;
    else selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const pkg = functionName === '(garbage collector)' ? '(garbage collector)' : packageOf(url);
    const name = `${functionName || '(anonymous)'} ${pkg}${url ? `:${lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const ranked = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), percentOfBusy: Number(((100 * us) / busyUs).toFixed(1)) }));
  return {
    file,
    wallMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    packages: ranked(packages),
    inclusivePackages: ranked(inclusive),
    functions: ranked(functions),
  };
}
