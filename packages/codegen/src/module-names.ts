/**
 * Every name the generated module declares, imports or relies on, for a jobs
 * interface named `I`. The module writer writes these names and the schema
 * reader refuses a schema whose own names would collide with them, so the two
 * cannot drift apart: a name added here is both written and guarded.
 *
 * | name                     | what it is                                          |
 * | ------------------------ | --------------------------------------------------- |
 * | `IHandles<Trx>`          | interface, one handle per job                       |
 * | `IContext<C, Trx>`       | type, a handler's context                           |
 * | `IServer<C, Trx>`        | type, a running server                              |
 * | `IPublisher<Trx>`        | type, enqueue-only access                           |
 * | `IPauseTarget`           | type, what `pause`/`resume` take (X4)               |
 * | `IBuilder<C, Trx>`       | class, one `with<Job>Handler` method per job        |
 * | `openIPublisher<Trx>`    | function                                            |
 * | `createTestI<C>`         | function, the testing kit (X11)                     |
 * | `JOBS`                   | the catalog constant                                |
 * | `LOGS`, `LogsHandles<Trx>`, `openLogs<Trx>` | with `interface Logs`: the log catalog, one typed log per member, the opener |
 * | `C`                      | the builder's type parameter (the app context)      |
 * | `Trx`                    | the type parameter of the backend's transactions    |
 * | {@link RUNTIME_IMPORTS}  | imported from `@later/runtime`                      |
 * | {@link TESTING_IMPORTS}  | imported from `@later/runtime/testing`              |
 * | {@link GLOBAL_NAMES}     | globals the module uses (`Promise`)                 |
 */
export class ModuleNames {
  /** `IHandles`: one `readonly <job>: JobHandle<P>` per job. */
  readonly handles: string;
  /** `IContext<C>`. */
  readonly context: string;
  /** `IServer<C>`. */
  readonly server: string;
  /** `IPublisher`. */
  readonly publisher: string;
  /** `IBuilder<C>`. */
  readonly builder: string;
  /** `IPauseTarget`: `{ jobType }` of a declared job, or `{ topic }` of a topic the schema names (X4). */
  readonly pauseTarget: string;
  /** `openIPublisher(options)`. */
  readonly open: string;
  /** `createTestI(options)`: the testing kit over the declared jobs (`createTestJobs` for `Jobs`). */
  readonly createTest: string;
  /** The catalog constant. */
  readonly catalog = "JOBS";
  /** The type parameter of the builder, context and server types. */
  readonly typeParameter = "C";
  /**
   * The type parameter of the transactions `enqueueIn` takes, inferred from
   * the backend (`SqliteTransaction`, `PostgresTransaction`); it defaults to
   * `TransactionHandle` (either kind) where not given.
   */
  readonly transactionParameter = "Trx";
  /** With `interface Logs`: the log catalog constant. */
  readonly logCatalog = "LOGS";
  /** With `interface Logs`: one `readonly <log>: KeyedTypedLog<V, Trx>` (or `TypedLog`) per log topic. */
  readonly logHandles = "LogsHandles";
  /** With `interface Logs`: `openLogs(options)`. */
  readonly openLogs = "openLogs";

  constructor(
    /** The jobs interface (`Jobs` by default). */
    readonly interfaceName: string,
  ) {
    this.handles = `${interfaceName}Handles`;
    this.context = `${interfaceName}Context`;
    this.server = `${interfaceName}Server`;
    this.publisher = `${interfaceName}Publisher`;
    this.builder = `${interfaceName}Builder`;
    this.pauseTarget = `${interfaceName}PauseTarget`;
    this.open = `open${interfaceName}Publisher`;
    this.createTest = `createTest${interfaceName}`;
  }

  /** The names the module declares at its top level, derived from the interface name. */
  declared(): string[] {
    return [this.handles, this.context, this.server, this.publisher, this.pauseTarget, this.builder, this.open, this.createTest];
  }

  /**
   * Names a type the module imports from the schema must not have: each
   * would clash with a declaration or import of the module, or shadow the
   * type parameters `C` and `Trx` or the global `Promise` it uses. Mapped to what they
   * are, for the error message.
   */
  taken(): Map<string, string> {
    const taken = new Map<string, string>(this.declared().map((name) => [name, "a name the generated module declares"]));
    for (const [name, what] of this.external()) taken.set(name, what);
    return taken;
  }

