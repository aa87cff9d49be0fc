interface KyselyExecutorLike {
  executeQuery(query: unknown): Promise<{ rows: unknown[] }>;
}

/** Whether `value` can run a compiled Kysely query (a Kysely instance or transaction). */
export function isKyselyExecutor(value: unknown): value is KyselyExecutorLike {
  return typeof value === "object" && value !== null && typeof (value as KyselyExecutorLike).executeQuery === "function";
}
