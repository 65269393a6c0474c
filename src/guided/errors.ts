/**
 * A guided-decoding request that cannot be compiled: an unsupported feature, an invalid
 * schema or pattern, an unsatisfiable constraint. The message names the problem;
 * compileGuide turns it into a ProtocolError('invalid_request') for the client.
 */
export class GuidedDecodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GuidedDecodingError';
  }
}
