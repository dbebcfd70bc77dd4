import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The rooms of src/ and the direction of their imports (README "Architecture"): the domain and the
// change feeds know nothing of GraphQL or of the transports and server above them, and no file
// of src/ reaches itself again through its imports. Read from the files' own import statements
// (type-only imports, re-exports and dynamic imports included), so a new file is checked too.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

type Graph = Map<string, { files: string[]; packages: string[] }>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' ? [] : sourceFiles(path);
    return /\.(ts|mjs)$/.test(path) ? [path] : [];
  });
}

/** A relative import's file (`./x.js` is `./x.ts` in the sources). */
function resolveImport(from: string, specifier: string): string {
  const target = resolve(dirname(from), specifier);
  return target.endsWith('.js') ? `${target.slice(0, -3)}.ts` : target;
}

/** Each file of src/ (repository-relative) with the files of src/ and the packages it imports. */
function importGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of sourceFiles(SRC)) {
    const imports = ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((imported) => imported.fileName);
    graph.set(relative(ROOT, file), {
      files: imports.filter((specifier) => specifier.startsWith('.')).map((specifier) => relative(ROOT, resolveImport(file, specifier))),
      packages: imports.filter((specifier) => !specifier.startsWith('.') && !specifier.startsWith('node:')),
    });
  }
  return graph;
}

/** Every import circle: the strongly connected components of more than one file, or a file that imports itself. */
function importCircles(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    lowest.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(next)!));
      } else if (onStack.has(next)) {
        lowest.set(file, Math.min(lowest.get(file)!, index.get(next)!));
      }
    }
    if (lowest.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || edges.get(file)?.includes(file)) circles.push(component.sort());
  };
  for (const file of edges.keys()) if (!index.has(file)) visit(file);
  return circles;
}

const GRAPHQL_PACKAGES = /^(graphql|graphql-[^/]+|@graphql-[^/]+\/[^/]+|@pothos\/[^/]+|@envelop\/[^/]+|@escape\.tech\/graphql-armor)(\/|$)/;

/** A file's room: its folder under src/ (a file at src/'s top is a room of its own). */
const roomOf = (file: string) => file.split('/').slice(0, 2).join('/');

/** The imports between rooms, each room to the rooms it imports. */
function roomEdges(graph: Graph): Map<string, string[]> {
  const edges = new Map<string, Set<string>>();
  for (const [file, { files }] of graph) {
    const room = roomOf(file);
    if (!edges.has(room)) edges.set(room, new Set());
    for (const target of files) if (graph.has(target) && roomOf(target) !== room) edges.get(room)!.add(roomOf(target));
  }
  return new Map([...edges].map(([room, targets]) => [room, [...targets]]));
}

const inRoom = (room: string) => (file: string) => file.startsWith(`src/${room}/`);

/** The imports of the files of `rooms` that name a GraphQL package or a file of `forbidden`. */
function importsAbove(graph: Graph, rooms: string[], forbidden: string[]): string[] {
  const found: string[] = [];
  for (const [file, { files, packages }] of graph) {
    if (!rooms.some((room) => inRoom(room)(file))) continue;
    for (const target of files) if (forbidden.some((room) => inRoom(room)(target))) found.push(`${file} -> ${target}`);
    for (const name of packages) if (GRAPHQL_PACKAGES.test(name)) found.push(`${file} -> ${name}`);
  }
  return found;
}

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('is read from the files (imports resolve to files of src/)', () => {
    expect(graph.get('src/graphql/schema/subscriptions.ts')?.files).toContain('src/realtime/pubsub.ts');
    expect(graph.get('src/graphql/schema/subscriptions.ts')?.packages).toContain('graphql-yoga');
    const missing = [...graph].flatMap(([file, { files }]) => files.filter((target) => !graph.has(target) && !target.startsWith('src/generated/')).map((target) => `${file} -> ${target}`));
    expect(missing).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    const edges = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', ['d']],
      ['e', ['a']],
    ]);
    expect(importCircles(edges)).toEqual([['d'], ['a', 'b', 'c']]);
  });

  it('has no import circle', () => {
    const edges = new Map([...graph].map(([file, { files }]) => [file, files]));
    expect(importCircles(edges)).toEqual([]);
  });

  it('has no circle between rooms: what a room imports never imports it back', () => {
    const edges = roomEdges(graph);
    expect(edges.get('src/auth')).toContain('src/domain');
    expect(importCircles(edges)).toEqual([]);
  });

  it('keeps the domain and the change feeds free of GraphQL, the transports and the server', () => {
    expect(importsAbove(graph, ['domain', 'realtime'], ['graphql', 'transports', 'server'])).toEqual([]);
  });

  it('keeps the GraphQL layer below the transports and the server, and the transports below the server', () => {
    expect(importsAbove(graph, ['graphql'], ['transports', 'server']).filter((edge) => !GRAPHQL_PACKAGES.test(edge.split(' -> ')[1]!))).toEqual([]);
    expect(importsAbove(graph, ['transports'], ['server']).filter((edge) => !GRAPHQL_PACKAGES.test(edge.split(' -> ')[1]!))).toEqual([]);
  });
});
