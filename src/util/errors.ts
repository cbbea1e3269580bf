/** An error the user caused and can fix: the CLI prints its message (no stack) and exits non-zero. */
export class KeelError extends Error {
  override name = 'KeelError';
  constructor(
    readonly code: 'not_found' | 'conflict' | 'bad_input' | 'not_paused' | 'expired' | 'config',
    message: string,
  ) {
    super(message);
  }
}
