// The merge rule of docs/debug-ui.md: a thread's timeline read once (timeline.graphql's Timeline
// and Runs) and kept current by threadChanges (Live), so that it always equals what a new read
// would return. Plain TypeScript, no dependency: use it in a browser or in Node.js.

/** An object of the API that has an id: a Run, an audit, a ToolCall. */
export interface Entity {
  __typename: string;
  id: string;
  [field: string]: unknown;
}

/** The fields that hold other entities; every other field is a value (JSON values included). */
const LINKS = ['run', 'resumedFrom', 'toolCall', 'toolCalls', 'declaredBy'];

type Key = string;
const keyOf = (entity: Entity): Key => `${entity.__typename}:${entity.id}`;

// #region merge-rule
export class Timeline {
  /** One copy of each entity, by `__typename:id`, its links held as keys. */
  private readonly entities = new Map<Key, Record<string, unknown>>();
  /** The audits shown, in the server's order. */
  private auditKeys: Key[] = [];
  /** The thread's run ids in creation order. */
  private runOrder: string[] = [];
  truncated = false;
  /** The cursor of the last change applied: resubscribe with `after: cursor`. */
  cursor: string;

  /**
   * `timeline`: the Timeline query's threadAudits; `runs`: the Runs query's, read after it;
   * `readRunIds`: reads the run ids again (Runs), for a change that names a run not seen yet.
   */
  constructor(
    timeline: { cursor: string; truncated: boolean; items: Entity[] },
    runs: Entity[],
    private readonly readRunIds: () => Promise<string[]>,
  ) {
    this.cursor = timeline.cursor;
    this.truncated = timeline.truncated;
    for (const run of runs) this.store(run);
    this.runOrder = runs.map((run) => run.id);
    this.auditKeys = timeline.items.map((audit) => this.store(audit));
  }

  /** Applies one threadChanges event (await each before the next). Applying one twice changes nothing. */
  async apply(change: { cursor: string; run?: Entity | null; audit?: Entity | null }): Promise<void> {
    const runId = change.run?.id ?? (change.audit?.runId as string);
    // A new run's place: the order runs were created in, which only a read tells (a catch-up
    // sends each run once, at its latest change, so arrival order is not creation order).
    if (!this.runOrder.includes(runId)) this.runOrder = await this.readRunIds();
    if (change.run) this.store(change.run);
    if (change.audit) this.applyAudit(change.audit);
    this.cursor = change.cursor;
  }

  /** The audits with their links resolved, as a new threadAudits read returns them. */
  items(): Record<string, unknown>[] {
    return this.auditKeys.map((key) => this.resolve(key));
  }

  /** The runs, in creation order, as the Runs query returns them. */
  runs(): Record<string, unknown>[] {
    return this.runOrder.filter((id) => this.entities.has(`Run:${id}`)).map((id) => this.resolve(`Run:${id}`));
  }

  private applyAudit(audit: Entity): void {
    const key = this.store(audit);
    if (this.auditKeys.includes(key)) return;
    // An audit older than the first one of a truncated read is outside the window: not shown.
    if (this.truncated && this.auditKeys.length > 0 && this.compare(key, this.auditKeys[0]!) < 0) return;
    this.auditKeys = [...this.auditKeys, key].sort((a, b) => this.compare(a, b));
  }

  /**
   * The rule that keeps every selected field: an entity is stored field by field, and each copy
   * that arrives (an audit, its run, its tool call, a declaring model call) sets the fields it
   * carries and keeps the others. `ToolAudit.toolCall` selects fewer fields than
   * `ModelAudit.toolCalls`, `declaredBy` fewer than the audit itself: neither erases the rest.
   */
  private store(entity: Entity): Key {
    const key = keyOf(entity);
    const fields: Record<string, unknown> = { ...entity };
    for (const link of LINKS) {
      const value = entity[link];
      if (Array.isArray(value)) fields[link] = value.map((linked: Entity) => this.store(linked));
      else if (value) fields[link] = this.store(value as Entity);
    }
    this.entities.set(key, { ...this.entities.get(key), ...fields });
    return key;
  }

  private resolve(key: Key): Record<string, unknown> {
    const entity = { ...this.entities.get(key)! };
    for (const link of LINKS) {
      const value = entity[link];
      if (Array.isArray(value)) entity[link] = value.map((linked: Key) => this.resolve(linked));
      else if (typeof value === 'string') entity[link] = this.resolve(value);
    }
    return entity;
  }

  /** The server's order: run creation, then sequence, then the model call before the tool, then id. */
  private compare(a: Key, b: Key): number {
    const [x, y] = [this.entities.get(a)!, this.entities.get(b)!];
    const run = this.runOrder.indexOf(x.runId as string) - this.runOrder.indexOf(y.runId as string);
    if (run !== 0) return run;
    const sequence = BigInt(x.sequence as string) - BigInt(y.sequence as string);
    if (sequence !== 0n) return sequence < 0n ? -1 : 1;
    if (x.role !== y.role) return x.role === 'ASSISTANT' ? -1 : 1;
    return x.id === y.id ? 0 : (x.id as string) < (y.id as string) ? -1 : 1;
  }
}
// #endregion merge-rule
