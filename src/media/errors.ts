/**
 * Refusals of the media pipeline. A MediaError is a ProtocolError('invalid_request') (so
 * src/http answers 400 without knowing this module) that also carries a machine-readable
 * `reason`, for logs, metrics and tests.
 */
import { ProtocolError } from '../common/protocol-error.js';

export type MediaRefusalReason =
  /** The part itself is malformed: unknown type, empty text, missing or bad URL. */
  | 'malformed_part'
  /** More media parts than the server takes in one request. */
  | 'too_many_parts'
  /** A URL scheme other than http, https, data or file. */
  | 'scheme_not_allowed'
  /** The host is not in ALLOWED_MEDIA_DOMAINS_ENV. */
  | 'host_not_allowed'
  /** A wildcard-DNS service (nip.io, sslip.io, ...) or a special-use name (localhost). */
  | 'wildcard_dns'
  /** The host is, or resolves to, a loopback/private/reserved address. */
  | 'private_address'
  /** The name did not resolve. */
  | 'dns_failure'
  /** Too many redirects, a loop, a redirect without Location, or to a refused URL. */
  | 'redirect_refused'
  /** Larger than the cap of its kind (or a decoded size limit). */
  | 'too_large'
  /** Connecting or downloading took too long. */
  | 'timeout'
  /** The media server answered with a status other than 200. */
  | 'http_status'
  /** The connection failed (refused, reset, TLS error, ...). */
  | 'fetch_failed'
  /** A local path outside the media directory (`..`, symlink), or a file with several hard links (one may be outside). */
  | 'path_outside_media_dir'
  /** A local path that does not name a readable regular file. */
  | 'file_not_found'
  /** Local files cannot be read in this runtime. */
  | 'local_files_unavailable'
  /** A data: URL or inline base64 payload that is not valid base64 of the right type. */
  | 'malformed_data_url'
  /** The bytes are not one of the formats the kind accepts (checked by magic bytes). */
  | 'format_not_allowed'
  /** The bytes have an accepted format but could not be decoded. */
  | 'decode_failed'
  /** The container is accepted but its codec has no decoder here. */
  | 'unsupported_codec'
  /** The media is fine but the served model does not take this kind (text-only model). */
  | 'modality_not_supported';

export class MediaError extends ProtocolError {
  constructor(
    readonly reason: MediaRefusalReason,
    message: string,
    param: string | null = null,
  ) {
    super('invalid_request', message, param);
    this.name = 'MediaError';
  }

  /** The same refusal, attributed to a request parameter ("prompt[1].image_url: ..."). */
  forParam(param: string): MediaError {
    if (this.param !== null) return this;
    return new MediaError(this.reason, `${param}: ${this.message}`, param);
  }
}

export function mediaError(reason: MediaRefusalReason, message: string, param: string | null = null): MediaError {
  return new MediaError(reason, message, param);
}
