import { watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";

/**
 * Cross-process wake-ups for SQLite: every commit by any process appends to
 * the database's `-wal` file, and inotify (through `fs.watch` on the folder,
 * so the WAL file may come and go) reports it within a millisecond or so.
 * Listeners are called at most once per macrotask. A latency hint only:
 * workers still poll, so a missed event costs one poll interval.
 */
export class WalWatcher {
  private watcher: FSWatcher | null = null;
  private readonly listeners = new Set<() => void>();
  private scheduled = false;

  constructor(private readonly databaseFile: string) {}

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.watcher) this.start();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = null;
  }

  private start(): void {
    const wal = `${basename(this.databaseFile)}-wal`;
    try {
      this.watcher = watch(dirname(this.databaseFile), { persistent: false }, (_event, file) => {
        if (file === wal) this.schedule();
      });
      this.watcher.on("error", () => this.stop());
    } catch {
      this.watcher = null; // no inotify here: polling alone finds the work
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      for (const listener of this.listeners) listener();
    });
  }
}

/** Delays of the re-checks after a WAL event that showed no new commit yet. */
const RECHECK_MS = [2, 10];

/**
 * Calls `listener` when another connection has committed: WAL events
 * filtered through `PRAGMA data_version` (read by `dataVersion`), which
 * changes only for other connections' commits, so this process's own claims
 * and outcome writes wake nobody.
 *
 * A WAL event can arrive before the commit it belongs to is visible (the
 * frames are written before the WAL index is updated, and inotify merges
 * repeated events, so no later event may follow). So when the version has
 * not moved, it is read again 2 and 10 ms later, one re-check at a time.
 * Returns the unsubscribe function.
 */
export function subscribeCommits(watcher: WalWatcher, dataVersion: () => number | null, listener: () => void): () => void {
  let seen = dataVersion();
  let recheck: NodeJS.Timeout | null = null;
  const check = (retry: number): void => {
    const version = dataVersion();
    if (version === null || version !== seen) {
      seen = version;
      listener();
      return;
    }
    if (recheck !== null || retry >= RECHECK_MS.length) return;
    recheck = setTimeout(() => {
      recheck = null;
      check(retry + 1);
    }, RECHECK_MS[retry]);
    recheck.unref();
  };
  const unsubscribe = watcher.subscribe(() => check(0));
  return () => {
    if (recheck !== null) clearTimeout(recheck);
    unsubscribe();
  };
}
