/**
 * The SQL port: one small interface over PGlite (embedded, the default) and PostgreSQL (when
 * DATABASE_URL is set). Both adapters run exactly the same SQL, so every query in src/accounts (and
 * the submissions tables that append migrations later) is written once.
 */
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface SqlExecutor {
  /** One parameterised statement ($1, $2, ...). */
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Store extends SqlExecutor {
  readonly kind: "pglite" | "postgres";
  /** Where the data lives, for start-up lines (never includes a password). */
  readonly description: string;
  /**
   * Runs fn inside BEGIN/COMMIT on one connection; a throw rolls back and rethrows. Row locks
   * (SELECT ... FOR UPDATE) taken in fn hold until the end of the transaction on both adapters.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Versioned schema migrations, applied in order, each once, inside one transaction guarded by an
 * advisory lock (several serverless instances may start at the same moment). To change the schema,
 * APPEND a migration with the next version (a new file in migrations/, named after it); never edit or
 * reorder an applied one. All SQL lives in migrations/: the store imports no feature folder.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
