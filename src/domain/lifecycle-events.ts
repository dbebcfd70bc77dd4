import type { Principal } from './principal.js';
import { fromJsonRow, prepared } from '../db/sql.js';
import { withRetries } from '../db/transaction.js';
import type { Message, Run, RunStatus, ToolCall } from '../generated/prisma/client.js';
import { publishWritten, type DomainDeps } from './command.js';
import { DomainError, ERROR_CODES, type ErrorCode } from './errors.js';
import type { DomainEvent } from './events.js';
import { rowId } from './ids.js';

/*
 * The write path's rules live in the database, one PL/pgSQL function per lifecycle event
 * (migration 20261203100000_lifecycle_functions): each locks the run, checks every rule, writes,
 * stamps its changes with the thread's change cursors, and returns what it wrote or the replay,
 * or raises its named refusal before it writes anything. A command here is the input checks that
 * need no database, one call, and the publication of what the call wrote.
 */

/** What a worker presents on every lifecycle write: the run and the epoch it claimed (the fence's token). */
export interface LeaseProof {
  runId: string;
  epoch: number;
}

export type EventKind = 'claimRun' | 'renewLease' | 'modelStarted' | 'modelFinished' | 'toolStarted' | 'toolFinished' | 'toolError' | 'finishRun';

/** One event as its function takes it: the run it is fenced by, and its fields by their GraphQL names. */
export interface SqlEvent {
  kind: EventKind;
  runId: string;
  [field: string]: unknown;
}

/** What an event wrote (`changes`, stamped, in cursor order) or, for a replay, found (no changes). */
export interface Applied {
  /**
   * As the event left them: an audit carries its run (`run`), a tool audit its ToolCall
   * (`toolCall`), a model audit the calls it declared; a finish's run carries its ToolCalls.
   */
  audit?: Message & { declaredToolCalls?: ToolCall[]; toolCall?: ToolCall; run?: Run };
  run?: Run & { toolCalls?: ToolCall[] };
  changes: DomainEvent[];
}

interface JsonRow {
  [column: string]: unknown;
}

/** A change as the functions return it: the row written, stamped with its cursor. */
export interface ChangeJson {
  kind: 'audit' | 'run';
  row: JsonRow;
  leaseOnly?: boolean;
}

interface Result {
  ok?: { audit?: JsonRow; run?: JsonRow; declared?: JsonRow[]; toolCall?: JsonRow; toolCalls?: JsonRow[]; changes: ChangeJson[] };
  refused?: { code: string; message: string; runStatus?: RunStatus };
}

const RECORD_EVENTS = prepared('SELECT result FROM audit_record_events_of($1::text[], $2::jsonb) AS result');

const toJson = (events: SqlEvent | SqlEvent[]) => JSON.stringify(events, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));

function applied(result: Result): Applied | DomainError {
  if (result.refused) {
    const { code, message, runStatus } = result.refused;
    if (!(ERROR_CODES as readonly string[]).includes(code)) throw new Error(`A lifecycle function refused with an unknown code ${code}`);
    return new DomainError(code as ErrorCode, message, runStatus);
  }
  const { audit, run, declared, toolCall, toolCalls, changes } = result.ok!;
  const toolCallOf = (row: JsonRow) => fromJsonRow<ToolCall>(row);
  const ran = run && { ...fromJsonRow<Run>(run), ...(toolCalls && { toolCalls: toolCalls.map(toolCallOf) }) };
  return {
    audit: audit && {
      ...fromJsonRow<Message>(audit),
      ...(declared && { declaredToolCalls: declared.map(toolCallOf) }),
      ...(toolCall && { toolCall: toolCallOf(toolCall) }),
      ...(ran && { run: ran }),
    },
    run: ran,
    changes: changesOf(changes),
  };
}

/** The changes a function wrote, as the domain publishes them. */
export const changesOf = (changes: ChangeJson[]): DomainEvent[] =>
  changes.map(({ kind, row, leaseOnly }) => {
    const stamped = kind === 'run' ? fromJsonRow<Run>(row) : fromJsonRow<Message>(row);
    return { kind, threadId: stamped.threadId, row: stamped, ...(leaseOnly && { leaseOnly }) } as DomainEvent;
  });

/**
 * The most events one call applies. audit_record_events applies each event in a sub-block of its
 * own, a subtransaction with an id of its own once it writes; past 64 of them in one transaction
 * PostgreSQL's per-backend cache of subtransaction ids overflows, and every other session's
 * snapshot then looks its running xids up in pg_subtrans until that transaction ends. A longer
 * batch goes as several calls, in order.
 */
export const EVENTS_PER_CALL = 50;

/**
 * One call of one transaction: event i of `eventsJson` (a JSON array) applied as workers[i], in
 * order, one result each, what it wrote or replayed, or its refusal (which wrote nothing and
 * stopped nothing). A deadlock or serialization failure runs the whole call again (a replay returns
 * what the first run wrote). After the commit each event's changes are published as if it came
 * alone, in order.
 */
async function call(deps: DomainDeps, workers: string[], eventsJson: string): Promise<(Applied | DomainError)[]> {
  const rows = await withRetries(() => deps.db.query<{ result: Result }>(RECORD_EVENTS, [workers, eventsJson]));
  const outcomes = rows.map((row) => applied(row.result));
  for (const outcome of outcomes) if (!(outcome instanceof DomainError)) publishWritten(deps, outcome.changes);
  return outcomes;
}

