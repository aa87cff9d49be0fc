import type { Backend } from "../backend/backend.js";
import type { TransactionHandle } from "../backend/transaction-handle.js";
import type { Clock } from "../core/clock.js";
import { InvalidConfigError } from "../errors.js";
import { RetainedLog } from "../retained-log/retained-log.js";
import type { RetainedLogRetentionOptions } from "../retained-log/retained-log-options.js";
import { logTopic, type LogTopicOptions } from "../retained-log/log-topic.js";
import type { ServerEvent } from "../events/server-event.js";
import type { LaterLogger } from "../events/event-sink.js";
import { TypedLogTopic, type LogCatalog } from "./typed-log.js";

/** Options of a generated `openLogs`. `Trx` is inferred from `backend`. */
export interface TypedLogsOptions<Trx = TransactionHandle> {
  /** `sqlite({ file })` or `postgres({ connectionString })`; opened here; `close()` closes it unless a server, publisher or other log opened on it is still open. */
  backend: Backend<Trx>;
  /** Migrate the database at open instead of refusing a schema that is behind. Default false. */
  autoMigrate?: boolean;
  /** The clock of record timestamps (tests pass a manual one). Default: the system clock, set to the database's on PostgreSQL. */
  clock?: Clock;
  /** As `RetainedLog.open`'s: the retention sweep this process runs (default on, every 60 s), or `false`. */
  retention?: RetainedLogRetentionOptions | false;
  /**
   * Retention of the schema's log topics, by stored topic name
   * (`{ orderEvents: { retentionMs: 86_400_000 } }`); stored at open, as
   * `RetainedLog.open` stores its topics' settings, so the process that
   * opens last sets them. A topic not named keeps seven days. A name that is
   * not a schema log topic is `InvalidConfigError`.
   */
  topicOptions?: Readonly<Record<string, LogTopicOptions>>;
  /** As `RetainedLog.open`'s. Default: none. */
  onEvent?: (event: ServerEvent) => void;
  /** As `RetainedLog.open`'s: any object with debug/info/warn/error (pino, console); `null` silences the default stderr lines. */
  logger?: LaterLogger | null;
}

/**
 * The typed log topics of a schema as a generated `openLogs()` resolves
 * them: one handle per declared log topic (`logs.orderEvents`), the untyped
 * {@link RetainedLog} underneath (`logs.log`, bytes in and out, for what the
 * typed layer does not cover) and `close()` (stops the retention sweep and
 * gives back its use of the backend, which closes once no server, publisher
 * or log opened on it is left; idempotent). `later-gen` refuses a log
 * named `log` or `close`.
 */
export type TypedLogs<L, Trx = TransactionHandle> = L & {
  readonly log: RetainedLog<Trx>;
  close(): Promise<void>;
};

/**
 * Opens the backend and registers every log topic of the catalog with its
 * partition count (a stored topic with another count throws
 * `PartitionCountMismatchError` before anything is written). Used by the
 * generated `openLogs`.
 */
export async function openTypedLogs<L, Trx = TransactionHandle>(options: TypedLogsOptions<Trx>, catalog: LogCatalog): Promise<TypedLogs<L, Trx>> {
  if (options === null || typeof options !== "object" || !options.backend) throw new InvalidConfigError("openLogs(): `backend` is required");
  const topicOptions = options.topicOptions ?? {};
  if (topicOptions === null || typeof topicOptions !== "object") throw new InvalidConfigError("openLogs(): `topicOptions` must be an object by topic name");
  for (const name of Object.keys(topicOptions)) {
    if (!Object.hasOwn(catalog, name))
      throw new InvalidConfigError(
        `openLogs(): \`topicOptions\` names "${name}", which is not a log topic of the schema (its log topics: ${Object.keys(catalog).join(", ")})`,
      );
  }
  const log = await RetainedLog.open<Trx>({
    backend: options.backend,
    topics: Object.entries(catalog).map(([name, spec]) => logTopic(name, spec.partitions, Object.hasOwn(topicOptions, name) ? topicOptions[name] : {})),
    ...(options.autoMigrate === undefined ? {} : { autoMigrate: options.autoMigrate }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.retention === undefined ? {} : { retention: options.retention }),
    ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  const handles = Object.entries(catalog).map(([name, spec]) => [spec.handle ?? name, new TypedLogTopic(log, name, spec)] as const);
  return Object.freeze({ ...Object.fromEntries(handles), log, close: () => log.close() }) as TypedLogs<L, Trx>;
}
