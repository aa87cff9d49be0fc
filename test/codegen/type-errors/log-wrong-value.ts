// A log value of the wrong type is refused at the append.
import type { openLogs } from "../schemas/events.generated.js";

declare const logs: Awaited<ReturnType<typeof openLogs>>;
void logs.orderEvents.append({ customerId: "c-7", orderId: "o-1", kind: "refunded", at: new Date(), lines: [] }); // error: TS2322
