/**
 * A command ran and found nothing to act on (a job id the namespace does
 * not hold). Like a `LaterError`, `runProgram` prints its one-line message
 * as `later: <message>` with no stack trace and exits 1.
 */
export class CommandFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CommandFailure";
  }
}
