// With an application context type given, `context` is required.
import { sqlite } from "@later/runtime/sqlite";
import { JobsBuilder } from "../schemas/shop.generated.js";

new JobsBuilder<{ mailer: string }>({ backend: sqlite({ file: "x.db" }) }); // error: TS2345
