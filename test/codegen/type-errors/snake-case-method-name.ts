// Generated names are camelCase whatever the member's spelling: `send_statement` gives withSendStatementHandler.
import type { JobsBuilder } from "../schemas/ledger.generated.js";

declare const builder: JobsBuilder<unknown>;
builder.withSend_statementHandler(() => {}); // error: TS2551
