// Records read back are typed: a revived Date field is a Date, not a string.
import type { openLogs } from "../schemas/events.generated.js";

declare const logs: Awaited<ReturnType<typeof openLogs>>;
const [record] = await logs.orderEvents.read({ partition: 0, fromOffset: 0 });
const at: string = record!.value.at; // error: TS2322
void at;
