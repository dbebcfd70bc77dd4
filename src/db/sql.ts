/** A transaction's own connection: parametrized SQL, rows in the shape Prisma gives them. */
export interface Sql {
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>;
}

// BigInt columns (Prisma: `bigint`); drivers hand them over as strings or numbers.
const BIGINT_COLUMNS = new Set(['sequence', 'finished_sequence', 'start_clock_nanos', 'end_clock_nanos', 'created_order', 'change_cursor']);
/** JSON columns: written as JSON text, a JS null meaning SQL NULL (as Prisma's DbNull). */
const JSON_COLUMNS = new Set(['content', 'input', 'output', 'error', 'usage', 'declared_input', 'effective_input']);

const camelNames = new Map<string, string>();
const camel = (column: string) => {
  let name = camelNames.get(column);
  if (name === undefined) {
    name = column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
    camelNames.set(column, name);
  }
  return name;
};
const snake = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** The one row mapper: camelCase fields, `bigint` for BigInt columns; timestamps and JSON come parsed. */
export function toRow<Row>(raw: Record<string, unknown>): Row {
  const row: Record<string, unknown> = {};
  for (const column in raw) {
    const value = raw[column];
    row[camel(column)] =
      BIGINT_COLUMNS.has(column) && value !== null && typeof value !== 'bigint' ? BigInt(value as string) : value;
  }
  return row as Row;
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

/** Multi-row INSERT; every row must set the same fields. RETURNING promises no order. */
export async function insertRows<Row>(sql: Sql, table: string, rows: Record<string, unknown>[]): Promise<Row[]> {
  if (rows.length === 0) return [];
  const values: unknown[] = [];
  let columns: string[] = [];
  const tuples = rows.map((data) => {
    const row = columnValues(data);
    columns = row.columns;
    const start = values.length;
    values.push(...row.values);
    return `(${row.columns.map((_, index) => `$${start + index + 1}`).join(', ')})`;
  });
  return sql.query<Row>(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')} RETURNING *`, values);
}

/** UPDATE of the defined fields of `data` (camelCase) on the row `id`, returning it. */
export async function updateRow<Row>(sql: Sql, table: string, id: string, data: Record<string, unknown>): Promise<Row> {
  const { columns, values } = columnValues(data);
  const [row] = await sql.query<Row>(
    `UPDATE ${table} SET ${columns.map((column, index) => `${column} = $${index + 2}`).join(', ')} WHERE id = $1 RETURNING *`,
    [id, ...values],
  );
  // As Prisma's update: a missing row is an error, never a silent no-op.
  if (!row) throw new Error(`No ${table} row ${id} to update`);
  return row;
}
