/**
 * Statements that mean the same on SQLite and PostgreSQL, written once with
 * Kysely and compiled once per dialect (on PostgreSQL, per schema) at first
 * use. A statement is built with placeholders standing for its parameters
 * ({@link Placeholders}); the compiled text is cached, and each call only
 * binds its values to it, so a shared statement costs what a hand-written
 * one does. A statement whose shape depends on its parameters (an optional
 * filter, the length of a list) names its variant, and each variant is
 * compiled once.
 *
 * A dialect runs the bound statement on its own connection
 * ({@link RunStatement}): SQLite through its cache of prepared statements,
 * PostgreSQL as a named prepared statement on the backend's pool. Rows come
 * back as the driver returns them (PostgreSQL bigints as strings), so each
 * statement's `read` turns them into the seam's types.
 */
import {
  type Compilable,
  type RawBuilder,
  sql,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";
import type { LaterDatabase } from "../schema.js";
import type { Row } from "./job-rows.js";

/** SQL text and the values of its parameters, in order. */
export interface BoundStatement {
  readonly text: string;
  readonly values: unknown[];
}

/** Runs a bound statement on a dialect's connection and returns its rows. */
export type RunStatement = (statement: BoundStatement) => Row[] | Promise<Row[]>;

/**
 * A bound row count (`LIMIT`, `OFFSET`) as `? + 0`, so that SQLite does not plan on its value.
 *
 * SQLite (3.53, as better-sqlite3 12 bundles it) reads the value bound to a bare `LIMIT ?` while it
 * plans, and a statement planned on a bound value is prepared again whenever that parameter is bound
 * again: better-sqlite3 binds every parameter at every run, so every run parsed and planned the
 * statement anew. Measured on a claim (`UPDATE ... WHERE id IN (SELECT ... LIMIT ?)`, 8 rows):
 * 126 µs a run, 44 µs with `? + 0`, the same as with a literal limit. The sum is still the bound
 * value at run time; PostgreSQL reads it as it reads the bare parameter. Every SQLite statement
 * that binds a row count writes it so: in SQL text `LIMIT ? + 0`, in a Kysely statement
 * `.limit(unplanned($("limit")))`.
 */
export function unplanned(value: number): RawBuilder<number> {
  return sql<number>`${value} + 0`;
}

/** A Kysely that only compiles (it has no connection), for one dialect and, on PostgreSQL, one schema. */
export type StatementCompiler = Kysely<LaterDatabase>;

/**
 * Stand-ins for a statement's values while it is built: `$("now")` for one
 * value, `$.list("jobTypes", n)` for each of a list's `n` elements. Typed as
 * the values they stand for, so Kysely checks them against the columns.
 */
export interface Placeholders<V> {
  <K extends keyof V & string>(name: K): Exclude<V[K], undefined>;
  list<K extends keyof V & string>(name: K, length: number): Exclude<V[K], undefined>;
}

/** How a shared statement is built, which variant a call needs, and what its rows mean. */
export interface SharedStatementSpec<P, R, V> {
  /** Builds the statement (once per compiler and variant); `params` may only choose its shape. */
  build(db: StatementCompiler, $: Placeholders<V>, params: P): Compilable<unknown>;
  /** The variant `params` needs, when the statement's shape depends on them. Default: one shape. */
  variant?(params: P): string;
  /** The values the placeholders stand for. Default: the params themselves. */
  values?(params: P): V;
  read(rows: Row[]): R;
}

/** One shared statement: the SQL written once, compiled per compiler and variant on first use. */
export class SharedStatement<P extends object, R, V extends object = P> {
  private readonly compiled = new WeakMap<StatementCompiler, Map<string, Compiled>>();

  constructor(private readonly spec: SharedStatementSpec<P, R, V>) {}

  /** The statement's text for `db` (compiled on first use) and this call's values. */
  bind(db: StatementCompiler, params: P): BoundStatement {
    let variants = this.compiled.get(db);
    if (!variants) this.compiled.set(db, (variants = new Map()));
    const key = this.spec.variant?.(params) ?? "";
    let compiled = variants.get(key);
    if (!compiled) variants.set(key, (compiled = compile(this.spec.build(db, PLACEHOLDERS as Placeholders<V>, params))));
    const values = (this.spec.values?.(params) ?? params) as Record<string, unknown>;
    return { text: compiled.text, values: compiled.slots.map((slot) => slot.valueIn(values)) };
  }

  /** Binds `params`, runs the statement with `run` and reads its rows. */
  async run(db: StatementCompiler, run: RunStatement, params: P): Promise<R> {
    return this.spec.read(await run(this.bind(db, params)));
  }
}

/** Compiles SQLite statements. */
export const sqliteCompiler: StatementCompiler = new Kysely<LaterDatabase>({
  dialect: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
});

const postgresBase = new Kysely<LaterDatabase>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** Compiles PostgreSQL statements on the tables of `schema`. Make one per backend and keep it: statements are cached per compiler. */
export function postgresCompiler(schema: string): StatementCompiler {
  return postgresBase.withSchema(schema);
}

// ---- placeholders -----------------------------------------------------------

/** Placeholders are strings no caller can pass: a NUL byte, then the value's name (and `:index` in a list). */
const MARK = "\u0000later:";

const PLACEHOLDERS = Object.assign((name: string) => `${MARK}${name}`, {
  list: (name: string, length: number) => Array.from({ length }, (_, i) => `${MARK}${name}:${i}`),
});

interface Compiled {
  readonly text: string;
  readonly slots: readonly Slot[];
}

/** One parameter of a compiled statement: a placeholder's value, or a value Kysely bound itself. */
interface Slot {
  valueIn(values: Record<string, unknown>): unknown;
}

function compile(query: Compilable<unknown>): Compiled {
  const { sql, parameters } = query.compile();
  return { text: sql, slots: parameters.map(slotOf) };
}

function slotOf(parameter: unknown): Slot {
  if (typeof parameter !== "string" || !parameter.startsWith(MARK)) return { valueIn: () => parameter };
  const [name, index] = parameter.slice(MARK.length).split(":") as [string, string | undefined];
  if (index === undefined) return { valueIn: (values) => values[name] };
  const i = Number(index);
  return { valueIn: (values) => (values[name] as readonly unknown[])[i] };
}
