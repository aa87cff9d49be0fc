import type { JobRecord } from "@later/runtime/internal";

/**
 * A job as `--json` prints it: the stored {@link JobRecord} (times in ms
 * since the epoch, `stages` as `{ stage, at, note? }`: `note` only on a noted
 * change, docs/semantics.md J1), with `payload` decoded from
 * its JSON text. A payload that is not valid JSON stays the stored string,
 * and `payloadDecodeError` says why.
 */
export type JobJson = Omit<JobRecord, "payload"> & { payload: unknown; payloadDecodeError?: string };

/** See {@link JobJson}. */
export function toJobJson(job: JobRecord): JobJson {
  try {
    return { ...job, payload: JSON.parse(job.payload) as unknown };
  } catch (error) {
    return { ...job, payload: job.payload, payloadDecodeError: (error as Error).message };
  }
}
