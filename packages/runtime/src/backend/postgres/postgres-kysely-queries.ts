/**
 * The PostgreSQL statement of the expiry sweep, built with Kysely on the
 * backend's pool, compiled per call (it runs once a minute): a delete that
 * skips rows another sweeper has locked. (The other cold statements are
 * written once for both dialects, in `backend/shared/`.)
 */
import type { Kysely } from "kysely";
import type * as B from "../backend.js";
import type { LaterDatabase } from "../schema.js";

export class PostgresKyselyQueries {
  constructor(
    private readonly db: Kysely<LaterDatabase>,
    private readonly namespace: string,
  ) {}

  /** Deletes a batch of expired rows, skipping rows another sweeper has locked. */
  async jobDeleteExpired(params: B.JobDeleteExpiredParams): Promise<number> {
    const result = await this.db
      .deleteFrom("later_jobs")
      .where(
        "id",
        "in",
        this.db
          .selectFrom("later_jobs")
          .select("id")
          .where("namespace", "=", this.namespace)
          .where("expires_at", "is not", null)
          .where("expires_at", "<", params.now)
          .limit(params.limit)
          .forUpdate()
          .skipLocked(),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
