// A log topic without @partitionKey needs { key } or { partition } at each append.
import type { openLogs } from "../schemas/events.generated.js";

declare const logs: Awaited<ReturnType<typeof openLogs>>;
void logs.auditTrail.append({ actor: "ann", action: "login" }); // error: TS2554