/** An event of a call that failed (a timeout, an outage) after earlier calls of its batch committed: not applied. */
export class Unapplied {
  constructor(readonly error: unknown) {}
}

/**
 * Applies `events` in order, as `principal`, in one call per EVENTS_PER_CALL (a batch,
 * batch.ts): one result each. A call that fails after earlier ones committed does not hide what
 * they applied: its events and every later one are Unapplied, and are not sent. A failure of the
 * first call applied nothing and is thrown.
 */
export async function applyEvents(deps: DomainDeps, principal: Principal, events: SqlEvent[]): Promise<(Applied | DomainError | Unapplied)[]> {
  const outcomes: (Applied | DomainError | Unapplied)[] = [];
  for (let first = 0; first < events.length; first += EVENTS_PER_CALL) {
    const slice = events.slice(first, first + EVENTS_PER_CALL);
    try {
      outcomes.push(...(await call(deps, slice.map(() => principal.sub), toJson(slice))));
    } catch (error) {
      if (first === 0) throw error;
      const unapplied = new Unapplied(error);
      return [...outcomes, ...events.slice(first).map(() => unapplied)];
    }
  }
  return outcomes;
}

/**
 * The most characters of events' JSON one call of single events carries (it carries one event
 * whatever its size): several workers' requests must not add up to a statement far larger than
 * one of them sends, holding all their runs' locks while it is read.
 */
export const MAX_SHARED_CALL_JSON = 1 << 20;

interface Waiting {
  worker: string;
  /** The event as JSON text. */
  json: string;
  resolve: (outcome: Applied | DomainError) => void;
  reject: (error: unknown) => void;
}

/**
 * The single events (a lifecycle mutation each) of one server. An event goes at once while fewer
 * than `deps.writeCalls` calls of single events are under way; beyond, it waits. When a call ends,
 * the events that waited, and those that come in the same turn of the event loop, go together in
 * the next call, at the turn's end (at most EVENTS_PER_CALL, and MAX_SHARED_CALL_JSON), each as its
 * own worker: under load, one transaction and one round trip serve several workers' events, as a
 * batch serves one worker's. The turn matters on PGlite, whose calls run on the event loop: a call
 * has ended before the next request is read, so without it no event would ever wait. Idle,
 * nothing waits.
 */
class SingleEvents {
  private calls = 0;
  private readonly waiting: Waiting[] = [];
  /** A call ended in this turn of the event loop: the events that come in it wait for the turn's end. */
  private callEnded = false;

  constructor(
    private readonly deps: DomainDeps,
    private readonly maxCalls: number,
  ) {}

  apply(worker: string, event: SqlEvent): Promise<Applied | DomainError> {
    const json = toJson(event);
    return new Promise((resolve, reject) => {
      this.waiting.push({ worker, json, resolve, reject });
      this.sendWaiting();
    });
  }

  private sendWaiting(): void {
    while (!this.callEnded && this.calls < this.maxCalls && this.waiting.length > 0) {
      const group = this.nextGroup();
      this.calls++;
      void this.send(group).finally(() => {
        this.calls--;
        if (!this.callEnded) {
          this.callEnded = true;
          setImmediate(() => {
            this.callEnded = false;
            this.sendWaiting();
          });
        }
      });
    }
  }

  /** The events that waited longest, as many as one call carries. */
  private nextGroup(): Waiting[] {
    let size = 1;
    let json = this.waiting[0]!.json.length;
    for (; size < this.waiting.length && size < EVENTS_PER_CALL; size++) {
      json += this.waiting[size]!.json.length;
      if (json > MAX_SHARED_CALL_JSON) break;
    }
    return this.waiting.splice(0, size);
  }

  private async send(group: Waiting[]): Promise<void> {
    try {
      const outcomes = await call(this.deps, group.map(({ worker }) => worker), `[${group.map(({ json }) => json).join(',')}]`);
      group.forEach(({ resolve }, index) => resolve(outcomes[index]!));
    } catch (error) {
      if (group.length === 1) return group[0]!.reject(error);
      // The call wrote nothing: each event alone, so that what failed it fails its own caller only.
      await Promise.all(group.map(({ worker, json, resolve, reject }) => call(this.deps, [worker], `[${json}]`).then(([outcome]) => resolve(outcome!), reject)));
    }
  }
}

const singleEvents = new WeakMap<DomainDeps, SingleEvents>();

/** One event alone (a lifecycle mutation): what it wrote or replayed; its refusal is thrown. */
export async function applyEvent(deps: DomainDeps, principal: Principal, event: SqlEvent): Promise<Applied> {
  let events = singleEvents.get(deps);
  if (!events) singleEvents.set(deps, (events = new SingleEvents(deps, deps.writeCalls ?? 1)));
  const outcome = await events.apply(principal.sub, event);
  if (outcome instanceof DomainError) throw outcome;
  return outcome;
}

/**
 * The fields every event fenced by a lease carries. A run id that is no UUID names no run
 * (ids.ts `rowId`): refused here, never sent.
 */
export function leased(kind: EventKind, lease: LeaseProof): SqlEvent {
  rowId(lease.runId, 'Run');
  return { kind, runId: lease.runId, epoch: lease.epoch };
}
