// npx tsx bench/profile.ts <file.cpuprofile> [top] [--layers]
// Folds a V8 CPU profile (the bench's --profile writes them under bench/results/) into self time
// per package and function, and inclusive time per package. --layers: self time by the server's
// layer instead (HTTP, yoga and its plugins, GraphQL execution, domain, database driver, ...),
// a sample in native code (a system call, JSON) counted for the nearest caller that has a file.
import { readFileSync } from 'node:fs';
import { packageOf, summarizeProfile } from './lib/cpuprofile.js';
import { table } from './lib/stats.js';

const args = process.argv.slice(2);
const layers = args.includes('--layers');
const [file, top = '30'] = args.filter((arg) => arg !== '--layers');
if (!file) {
  console.error('usage: npx tsx bench/profile.ts <file.cpuprofile> [top] [--layers]');
  process.exit(2);
}

/** The layer a frame's file belongs to (first match). */
const LAYERS: [string, RegExp][] = [
  ['profiler (the bench\'s probe)', /node:inspector|lib\/server-probe\.ts/],
  ['logging and metrics', /\/(pino|sonic-boom|prom-client|thread-stream)\/|\/src\/log\.ts|\/src\/server\/metrics\.ts/],
  ['authentication', /\/(jose)\/|\/src\/auth\//],
  ['database driver and row mapping', /\/(pg|pg-protocol|pg-pool|pg-types|postgres-array|@electric-sql\/pglite|pglite-prisma-adapter)\/|\/src\/db\//],
  ['domain', /\/src\/domain\//],
  ['publication', /\/src\/realtime\/|\/ioredis\//],
  ['GraphQL execution (graphql-jit, Pothos resolvers, scalars)', /\/(graphql-jit|@pothos\/[^/]+|graphql|dataloader|fast-json-stringify)\/|\/src\/graphql\//],
  ['yoga, envelop and their plugins (parse, validate, armor, cost, context, result)', /\/(graphql-yoga|@graphql-yoga\/[^/]+|@envelop\/[^/]+|@escape\.tech\/[^/]+|@graphql-tools\/[^/]+)\/|\/src\/server\/yoga\.ts|\/src\/transports\//],
  ['HTTP (Node http, whatwg-node adapter, sockets)', /\/@whatwg-node\/|\/src\/server\//],
];

/** Node's own frames with no caller of the program's (event-loop callbacks: sockets, timers). */
const isNodeSocketWork = (url: string) => /node:_http|node:net|streams|stream_base_commons/.test(url);
const nodeInternalLayer = (url: string) => (isNodeSocketWork(url) ? 'HTTP (Node http, whatwg-node adapter, sockets)' : `Node internals (${url})`);

interface Node {
  id: number;
  parent?: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

function foldLayers(path: string) {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  for (const node of profile.nodes) for (const child of node.children ?? []) byId.get(child)!.parent = node.id;
  const layerOf = new Map<number, string>();
  const resolve = (node: Node): string => {
    const known = layerOf.get(node.id);
    if (known) return known;
    const { functionName, url } = node.callFrame;
    let layer: string;
    if (functionName === '(garbage collector)') layer = '(garbage collector)';
    else if (functionName === '(program)') layer = '(V8: compiling, other)';
    else if (!url || url.startsWith('node:')) {
      // Native code and Node's own modules work for their caller: a socket write for the driver or
      // the HTTP response. With no caller of the program's (an event-loop callback), the nearest
      // of Node's modules that names what it does.
      let caller = node.parent === undefined ? undefined : byId.get(node.parent);
      let named = url;
      while (caller && caller.callFrame.url.startsWith('node:')) {
        if (!named || (!isNodeSocketWork(named) && isNodeSocketWork(caller.callFrame.url))) named = caller.callFrame.url;
        caller = caller.parent === undefined ? undefined : byId.get(caller.parent);
      }
      layer = caller && caller.callFrame.url ? resolve(caller) : named ? nodeInternalLayer(named) : '(V8: compiling, other)';
    } else layer = LAYERS.find(([, pattern]) => pattern.test(url))?.[0] ?? (url.includes('/src/') ? `src (${packageOf(url)})` : `other: ${packageOf(url)}`);
    layerOf.set(node.id, layer);
    return layer;
  };
  const totals = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, index) => {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') return;
    const layer = resolve(node);
    if (layer.startsWith('profiler')) return;
    const us = profile.timeDeltas[index] ?? 0;
    busy += us;
    totals.set(layer, (totals.get(layer) ?? 0) + us);
  });
  return { busyMs: Math.round(busy / 1000), layers: [...totals].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, ms: Math.round(us / 1000), percentOfBusy: Number(((100 * us) / busy).toFixed(1)) })) };
}

if (layers) {
  const { busyMs, layers: rows } = foldLayers(file);
  console.log(`busy ${busyMs} ms (the profiler's own samples left out)`);
  console.log(table(['layer (self, native work counted for its caller)', 'ms', '% busy'], rows.map((row) => [row.name, row.ms, row.percentOfBusy])));
} else {
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
}