  /** {@link taken} but the declared names: what a declared name must not be. */
  external(): Map<string, string> {
    const external = new Map<string, string>();
    external.set(this.catalog, "the generated module's job catalog constant");
    external.set(this.logCatalog, "the generated module's log catalog constant");
    // A jobs interface named `Logs` declares `LogsHandles` itself (and then no log topics are read).
    if (this.interfaceName !== "Logs") {
      external.set(this.logHandles, "a name the generated module declares for interface Logs");
      external.set(this.openLogs, "a name the generated module declares for interface Logs");
    }
    external.set(this.typeParameter, "the type parameter of the generated builder (the application context)");
    external.set(this.transactionParameter, "the type parameter of the generated types (the backend's transactions)");
    for (const name of GLOBAL_NAMES) external.set(name, "a global type the generated module uses");
    for (const name of RUNTIME_IMPORTS) external.set(name, "a name the generated module imports from @later/runtime");
    for (const name of TESTING_IMPORTS) external.set(name, "a name the generated module imports from @later/runtime/testing");
    return external;
  }

  /**
   * Members the generated builder inherits from `TypedServerBuilder` (public,
   * protected and private, which TypeScript refuses to redeclare just the
   * same): a `with<Job>Handler` method must not be one of them. A test checks
   * this list against the runtime's declaration.
   */
  static readonly builderMembers: readonly string[] = ["constructor", "handler", "build", "jobsOf", "handlers", "jobs", "options", "catalog"];

  /**
   * `sendEmail`, `send_email`, `"send-email"` → `withSendEmailHandler`: the
   * builder method that registers a job's handler, from its {@link handle}.
   */
  static handlerMethod(jobName: string): string {
    const handle = ModuleNames.handle(jobName);
    return `with${handle.slice(0, 1).toUpperCase()}${handle.slice(1)}Handler`;
  }

  /**
   * The job's handle on `server.jobs`, `ctx.jobs` and `publisher.jobs`: the
   * member name in camelCase, whatever its spelling. Words are split at
   * every character that is not a letter, a digit or `$` (`_`, `-`, spaces,
   * dots); a word in capitals is lowered (`SEND_EMAIL` → `sendEmail`); the
   * first word starts lower-case, the others upper-case (`send_email`,
   * `"send-email"`, `SendEmail` → `sendEmail`). A name that is camelCase
   * already is kept. Empty when the name has no letter, digit or `$`. The
   * stored job type stays the member name as written.
   */
  static handle(jobName: string): string {
    const words = jobName.split(/[^\p{L}\p{N}$]+/u).filter((w) => w.length > 0);
    return words
      .map((word, i) => {
        const w = word.length > 1 && /\p{L}/u.test(word) && word === word.toUpperCase() ? word.toLowerCase() : word;
        const first = w.slice(0, 1);
        return (i === 0 ? first.toLowerCase() : first.toUpperCase()) + w.slice(1);
      })
      .join("");
  }
}

/** What the generated module imports from `@later/runtime` (values first, then types). */
export const RUNTIME_IMPORTS = [
  "TypedJobPublisher",
  "TypedServerBuilder",
  "openTypedLogs",
  "BuilderOptions",
  "HandlerOptions",
  "JobCatalog",
  "JobHandle",
  "JobHandler",
  "KeyedTypedLog",
  "LogCatalog",
  "PauseTarget",
  "PublisherOptions",
  "TopicJobHandle",
  "TransactionHandle",
  "TypedJobContext",
  "TypedJobServer",
  "TypedLog",
  "TypedLogs",
  "TypedLogsOptions",
] as const;

/**
 * What the generated module imports from `@later/runtime/testing` for its
 * `createTest<I>` (the value first). That entry loads no driver until a kit
 * is made, so an application importing the module pays for none.
 */
export const TESTING_IMPORTS = ["createTypedTestJobs", "TestJobs", "TestJobsOptions"] as const;

/** How many of {@link RUNTIME_IMPORTS} are values; the rest are imported with `type`. */
export const RUNTIME_VALUE_IMPORTS = 3;

/** The {@link RUNTIME_IMPORTS} only a schema with `interface Logs` needs (the module imports them only then). */
export const LOG_RUNTIME_IMPORTS: readonly string[] = ["openTypedLogs", "TypedLogs", "KeyedTypedLog", "LogCatalog", "TypedLog", "TypedLogsOptions"];

/** Global types the generated module names. */
export const GLOBAL_NAMES = ["Promise"] as const;

/**
 * Log member names whose handle would hide a member of what `openLogs()`
 * resolves to (`logs.log`, `logs.close()`), or make it a thenable that
 * `await openLogs()` would never resolve to (`then`).
 */
export const RESERVED_LOG_HANDLES: readonly string[] = ["log", "close", "then"];

/**
 * Member names a job must not have whatever the generated names are: as a
 * key of the object literals the module and the runtime build, `__proto__`
 * sets the object's prototype instead of adding the job.
 */
export const FORBIDDEN_JOB_NAMES = ["__proto__"] as const;
