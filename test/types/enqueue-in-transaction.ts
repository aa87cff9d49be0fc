// Type test, checked by `pnpm typecheck` and never run: `enqueueIn` takes the transaction of the
// backend it writes through. The server, the publisher and the generated module infer the kind
// from the backend they are given (`SqliteTransaction`: a Kysely transaction; `PostgresTransaction`:
// a Kysely transaction or a pg client inside BEGIN), so each `@ts-expect-error` line below must
// stay an error and every other line must compile.
import type { Kysely, Transaction } from "kysely";
import type pg from "pg";
import { BackgroundJobServer, type JobPublisher, type TransactionHandle } from "@later/runtime";
import { postgres, type PostgresTransaction } from "@later/runtime/postgres";
import { sqlite, type SqliteTransaction } from "@later/runtime/sqlite";
import { JobsBuilder, type JobsContext, openJobsPublisher } from "../codegen/schemas/shop.generated.js";
import type { CreateAccount, ProcessOrder, SendEmail } from "../codegen/schemas/shop.schema.js";

interface AppDatabase {
  orders: { id: string };
}

declare const trx: Transaction<AppDatabase>;
/** A Kysely instance, not a transaction: its statements would commit one by one. */
declare const db: Kysely<AppDatabase>;
/** A pg client the application ran BEGIN on. */
declare const client: pg.PoolClient;
/** A pool: its statements would each run on a connection of their own, outside any transaction. */
declare const pool: pg.Pool;

const email: SendEmail = { address: "a@b.c", body: "hi" };
const order: ProcessOrder = { customerId: 42, description: "add item" };
const account: CreateAccount = { id: "a", createdAt: new Date() };
const ignore = async (): Promise<void> => {};

export async function generatedOnSqlite(): Promise<void> {
  const server = await new JobsBuilder({ context: { app: true }, backend: sqlite({ file: "x.db" }) })
    .withSendEmailHandler(async (ctx) => {
      await ctx.jobs.createAccount.enqueueIn(trx, account);
      // @ts-expect-error in a handler too: a pg client is PostgreSQL's
      await ctx.jobs.createAccount.enqueueIn(client, account);
    })
    .withCreateAccountHandler(ignore)
    .withProcessOrderHandler(ignore)
    .build();
  await server.jobs.sendEmail.enqueueIn(trx, email);
  await server.jobs.processOrder.enqueueToPartitionIn(trx, order);
  // @ts-expect-error a pg client is PostgreSQL's, not SQLite's
  await server.jobs.sendEmail.enqueueIn(client, email);
  // @ts-expect-error a Kysely instance is not a transaction
  await server.jobs.sendEmail.enqueueIn(db, email);
  // @ts-expect-error nor is anything else
  await server.jobs.processOrder.enqueueToPartitionIn({}, order);

  const publisher = await openJobsPublisher({ backend: sqlite({ file: "x.db" }) });
  await publisher.jobs.sendEmail.enqueueIn(trx, email);
  // @ts-expect-error the publisher infers SQLite's kind too
  await publisher.jobs.sendEmail.enqueueIn(client, email);
}

export async function generatedOnPostgres(): Promise<void> {
  const server = await new JobsBuilder({ context: null, backend: postgres({ connectionString: "postgres://x" }) })
    .withSendEmailHandler(ignore)
    .withCreateAccountHandler(ignore)
    .withProcessOrderHandler(ignore)
    .build();
  await server.jobs.sendEmail.enqueueIn(trx, email);
  await server.jobs.sendEmail.enqueueIn(client, email);
  await server.jobs.processOrder.enqueueToPartitionIn(client, order);
  // @ts-expect-error a pool is not a transaction
  await server.jobs.sendEmail.enqueueIn(pool, email);
  // @ts-expect-error nor is a Kysely instance
  await server.jobs.sendEmail.enqueueIn(db, email);

  const publisher = await openJobsPublisher({ backend: postgres({ connectionString: "postgres://x" }) });
  await publisher.jobs.sendEmail.enqueueIn(client, email);
  // @ts-expect-error the publisher infers PostgreSQL's kind too
  await publisher.jobs.sendEmail.enqueueIn(pool, email);
}

export async function untypedServers(): Promise<void> {
  const onSqlite = await BackgroundJobServer.start({ context: null, backend: sqlite({ file: "x.db" }), handlers: {} });
  const onPostgres = await BackgroundJobServer.start({ context: null, backend: postgres({ connectionString: "postgres://x" }), handlers: {} });
  const sqlitePublisher: JobPublisher<SqliteTransaction> = onSqlite.publisher;
  const postgresPublisher: JobPublisher<PostgresTransaction> = onPostgres.publisher;
  await sqlitePublisher.enqueueIn(trx, "sendEmail", email);
  await postgresPublisher.enqueueIn(client, "sendEmail", email);
  // @ts-expect-error a pg client on SQLite
  await onSqlite.publisher.enqueueIn(client, "sendEmail", email);
  // @ts-expect-error a pool on PostgreSQL
  await onPostgres.publisher.enqueueToPartitionIn(pool, "processOrder", order, { topic: "orders", key: 42 });
}

/**
 * Given the app context's type explicitly (`new JobsBuilder<App>`, `JobsContext<App>`), TypeScript
 * infers no other type argument: `Trx` is then `TransactionHandle`, either backend's kind. What is
 * no transaction at all is still refused; a pg client on SQLite is refused at run time
 * (`InvalidArgumentError`). Give `Trx` too to have that checked as well.
 */
export async function explicitContext(ctx: JobsContext<{ app: true }>, onSqlite: JobsContext<{ app: true }, SqliteTransaction>): Promise<void> {
  const server = await new JobsBuilder<{ app: true }>({ context: { app: true }, backend: sqlite({ file: "x.db" }) })
    .withSendEmailHandler(async (c: JobsContext<{ app: true }>) => void c.attempt)
    .withCreateAccountHandler(ignore)
    .withProcessOrderHandler(ignore)
    .build();
  const handle: TransactionHandle = client;
  await server.jobs.sendEmail.enqueueIn(handle, email);
  await ctx.jobs.sendEmail.enqueueIn(trx, email);
  // @ts-expect-error a pool is no transaction of any backend
  await server.jobs.sendEmail.enqueueIn(pool, email);
  // @ts-expect-error nor a Kysely instance
  await ctx.jobs.sendEmail.enqueueIn(db, email);
  await onSqlite.jobs.sendEmail.enqueueIn(trx, email);
  // @ts-expect-error `JobsContext<App, SqliteTransaction>` refuses a pg client
  await onSqlite.jobs.sendEmail.enqueueIn(client, email);
  const typed = await new JobsBuilder<{ app: true }, SqliteTransaction>({ context: { app: true }, backend: sqlite({ file: "x.db" }) })
    .withSendEmailHandler(ignore)
    .withCreateAccountHandler(ignore)
    .withProcessOrderHandler(ignore)
    .build();
  // @ts-expect-error `JobsBuilder<App, SqliteTransaction>` refuses it too
  await typed.jobs.sendEmail.enqueueIn(client, email);
}
