/**
 * The errors of the retained log (L*): an offset outside a partition, a
 * commit of a stale epoch, a record over the size limit. Exported with every
 * other error by `errors.ts`.
 */
import { LaterError } from "./later-error.js";

/**
 * A retained-log offset outside a partition: a read from below the oldest
 * retained offset (records before it were deleted by retention), or a commit
 * beyond the partition's end. Nothing was read or written.
 */
export class OffsetOutOfRangeError extends LaterError {
  /** The partition's oldest retained offset. */
  readonly oldestOffset: number;
  /** The partition's end: its last offset + 1 (0 when empty). */
  readonly endOffset: number;
  constructor(message: string, oldestOffset: number, endOffset: number) {
    super("OFFSET_OUT_OF_RANGE", message);
    this.oldestOffset = oldestOffset;
    this.endOffset = endOffset;
  }
}

/**
 * A retained-log commit whose epoch is not the group partition's current
 * lease epoch: another member (or a newer lease) holds the partition since.
 * Nothing was written.
 */
export class StaleEpochError extends LaterError {
  /** The group partition's current epoch. */
  readonly currentEpoch: number;
  constructor(message: string, currentEpoch: number) {
    super("STALE_EPOCH", message);
    this.currentEpoch = currentEpoch;
  }
}

/** A retained-log record over the size limit (`limit` bytes). Nothing was written. */
export class RecordTooLargeError extends LaterError {
  /** The limit that was passed, in bytes. */
  readonly limit: number;
  constructor(message: string, limit: number) {
    super("RECORD_TOO_LARGE", message);
    this.limit = limit;
  }
}
