/** What a CLI command receives from the edge: streams, the working directory and the environment. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** Every command module exports `run`; the exit code follows the README: 0 ok, 1 failed (a domain or internal error), 2 usage error. */
export type CommandRun = (args: string[], io: CliIo) => Promise<number>;

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
