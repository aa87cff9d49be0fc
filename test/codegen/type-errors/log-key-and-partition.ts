// An append names a key or a partition, not both.
import type { openLogs } from "../schemas/events.generated.js";

declare const logs: Awaited<ReturnType<typeof openLogs>>;
void logs.auditTrail.append({ actor: "ann", action: "login" }, { key: "ann", partition: 1 }); // error: TS2345
