/**
 * How the PostgreSQL backend classifies driver errors (docs/storage.md
 * "Stage counters"): which SQLSTATEs are a lost connection, and how many
 * tries a write rolled back for a deadlock gets. The real-server cases are in
 * test/conformance/postgres-stalled-transaction.test.ts and
 * test/conformance/counter-deadlock.test.ts.
 */
import { describe, expect, it } from "vitest";
import { CONFLICT_TRIES, isConnectionError, retryConflicts, wrapDriverError } from "../../packages/runtime/src/backend/postgres/postgres-errors.js";

/** An error as `pg` gives it: an Error with the server's SQLSTATE in `code`. */
const pgError = (code: string, message = `error ${code}`) => Object.assign(new Error(message), { code });

describe("PostgreSQL error classification", () => {
  it("a session the server ended (timeouts 25P03, 25P04, 57P05; shutdowns 57P01-57P04; class 08) is a lost connection, a transient DATABASE_UNAVAILABLE", () => {
    for (const code of ["25P03", "25P04", "57P01", "57P02", "57P03", "57P04", "57P05", "08006", "08003"]) {
      expect(isConnectionError(pgError(code)), code).toBe(true);
      expect(wrapDriverError(pgError(code), "finish"), code).toMatchObject({ code: "DATABASE_UNAVAILABLE", transient: true });
    }
  });

  it("a refused login, a missing database, a cancelled statement or a conflict are not (they pass through as they are)", () => {
    for (const code of ["28P01", "3D000", "57014", "40P01", "23505"]) {
      const error = pgError(code);
      expect(isConnectionError(error), code).toBe(false);
      expect(wrapDriverError(error, "finish"), code).toBe(error);
    }
  });

  it(`a write rolled back for a deadlock or a serialization failure is tried up to ${CONFLICT_TRIES} times in all; any other error at once`, async () => {
    const failing = (times: number, code = "40P01") => {
      let calls = 0;
      const body = async () => {
        calls++;
        if (calls <= times) throw pgError(code, "deadlock detected");
        return "written";
      };
      return { body, calls: () => calls };
    };
    const passes = failing(CONFLICT_TRIES - 1);
    await expect(retryConflicts(passes.body)).resolves.toBe("written");
    expect(passes.calls()).toBe(CONFLICT_TRIES);
    const serialization = failing(3, "40001");
    await expect(retryConflicts(serialization.body)).resolves.toBe("written");
    const exhausted = failing(CONFLICT_TRIES);
    await expect(retryConflicts(exhausted.body)).rejects.toMatchObject({ code: "40P01" });
    expect(exhausted.calls()).toBe(CONFLICT_TRIES);
    const other = failing(1, "23505");
    await expect(retryConflicts(other.body)).rejects.toMatchObject({ code: "23505" });
    expect(other.calls()).toBe(1);
  });
});
