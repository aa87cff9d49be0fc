import type { Backend } from "../backend/backend.js";
import type { TransactionHandle } from "../backend/transaction-handle.js";
import type { Clock } from "../core/clock.js";
import { InvalidConfigError, describeValue } from "../errors.js";
import type { LaterLogger } from "../events/event-sink.js";
import type { ServerEvent } from "../events/server-event.js";
import { checkInt } from "../maintenance/periodic-service.js";
import type { LogTopicConfig } from "./log-topic.js";

/** Options of {@link RetainedLog.open}. */
export interface RetainedLogOptions<Trx = TransactionHandle> {
  /** The database (`sqlite({ file })`, `postgres({ connectionString })`); opened by `open`; `close` closes it once no server, publisher or other log opened on it is left open. */
  backend: Backend<Trx>;
  /** The topics this log appends to and reads (`logTopic(name, partitions, retention?)`); registered at open. */
  topics: readonly LogTopicConfig[];
  /** Migrate the database at open instead of refusing a schema that is behind. Default false. */
  autoMigrate?: boolean;
  /** The clock of record timestamps (tests pass a manual one). Default: the system clock, set to the database's on PostgreSQL. */
  clock?: Clock;
  /**
   * The retention sweep this log runs while open (docs/semantics.md L6): every
   * `intervalMs` (default 60000) one process of the namespace deletes the
   * records past their topics' retention, `batchSize` (default 500) per
   * statement; see {@link LogRetentionSweeper}. `false`: this log does not
   * sweep (another process does, or call {@link RetainedLog.sweepRetention}).
   * Default: on, with the defaults.
   */
  retention?: RetainedLogRetentionOptions | false;
  /** Events of the retention sweep: `{ type: "maintenance", task: "log-retention", count }` and `error`. Default: none. */
  onEvent?: (event: ServerEvent) => void;
  /** As the servers' option (open and close at info, errors with their code at error); `null` silences the default stderr lines. */
  logger?: LaterLogger | null;
}

/** Settings of the retention sweep a {@link RetainedLog} runs. */
export interface RetainedLogRetentionOptions {
  /** How often the sweep runs, ms. Default 60000. */
  intervalMs?: number;
  /** Records deleted per statement (each its own transaction). Default 500. */
  batchSize?: number;
}

/** The sweep settings of `RetainedLog.open({ retention })`, checked (`InvalidConfigError` otherwise). */
export function retentionSettings(retention: RetainedLogRetentionOptions | false | undefined): { intervalMs: number; batchSize: number; start: boolean } {
  if (retention === false) return { intervalMs: 60_000, batchSize: 500, start: false };
  if (retention !== undefined && (retention === null || typeof retention !== "object"))
    throw new InvalidConfigError(`RetainedLog.open(): \`retention\` must be { intervalMs?, batchSize? } or false, got ${describeValue(retention)}`);
  const where = "RetainedLog.open() retention";
  return {
    intervalMs: checkInt(where, "intervalMs", retention?.intervalMs ?? 60_000, 1),
    batchSize: checkInt(where, "batchSize", retention?.batchSize ?? 500, 1),
    start: true,
  };
}
