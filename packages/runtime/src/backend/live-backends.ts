/**
 * The backends of this process that are open (opened and not yet closed),
 * each with a label saying which database it holds. Kept under a
 * process-global symbol, so the leak check of `@later/runtime/testing` sees
 * them whichever copy of the module opened them. A backend holds a database
 * connection (SQLite) or a pool and a LISTEN connection (PostgreSQL) until
 * closed.
 */
export function liveBackends(): Map<object, string> {
  const g = globalThis as { [LIVE_BACKENDS]?: Map<object, string> };
  return (g[LIVE_BACKENDS] ??= new Map());
}
const LIVE_BACKENDS = Symbol.for("later.liveBackends");
