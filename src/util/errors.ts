/**
 * An error the user caused and can fix. The message says what is wrong in the library's own terms;
 * `cliHint`, when there is one, is the `keel` command that helps, which only the CLI prints (it
 * prints the message, no stack, and exits non-zero). `unavailable` is not the user's doing: the store
 * (or another service Keel needs) cannot be reached right now, and trying again later may work.
 * `forbidden`: who asked may not do it (a card routed to groups they are not in).
 */
export class KeelError extends Error {
  override name = 'KeelError';
  constructor(
    readonly code: 'not_found' | 'conflict' | 'bad_input' | 'not_paused' | 'expired' | 'config' | 'unavailable' | 'forbidden',
    message: string,
    readonly cliHint?: string,
  ) {
    super(message);
  }
}
