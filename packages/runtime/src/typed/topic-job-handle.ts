import type { TransactionHandle } from "../backend/backend.js";
import type { JobId } from "../core/job-id.js";
import { partitionForKey, type PartitionKey } from "../core/partition/partition-for-key.js";
import { InvalidArgumentError } from "../errors.js";
import { withShortForm, type EnqueueOptions } from "../publisher/enqueue-options.js";
import type { JobWaitResult, WaitForOptions } from "../publisher/job-waiter.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { payloadValidator, type JobSpec } from "./job-catalog.js";
import { settle } from "./job-handle.js";

/**
 * The typed handle of a job declared with `@topic` and `@partitionKey`, as
 * `server.jobs.<name>` and `ctx.jobs.<name>` of the generated module. Every
 * method appends the job to its topic, on the partition its payload's key
 * field picks (`partitionForKey`), where jobs run strictly one at a time in
 * enqueue order. There is no plain `enqueue`, `enqueueDelayed` or
 * `enqueueRecurring`: a job declared ordered is never enqueued unordered by
 * a method that looks like the usual one.
 *
 * Every method takes {@link EnqueueOptions} as its optional last argument:
 * `{ delayMs | runAt }` (the job, once it is the head, waits for its time and
 * blocks its partition meanwhile) and `parentId` (as the head it waits for
 * the parent to succeed, wherever the parent is). The topic must be
 * registered on the server or publisher (`@partitions` in the schema, or the
 * `topics` option), else the call rejects with `UNKNOWN_TOPIC`; a key field
 * that is not a string or an integer rejects with `INVALID_ARGUMENT`, and so
 * does a payload that does not match the job's declared type (the message
 * names the path, see `payloadValidator`). Either way nothing is written.
 */
export class TopicJobHandle<P, Trx = TransactionHandle, R = unknown> {
  /** Throws `InvalidArgumentError` for a payload that does not match the declared type. */
  private readonly check: (payload: unknown) => void;

  constructor(
    private readonly publisher: JobPublisher<Trx>,
    /** The stored job type: the member name in the schema. */
    readonly jobType: string,
    private readonly spec: JobSpec,
  ) {
    this.check = payloadValidator(jobType, spec);
  }

  /**
   * Resolves once job `jobId` (one of this type's) is terminal, with `{ stage,
   * result?, error? }`, `result` typed as this job's result (the schema's
   * `Results`; `unknown` without an entry), not checked at run time. Woken by
   * the commit, not by polling (X6, see `JobPublisher.waitFor`);
   * `WAIT_TIMEOUT` past `options.timeoutMs`, `JOB_NOT_FOUND` for an unknown id.
   */
  waitFor(jobId: JobId, options: WaitForOptions): Promise<JobWaitResult<R>> {
    return this.publisher.waitFor(jobId, options) as Promise<JobWaitResult<R>>;
  }

  /** The topic name from `@topic`. */
  get topic(): string {
    return this.spec.topic!;
  }

  /** Appends to the partition of the payload's key (the `@partitionKey` field): it runs after every earlier job there has finished. */
  enqueueToPartition(payload: P, options?: EnqueueOptions): Promise<JobId> {
    return settle(() => this.publisher.enqueueToPartition(this.jobType, payload, this.target(payload), options));
  }

  /**
   * Many jobs in one transaction, each appended to the partition of its own
   * key, in the order given (those of one key keep it), each with `options`.
   * Every payload is checked first: one bad payload or key and none is written.
   */
  enqueueManyToPartition(payloads: readonly P[], options?: EnqueueOptions): Promise<JobId[]> {
    return settle(() => {
      if (!Array.isArray(payloads)) throw new InvalidArgumentError(`"${this.jobType}": enqueueManyToPartition takes an array of payloads`);
      const items = payloads.map((payload) => ({ payload, target: this.target(payload) }));
      return this.publisher.enqueueManyToPartition(this.jobType, items, options);
    });
  }

  /** Appends to the partition now; the job, once it is the head, waits `delayMs` and blocks the partition meanwhile. `enqueueToPartition(payload, { delayMs })`. */
  enqueueToPartitionDelayed(payload: P, delayMs: number, options?: Omit<EnqueueOptions, "delayMs" | "runAt">): Promise<JobId> {
    return settle(() =>
      this.publisher.enqueueToPartition(this.jobType, payload, this.target(payload), withShortForm("enqueueToPartitionDelayed", options, { delayMs })),
    );
  }

  /**
   * Appends to the partition as a continuation of `parentId` (which may be anywhere): as the head it waits for the parent to succeed.
   * `enqueueToPartition(payload, { parentId })`. An array of ids is a fan-in (X5): the head waits for every parent.
   */
  enqueueContinueToPartition(parentId: JobId | readonly JobId[], payload: P, options?: Omit<EnqueueOptions, "parentId">): Promise<JobId> {
    return settle(() =>
      this.publisher.enqueueToPartition(this.jobType, payload, this.target(payload), withShortForm("enqueueContinueToPartition", options, { parentId })),
    );
  }

  /** Appends to the partition inside the application's own transaction (the sequence is taken there too): the job exists only if it commits. */
  enqueueToPartitionIn(transaction: Trx, payload: P, options?: EnqueueOptions): Promise<JobId> {
    return settle(() => this.publisher.enqueueToPartitionIn(transaction, this.jobType, payload, this.target(payload), options));
  }

  /** The payload checked against its type, then its partition key field, validated by `partitionForKey` later. */
  private target(payload: P): { topic: string; key: PartitionKey } {
    this.check(payload);
    const field = this.spec.partitionKey!;
    const key = payload !== null && typeof payload === "object" ? (payload as Record<string, unknown>)[field] : undefined;
    if (typeof key !== "string" && typeof key !== "number" && typeof key !== "bigint") {
      throw new InvalidArgumentError(
        `"${this.jobType}": the partition key field "${field}" must be a string or an integer, got ${key === null ? "null" : typeof key}`,
      );
    }
    try {
      partitionForKey(key, 1); // the key's own checks, here so that the error names the field
    } catch (error) {
      throw new InvalidArgumentError(`"${this.jobType}": the partition key field "${field}": ${(error as Error).message}`);
    }
    return { topic: this.topic, key };
  }
}
