/**
 * Database URLs: the one parser of `LATER_DATABASE_URL`, the CLI's
 * `--database` and {@link backendFromUrl}'s argument, so an application and
 * the `later` command it is run beside read the same text the same way.
 *
 * | URL | backend |
 * | --- | --- |
 * | `sqlite:PATH` | SQLite file at PATH, relative to the working directory or absolute (`sqlite:later.db`, `sqlite:/var/lib/app/later.db`) |
 * | `sqlite:///ABS/PATH` | SQLite file at the absolute path `/ABS/PATH` (URL form, percent-decoded) |
 * | `sqlite::memory:` | an in-memory SQLite database (one connection's; gone at close) |
 * | `postgres://...`, `postgresql://...` | PostgreSQL, the URL handed to `pg` as is |
 *
 * Loads no driver: it is text only (see `backend-from-url.ts` for opening).
 */
import { InvalidConfigError } from "../errors.js";

/** A parsed database URL. `url` is the text as given. */
export type DatabaseUrl =
  | { kind: "sqlite" /** The file, as given (relative paths resolve against the working directory). */; file: string; url: string }
  | { kind: "postgres"; connectionString: string; url: string };

/** The accepted forms, for messages. */
export const DATABASE_URL_FORMS = "sqlite:PATH, sqlite:///ABSOLUTE/PATH or postgres://USER@HOST:PORT/DB";

/**
 * Parses a database URL (see the module table). Anything else throws
 * `InvalidConfigError` (code `INVALID_CONFIG`) naming the accepted forms.
 */
export function parseDatabaseUrl(url: string): DatabaseUrl {
  if (typeof url !== "string" || url.trim() === "") throw new InvalidConfigError(`a database URL is empty; expected ${DATABASE_URL_FORMS}`);
  const scheme = databaseUrlScheme(url);
  if (scheme === "sqlite") return { kind: "sqlite", file: sqlitePath(url), url };
  if (scheme === "postgres" || scheme === "postgresql") {
    if (!/^[a-z]+:\/\//i.test(url)) throw new InvalidConfigError(`a PostgreSQL URL starts with ${scheme}://`);
    return { kind: "postgres", connectionString: url, url };
  }
  throw new InvalidConfigError(`not a database URL; expected ${DATABASE_URL_FORMS}`);
}

/**
 * The lower-cased scheme of a URL (`sqlite`, `postgres`, ...), or null for
 * text that has none. A Windows drive (`C:\\db`) is a path, not a scheme.
 */
export function databaseUrlScheme(text: string): string | null {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase() ?? null;
  return scheme !== null && scheme.length > 1 ? scheme : null;
}

function sqlitePath(url: string): string {
  const rest = url.slice("sqlite:".length);
  if (rest.startsWith("//")) {
    // URL form: sqlite:///abs/path (empty host). A host part is a mistake.
    const afterSlashes = rest.slice(2);
    if (!afterSlashes.startsWith("/")) {
      throw new InvalidConfigError(`sqlite:// URLs take an absolute path (sqlite:///abs/path); for a relative path write sqlite:${afterSlashes || "PATH"}`);
    }
    let path: string;
    try {
      path = decodeURIComponent(afterSlashes.replace(/[?#].*$/, ""));
    } catch {
      throw new InvalidConfigError("the path of the sqlite:// URL has a malformed %-escape");
    }
    if (path === "/") throw new InvalidConfigError("the sqlite:// URL names no file");
    return path;
  }
  if (rest === "") throw new InvalidConfigError("sqlite: needs a file path, e.g. sqlite:later.db");
  return rest;
}

/** For messages that suggest a path: the file a `sqlite:` URL names, or `"later.db"` when it names none. */
export function sqliteFileOfUrl(url: string): string {
  try {
    const parsed = parseDatabaseUrl(url);
    return parsed.kind === "sqlite" ? parsed.file : "later.db";
  } catch {
    return "later.db";
  }
}

/** The URL for messages: a PostgreSQL password is replaced by `***`. */
export function displayDatabaseUrl(database: DatabaseUrl): string {
  if (database.kind !== "postgres") return database.url;
  return database.url.replace(/^([a-z]+:\/\/[^:/@]*):[^@/]*@/i, "$1:***@");
}
