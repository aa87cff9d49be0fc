/**
 * The `InvalidArgumentError` of an `enqueueIn` / `enqueueToPartitionIn`
 * given something that is not a transaction its backend takes: the message
 * says what the backend takes and what it got (`got a Kysely instance`,
 * `got undefined`, `got an object { id, name }`), since the usual mistake
 * is passing the database (or nothing) where its transaction was meant.
 */
import { InvalidArgumentError } from "../errors.js";

/**
 * `method`: the call (`"enqueueIn"`); `takes`: what the backend accepts,
 * in words; `got`: the value given.
 */
export function transactionRefusal(method: string, takes: string, got: unknown): InvalidArgumentError {
  return new InvalidArgumentError(`${method} needs a transaction: ${takes}; got ${describeGiven(got)}`);
}

/** A value in a few words, for the message: never its contents beyond a few key names. */
export function describeGiven(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return `a string (${JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)})`;
    case "number":
    case "boolean":
    case "bigint":
      return `a ${typeof value} (${String(value)})`;
    case "function":
      return "a function (pass the transaction the callback receives, not the callback)";
    case "symbol":
      return "a symbol";
  }
  const v = value as { executeQuery?: unknown; isTransaction?: unknown; query?: unknown; totalCount?: unknown };
  if (typeof v.executeQuery === "function" && v.isTransaction === false) {
    return "a Kysely instance, not a transaction (its statements would commit one by one): call enqueueIn inside db.transaction().execute(trx => ...) with trx";
  }
  if (typeof v.query === "function" && typeof v.totalCount === "number") {
    return "a pg Pool (each statement would run on a connection of its own, outside any transaction): pass the client of pool.connect() you ran BEGIN on";
  }
  const name = Object.getPrototypeOf(value)?.constructor?.name;
  const keys = Object.keys(value);
  const shown = keys.length === 0 ? "{}" : `{ ${keys.slice(0, 5).join(", ")}${keys.length > 5 ? ", …" : ""} }`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return name && name !== "Object" ? `a ${name} ${shown}` : `an object ${shown}`;
}
