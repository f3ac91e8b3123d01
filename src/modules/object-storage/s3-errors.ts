// Errors of the S3 data plane: an HTTP status and an S3 error code, answered as S3's XML error
// document (never the JSON error body of /v3).
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const accessDenied = (message = 'Access Denied') => new S3Error(403, 'AccessDenied', message);
export const invalidRequest = (message: string) => new S3Error(400, 'InvalidRequest', message);
export const invalidArgument = (message: string) => new S3Error(400, 'InvalidArgument', message);
export const malformedXml = () =>
  new S3Error(400, 'MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema.');
export const noSuchKey = () => new S3Error(404, 'NoSuchKey', 'The specified key does not exist.');
export const noSuchUpload = () =>
  new S3Error(
    404,
    'NoSuchUpload',
    'The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
  );
export const badDigest = (message = 'The Content-MD5 you specified did not match what we received.') => new S3Error(400, 'BadDigest', message);
export const notImplemented = (what: string) => new S3Error(501, 'NotImplemented', `${what} is not implemented by this server.`);
