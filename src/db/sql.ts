/** A connection, or a transaction's own: parametrized SQL, rows in the shape Prisma gives them. */
export interface Sql {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>;
  /**
   * The same statement once for each parameter list, each a statement of its own (its own
   * snapshot), all in one round trip: PostgreSQL's pool, for a `preparedGeneric` text. Without it,
   * the caller runs `query` for each list.
   */
  queryEach?<Row = Record<string, unknown>>(text: string, paramLists: unknown[][]): Promise<Row[][]>;
}

const preparedTexts = new Set<string>();

/**
 * Marks a fixed statement text as one to prepare once per connection (a named prepared statement
 * on PostgreSQL: parsed and planned once, then only bound and executed): the lifecycle statements'
 * large CTEs. Returns the text.
 */
export function prepared(text: string): string {
  preparedTexts.add(text);
  return text;
}

export const isPrepared = (text: string) => preparedTexts.has(text);

const genericTexts = new Set<string>();

/**
 * As `prepared`, and planned once for every argument (a generic plan). PostgreSQL otherwise plans
 * a named statement again at each execution while that plan looks cheaper than the generic one
 * (plan_cache_mode auto): for a statement whose planning costs as much as a small execution, as the
 * tool activity view's (1.45 ms planning, 1.37 ms executing; bench/README.md run SV1), that is half.
 */
export function preparedGeneric(text: string): string {
  genericTexts.add(text);
  return prepared(text);
}

export const isGeneric = (text: string) => genericTexts.has(text);

// BigInt columns (Prisma: `bigint`); drivers hand them over as strings or numbers.
const BIGINT_COLUMNS = new Set(['sequence', 'finished_sequence', 'start_clock_nanos', 'end_clock_nanos', 'created_order', 'change_cursor']);
/** JSON columns: written as JSON text, a JS null meaning SQL NULL (as Prisma's DbNull). */
const JSON_COLUMNS = new Set(['content', 'input', 'output', 'error', 'usage', 'declared_input', 'effective_input']);

const camel = (column: string) => column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
/** The row fields of the BigInt columns, as the row mapper names them. */
export const BIGINT_FIELDS: ReadonlySet<string> = new Set([...BIGINT_COLUMNS].map(camel));
/** A row field's column (`toolCallRowId` → `tool_call_row_id`). */
export const snake = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

const toBigInt = (value: unknown) => (value === null || typeof value === 'bigint' ? value : BigInt(value as string));

type RowMapper = (values: unknown[]) => Record<string, unknown>;
const rowMappers = new Map<string, RowMapper>();

/**
 * The row mapper of one column list: an object literal with the columns' fields, compiled once
 * per list (a statement's columns are fixed, so there are as many as statements). V8 builds such
 * objects several times faster than field by field, and a timeline read maps over a thousand rows.
 */
function rowMapper(columns: readonly string[]): RowMapper {
  const key = columns.join(',');
  let mapper = rowMappers.get(key);
  if (!mapper) {
    const fields = columns.map((column, index) => {
      const value = BIGINT_COLUMNS.has(column) ? `toBigInt(values[${index}])` : `values[${index}]`;
      return `${JSON.stringify(camel(column))}: ${value}`;
    });
    mapper = new Function('toBigInt', `return (values) => ({ ${fields.join(', ')} })`)(toBigInt) as RowMapper;
    rowMappers.set(key, mapper);
  }
  return mapper;
}

/**
 * The one row mapper, over rows as the drivers give them in array mode (each column named once,
 * not once a row): camelCase fields, `bigint` for BigInt columns; timestamps and JSON come parsed.
 */
export function toRows<Row>(rows: unknown[][], columns: readonly string[]): Row[] {
  return rows.map(rowMapper(columns)) as Row[];
}

/**
 * A timestamp read from the database that keeps the ISO text it was read from: serializing a
 * timeline writes thousands of timestamps, and `Date#toISOString` costs more than the parse.
 * Row timestamps are never mutated.
 */
class StoredTimestamp extends Date {
  constructor(private readonly iso: string) {
    super(iso);
  }

  override toISOString(): string {
    return this.iso;
  }
}

/**
 * A timestamptz as PostgreSQL writes it in UTC ('2026-12-01 06:12:08.79+00'), read as the ISO
 * string it almost is ('2026-12-01T06:12:08.790Z'): the drivers' general date parsers cost more
 * than the rest of a row. Any other form (another time zone, BC, infinity) goes to the driver's.
 */
export const timestampParser =
  (driversOwn: (text: string) => unknown) =>
  (text: string): unknown => {
    if (text.length < 22 || text.charCodeAt(10) !== 32 || !text.endsWith('+00')) return driversOwn(text);
    const time = text.slice(11, -3);
    const millis = time.length > 8 ? time.slice(9, 12).padEnd(3, '0') : '000';
    return new StoredTimestamp(`${text.slice(0, 10)}T${time.slice(0, 8)}.${millis}Z`);
  };

const TIMESTAMP_COLUMNS = new Set(['started_at', 'finished_at', 'created_at', 'changed_at', 'lease_expires_at']);

/**
 * A row as the database's `to_jsonb` gave it, with its bigints as text (the lifecycle functions'
 * results, migration 20261203100000_lifecycle_functions), in the shape `toRows` gives.
 */
export function fromJsonRow<Row>(json: Record<string, unknown>): Row {
  const row: Record<string, unknown> = {};
  for (const column in json) {
    const value = json[column];
    const { field, read } = jsonColumn(column);
    row[field] = value === null ? null : read(value);
  }
  return row as Row;
}

const asIs = (value: unknown) => value;
const jsonColumns = new Map<string, { field: string; read: (value: unknown) => unknown }>();

/** A column's field and reader, worked out once per column name (a batch maps thousands of rows). */
function jsonColumn(column: string) {
  let known = jsonColumns.get(column);
  if (!known) {
    const read = BIGINT_COLUMNS.has(column) ? (value: unknown) => BigInt(value as string) : TIMESTAMP_COLUMNS.has(column) ? (value: unknown) => new Date(value as string) : asIs;
    jsonColumns.set(column, (known = { field: camel(column), read }));
  }
  return known;
}

/** A parameter as both drivers take it. */
export const param = (value: unknown) => (typeof value === 'bigint' ? value.toString() : value);

function columnValues(data: Record<string, unknown>) {
  const columns: string[] = [];
  const values: unknown[] = [];
  for (const field in data) {
    const value = data[field];
    if (value === undefined) continue;
    const column = snake(field);
    columns.push(column);
    values.push(JSON_COLUMNS.has(column) ? (value === null ? null : JSON.stringify(value)) : value);
  }
  return { columns, values };
}

/** INSERT of the defined fields of `data` (camelCase) into `table`, returning the row. */
export async function insertRow<Row>(sql: Sql, table: string, data: Record<string, unknown>): Promise<Row> {
  const { columns, values } = columnValues(data);
  const placeholders = columns.map((_, index) => `$${index + 1}`);
  const [row] = await sql.query<Row>(
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${placeholders.join(', ')}) RETURNING *`,
    values,
  );
  return row!;
}
