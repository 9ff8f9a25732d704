/**
 * The footprint of a run: a generic measure of what it changed, without knowing any step's tables or providers.
 *
 * A footprint is a flat record of numbers, read from the catalogue rather than from a list of tables:
 * - `<table>#rows`: the row count of every base table of the `public` schema (information_schema);
 * - `<table>.<column>`: the sum of every integer column (smallint, integer, bigint) of those tables, except retry
 *   bookkeeping ({@link isBookkeeping}); timestamps, text and JSON are not summed;
 * - `<table>.<column>#set`: the number of non-null values of every nullable column (so a write that only fills a
 *   column, e.g. a timestamp that marks a record void, shows; values themselves are not compared, as they differ
 *   from order to order);
 * - `ledger:<provider>`: the number of effects in each simulated provider's ledger.
 *
 * Two runs that each start from their own fresh order are compared by their deltas ({@link footprintDelta}): a
 * replayed increment doubles a sum, a duplicated insert doubles a row count, a second effect doubles a ledger count.
 * Deltas are only meaningful while nothing else writes to the database or the simulators, so every conformance lane
 * has its own database and its own simulator server and runs its scenarios one at a time.
 */
import { Prisma } from '../../prisma/generated/client.js';
import type { SqlQueries } from '../../activities/ports.js';
import type { RunningSimulators } from '../../simulators/shared/simulator-server.js';

/** Absolute values, or (from {@link footprintDelta}) the non-zero differences, by measure name (see the module). */
export type Footprint = Record<string, number>;

/** The tables and integer columns a footprint reads (read once per database: the schema does not change). */
export interface FootprintSchema {
  tables: Array<{ name: string; integerColumns: string[]; nullableColumns: string[] }>;
}

/**
 * Columns that legitimately change when a run is retried without any change of effect: retry counters (a column
 * named `attempts`, e.g. the number of times a claim was taken). Everything else must be identical between a run
 * and its retries.
 */
export function isBookkeeping(column: string): boolean {
  return column === 'attempts';
}

/** Reads the base tables of the `public` schema and their integer columns from information_schema. */
export async function readFootprintSchema(db: SqlQueries): Promise<FootprintSchema> {
  const rows = await db.$queryRaw<
    Array<{ table_name: string; integer_columns: string[] | null; nullable_columns: string[] | null }>
  >`
    SELECT t.table_name,
           array_agg(c.column_name::text ORDER BY c.ordinal_position)
             FILTER (WHERE c.data_type IN ('smallint', 'integer', 'bigint')) AS integer_columns,
           array_agg(c.column_name::text ORDER BY c.ordinal_position)
             FILTER (WHERE c.is_nullable = 'YES') AS nullable_columns
    FROM information_schema.tables t
    JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name
    WHERE t.table_schema = 'public' AND t.table_type = 'BASE TABLE'
    GROUP BY t.table_name
    ORDER BY t.table_name`;
  return {
    tables: rows.map((r) => ({
      name: r.table_name,
      integerColumns: (r.integer_columns ?? []).filter((c) => !isBookkeeping(c)),
      nullableColumns: (r.nullable_columns ?? []).filter((c) => !isBookkeeping(c)),
    })),
  };
}

function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/**
 * Measures the database (one statement, so one snapshot) and every simulated provider's ledger.
 * @returns absolute values (see the module for the names).
 */
export async function measureFootprint(
  db: SqlQueries,
  schema: FootprintSchema,
  sims: RunningSimulators,
): Promise<Footprint> {
  const selects = schema.tables.map((t) => {
    const sums = t.integerColumns.map((c) => `, ${literal(c)}, coalesce(sum(${ident(c)}), 0)`);
    const set = t.nullableColumns.map((c) => `, ${literal(`${c}#set`)}, count(${ident(c)})`);
    // json_build_object takes at most 100 arguments: one object per group of 40 measures, merged.
    const measures = [...sums, ...set];
    const objects = [`json_build_object('#rows', count(*))::jsonb`];
    for (let i = 0; i < measures.length; i += 40) {
      objects.push(
        `json_build_object(${measures
          .slice(i, i + 40)
          .join('')
          .slice(2)})::jsonb`,
      );
    }
    return `SELECT ${literal(t.name)} AS table_name, (${objects.join(' || ')})::text AS measures FROM ${ident(t.name)}`;
  });
  const rows = await db.$queryRaw<Array<{ table_name: string; measures: string }>>(
    Prisma.raw(selects.join('\nUNION ALL\n')),
  );
  const footprint: Footprint = {};
  for (const row of rows) {
    for (const [measure, value] of Object.entries(JSON.parse(row.measures) as Record<string, number>)) {
      footprint[measure === '#rows' ? `${row.table_name}#rows` : `${row.table_name}.${measure}`] = Number(value);
    }
  }
  for (const [name, sim] of Object.entries(sims.providers)) footprint[`ledger:${name}`] = sim.ledger.effects().length;
  return footprint;
}

/** `after − before`, keeping only the measures that changed (sorted by name, so two deltas compare with deepEqual). */
export function footprintDelta(before: Footprint, after: Footprint): Footprint {
  const delta: Footprint = {};
  for (const name of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const d = (after[name] ?? 0) - (before[name] ?? 0);
    if (d !== 0) delta[name] = d;
  }
  return delta;
}
