/**
 * `@later/runtime`: the server, publisher, typed layer and errors. The
 * backends are subpaths, each needing its driver: `@later/runtime/sqlite`
 * (better-sqlite3) and `@later/runtime/postgres` (pg). This entry loads
 * neither driver: `backendFromUrl` imports the one backend its URL names
 * when called. `@later/runtime/testing` holds test seams (a manual
 * clock, fault injection). The database seam the backends implement is not
 * public (`@later/runtime/internal`, for later's own CLI and tests).
 */
export * from "./errors.js";
export type { Clock, RandomSource } from "./core/clock.js";
export { systemClock } from "./core/clock.js";
export { newJobId, isJobId, type JobId } from "./core/job-id.js";
export { JOB_STAGES, type JobStage, type StageChange, type StageNote, type TerminalStage } from "./core/job-stage.js";
export { RetryPolicy, type RetryBackoff, type RetryPolicyJson } from "./core/retry/retry-policy.js";
export type { TransactionHandle } from "./backend/transaction-handle.js";
export { backendFromUrl, type BackendFromUrlOptions } from "./backend/backend-from-url.js";
export { BackgroundJobServer } from "./server/background-job-server.js";
export type { ShutdownOptions } from "./server/shutdown-options.js";
export type { ShutdownOnSignalsOptions } from "./server/shutdown-on-signals.js";
export { JobPublisher, type JobPublisherOptions, type PartitionTarget, type UniqueEnqueueResult } from "./publisher/job-publisher.js";
export type { JobFilter, JobBatchOptions, JobCancelBatchOptions } from "./publisher/job-controller.js";
export type { JobWaitResult, WaitForOptions } from "./publisher/job-waiter.js";
export type { PauseTarget, PausedEntry } from "./publisher/pause-controller.js";
export { ENQUEUE_OPTION_KEYS, UNIQUE_MODES, type EnqueueOptions, type UniqueMode } from "./publisher/enqueue-options.js";
export {
  MAX_META_BYTES,
  type AttemptContext,
  type EnqueueContext,
  type EnqueueJobContext,
  type JobMeta,
  type LaterMiddleware,
} from "./middleware/later-middleware.js";
export { topic, RECURRING_SEQUENTIAL_TOPIC, MAX_PARTITIONS, type TopicConfig } from "./core/partition/topic.js";
export { partitionForKey, murmur2, type PartitionKey } from "./core/partition/partition-for-key.js";
export type { JobContext, HandlerRegistration } from "./config/handler-registration.js";
export type { ServerOptions, WorkerAutoscaleOptions } from "./config/server-options.js";
export type { ServerEvent } from "./events/server-event.js";
export type { LaterLogger, LaterLogLevel } from "./events/event-sink.js";
export { payloadDecoder, payloadValidator, type DatePath, type JobCatalog, type JobSpec } from "./typed/job-catalog.js";
export { checkPayload, describeShape, type NamedShapes, type PayloadMismatch, type Shape } from "./typed/payload-shape.js";
export { JobHandle } from "./typed/job-handle.js";
export { TopicJobHandle } from "./typed/topic-job-handle.js";
export { TypedJobServer, type TypedJobContext } from "./typed/typed-job-server.js";
export { JobControl } from "./typed/job-control.js";
export type { JobRetention } from "./core/job-retention.js";
export { TypedServerBuilder, jobHandles, type BuilderOptions, type HandlerOptions, type JobHandler } from "./typed/typed-server-builder.js";
export { TypedJobPublisher, type PublisherOptions } from "./typed/typed-publisher.js";
export { openTypedLogs, type TypedLogs, type TypedLogsOptions } from "./typed/open-logs.js";
export {
  TypedLogTopic,
  type KeyedTypedLog,
  type LogCatalog,
  type LogHeaders,
  type LogSpec,
  type LogTarget,
  type TypedLog,
  type TypedLogReader,
  type TypedLogRecord,
  type TypedLogBatch,
  type TypedConsumeOptions,
} from "./typed/typed-log.js";
export { RetainedLog, MAX_LOG_READ } from "./retained-log/retained-log.js";
export type { RetainedLogOptions, RetainedLogRetentionOptions } from "./retained-log/retained-log-options.js";
export { DEFAULT_LOG_RETENTION_MS, type LogRetentionSweepResult } from "./maintenance/log-retention-sweeper.js";
export { LogConsumer, type ConsumeOptions, type LogBatch } from "./retained-log/log-consumer.js";
export { logTopic, type LogTopicConfig, type LogTopicOptions } from "./retained-log/log-topic.js";
export {
  MAX_LOG_VALUE_BYTES,
  MAX_LOG_HEADERS_BYTES,
  MAX_LOG_KEY_LENGTH,
  type LogRecordInput,
  type LogPosition,
  type LogRecord,
  type CommittedOffset,
  type PartitionLag,
  type LogGroupLag,
} from "./retained-log/log-record.js";
export { CronSchedule } from "./core/cron/cron-schedule.js";
export type { RecurringScheduleOptions } from "./recurring/recurring-scheduler.js";
