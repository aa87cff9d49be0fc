import { InvalidArgumentError } from "../errors.js";

/** A payload as JSON text through the job type's encoder; anything that does not give a string is `InvalidArgumentError`, before anything is written. */
export function encodePayload(encode: (payload: unknown) => string, jobType: string, payload: unknown): string {
  let text: string | undefined;
  try {
    text = encode(payload);
  } catch (cause) {
    throw new InvalidArgumentError(`payload of "${jobType}" cannot be encoded as JSON: ${(cause as Error).message}`);
  }
  if (typeof text !== "string") throw new InvalidArgumentError(`payload of "${jobType}" cannot be encoded as JSON (got ${typeof payload})`);
  return text;
}
