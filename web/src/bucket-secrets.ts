// A bucket's secret key, for showing it: the API returns it only when the bucket is created or its
// keys are rotated, so the dashboard keeps it from those answers in the tab's sessionStorage (like
// the API key), under its access key, so the bucket page opened next can show it for copying. The
// page itself never needs it: object bytes go through URLs the API presigns.

const storageKey = (accessKey: string) => `slipway.bucketSecret.${accessKey}`;

/** Keeps a bucket's secret key for this tab (from a create or rotate answer). */
export function rememberSecret(accessKey: string | null | undefined, secret: string | null | undefined) {
  if (accessKey && secret) sessionStorage.setItem(storageKey(accessKey), secret);
}

/** The secret key of `accessKey` if this tab has it. */
export const knownSecret = (accessKey: string | null | undefined) => (accessKey ? sessionStorage.getItem(storageKey(accessKey)) : null);
