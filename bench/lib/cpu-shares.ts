// Where the machine's cores go in a window (Linux /proc): this bench process, the server process,
// the bench database's PostgreSQL backends, PostgreSQL's own background processes, every other
// process, and idle. Read at a window's edges only, synchronously (a few ms), so the edges are
// where the window's timers put them.
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** utime and stime are counted in clock ticks of 10 ms (USER_HZ, 100 on Linux). */
const TICK_SECONDS = 0.01;

export interface CpuSample {
  atMs: number;
  /** All cores: idle (idle + iowait) and total, in ticks; null without /proc/stat. */
  machine: { idle: number; total: number } | null;
  /** This process, in µs (process.cpuUsage: every thread). */
  benchUs: number;
  /** The server process's utime + stime in ticks, every thread; null when not given or unreadable. */
  serverTicks: number | null;
  /** The same for its main thread alone: the event loop (the rest is V8's and libuv's helper threads). */
  serverMainTicks: number | null;
  /** PostgreSQL's processes by pid, in ticks: the backends of the database, and its background processes. */
  postgres: { database: Map<number, number>; background: Map<number, number> } | null;
}

/** The categories of a window, in cores busy (CPU seconds a second) over the window. */
export interface CpuShares {
  seconds: number;
  bench: number;
  server: number | null;
  /** The server's main thread: near 1 when its event loop is the bottleneck. */
  serverMain: number | null;
  /** The database's backends (the floors' connections and the server's alike). */
  postgres: number | null;
  /** Checkpointer, writers, launchers: shared with every database on the server. */
  postgresBackground: number | null;
  /** Everything else: other processes (other benches on a shared machine), the kernel's own work. */
  other: number | null;
  idle: number | null;
  /** Cores of the machine over the window (busy + idle). */
  total: number | null;
}

const ticksOf = (stat: string) => {
  // After "(comm) ": state is field 3, utime and stime fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
};

/** `task`: a process's pid, or `<pid>/task/<tid>` for one of its threads. */
function processTicks(task: number | string): number | null {
  try {
    return ticksOf(readFileSync(`/proc/${task}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

function machineTicks(): CpuSample['machine'] {
  try {
    // user nice system idle iowait irq softirq steal
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    return { idle: ticks[3]! + ticks[4]!, total: ticks.reduce((sum, value) => sum + value, 0) };
  } catch {
    return null;
  }
}

/** PostgreSQL's background processes, by their process titles ("postgres: 15/main: walwriter"). */
const BACKGROUND = /^postgres: (?:.*: )?(checkpointer|background writer|walwriter|autovacuum launcher|logical replication launcher|archiver|stats collector)\b/;

/** A process's parent pid and utime + stime in ticks. */
function statOf(pid: number): { parent: number; ticks: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return { parent: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), ticks: ticksOf(stat) };
  } catch {
    return null;
  }
}

/**
 * A local PostgreSQL's processes, found by their titles: the backends that name the database
 * ("postgres: 15/main: user db 127.0.0.1(port) idle"), and their postmaster with its background
 * processes. Null when no backend of the database is found (PGlite, or a database elsewhere).
 */
function postgresTicks(database: string): CpuSample['postgres'] {
  const titled: { pid: number; title: string }[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      if (title.startsWith('postgres: ')) titled.push({ pid: Number(entry), title });
    } catch {
      // The process has exited.
    }
  }
  const found = { database: new Map<number, number>(), background: new Map<number, number>() };
  let postmaster: number | null = null;
  for (const { pid, title } of titled) {
    if (!title.split(/\s+/).includes(database)) continue;
    const stat = statOf(pid);
    if (!stat) continue;
    found.database.set(pid, stat.ticks);
    postmaster = stat.parent;
  }
  if (postmaster === null) return null;
  for (const { pid, title } of titled) {
    const stat = BACKGROUND.test(title) ? statOf(pid) : null;
    if (stat?.parent === postmaster) found.background.set(pid, stat.ticks);
  }
  const own = processTicks(postmaster);
  if (own !== null) found.background.set(postmaster, own);
  return found;
}

/** Reads every count now. `database`: the PostgreSQL database whose backends count (null: none). */
export function sampleCpu(serverPid: number | null, database: string | null): CpuSample {
  const cpu = process.cpuUsage();
  return {
    atMs: performance.now(),
    machine: machineTicks(),
    benchUs: cpu.user + cpu.system,
    serverTicks: serverPid === null ? null : processTicks(serverPid),
    serverMainTicks: serverPid === null ? null : processTicks(`${serverPid}/task/${serverPid}`),
    postgres: database === null ? null : postgresTicks(database),
  };
}

/** Ticks spent between two readings of the same processes; a process that appeared in between counts from its start. */
const spent = (before: Map<number, number>, after: Map<number, number>) => [...after].reduce((total, [pid, ticks]) => total + ticks - (before.get(pid) ?? 0), 0);

export function cpuShares(before: CpuSample, after: CpuSample): CpuShares {
  const seconds = (after.atMs - before.atMs) / 1000;
  const cores = (ticks: number) => (ticks * TICK_SECONDS) / seconds;
  const bench = (after.benchUs - before.benchUs) / 1e6 / seconds;
  const server = before.serverTicks === null || after.serverTicks === null ? null : cores(after.serverTicks - before.serverTicks);
  const serverMain = before.serverMainTicks === null || after.serverMainTicks === null ? null : cores(after.serverMainTicks - before.serverMainTicks);
  const postgres = before.postgres && after.postgres ? cores(spent(before.postgres.database, after.postgres.database)) : null;
  const postgresBackground = before.postgres && after.postgres ? cores(spent(before.postgres.background, after.postgres.background)) : null;
  if (!before.machine || !after.machine) return { seconds, bench, server, serverMain, postgres, postgresBackground, other: null, idle: null, total: null };
  const total = cores(after.machine.total - before.machine.total);
  const idle = cores(after.machine.idle - before.machine.idle);
  const other = total - idle - bench - (server ?? 0) - (postgres ?? 0) - (postgresBackground ?? 0);
  return { seconds, bench, server, serverMain, postgres, postgresBackground, other, idle, total };
}

/** Windows of one kind as one: each category's CPU seconds over the windows' seconds. */
export function combineShares(windows: CpuShares[]): CpuShares {
  const seconds = windows.reduce((total, window) => total + window.seconds, 0);
  const mean = (pick: (window: CpuShares) => number | null) => {
    let cpuSeconds = 0;
    for (const window of windows) {
      const value = pick(window);
      if (value === null) return null;
      cpuSeconds += value * window.seconds;
    }
    return cpuSeconds / seconds;
  };
  return {
    seconds,
    bench: mean((w) => w.bench)!,
    server: mean((w) => w.server),
    serverMain: mean((w) => w.serverMain),
    postgres: mean((w) => w.postgres),
    postgresBackground: mean((w) => w.postgresBackground),
    other: mean((w) => w.other),
    idle: mean((w) => w.idle),
    total: mean((w) => w.total),
  };
}
