// Every status the API reports, in words and with a tone for its badge: one map for all pages.
// test/dashboard/status-words.test.ts checks that each status enum of the OpenAPI document is here.

export type Tone = 'ok' | 'bad' | 'busy' | 'muted' | 'neutral';

export const STATUS: Record<string, { words: string; tone: Tone }> = {
  // Services (applications, static sites) and their deployments.
  deploymentSuccess: { words: 'Deployed', tone: 'ok' },
  deploymentInProgress: { words: 'Deploying', tone: 'busy' },
  deploymentFailed: { words: 'Deploy failed', tone: 'bad' },
  deploymentCancelled: { words: 'Deploy cancelled', tone: 'muted' },
  waiting: { words: 'Queued', tone: 'busy' },
  inProgress: { words: 'In progress', tone: 'busy' },
  success: { words: 'Succeeded', tone: 'ok' },
  failed: { words: 'Failed', tone: 'bad' },
  cancelled: { words: 'Cancelled', tone: 'muted' },
  skipped: { words: 'Skipped', tone: 'muted' },
  deleting: { words: 'Deleting', tone: 'busy' },
  deletionFailed: { words: 'Deletion failed', tone: 'bad' },
  appDeletionFailed: { words: 'Deletion failed', tone: 'bad' },
  // Databases and their backups.
  creating: { words: 'Creating', tone: 'busy' },
  ready: { words: 'Ready', tone: 'ok' },
  updating: { words: 'Updating', tone: 'busy' },
  updatingExternalConnection: { words: 'Updating access', tone: 'busy' },
  restoring: { words: 'Restoring', tone: 'busy' },
  restoringFailed: { words: 'Restore failed', tone: 'bad' },
  passwordChange: { words: 'Changing password', tone: 'busy' },
  passwordChangeFailed: { words: 'Password change failed', tone: 'bad' },
  dbDeletionFailed: { words: 'Deletion failed', tone: 'bad' },
  error: { words: 'Error', tone: 'bad' },
  available: { words: 'Available', tone: 'ok' },
  // Webhook deliveries.
  SUCCESS: { words: 'Delivered', tone: 'ok' },
  PENDING: { words: 'Pending', tone: 'busy' },
  FAILED: { words: 'Failed', tone: 'bad' },
  delivered: { words: 'Delivered', tone: 'ok' },
  // Device codes (CLI sign-in).
  pending: { words: 'Pending', tone: 'busy' },
  approved: { words: 'Approved', tone: 'ok' },
  denied: { words: 'Denied', tone: 'bad' },
  expired: { words: 'Expired', tone: 'muted' },
  // Domains.
  VERIFICATION: { words: 'Awaiting DNS', tone: 'busy' },
  POINTING: { words: 'Awaiting pointing', tone: 'busy' },
  ACTIVE: { words: 'Active', tone: 'ok' },
  TIMED_OUT: { words: 'Verification timed out', tone: 'bad' },
  // States the dashboard derives (switches, companies).
  active: { words: 'Active', tone: 'ok' },
  running: { words: 'Running', tone: 'ok' },
  enabled: { words: 'Enabled', tone: 'ok' },
  disabled: { words: 'Disabled', tone: 'muted' },
  suspended: { words: 'Suspended', tone: 'muted' },
  primary: { words: 'Primary', tone: 'neutral' },
};

/** The words and tone of `status`; an unknown one is shown as it is, in a neutral badge. */
export function statusWords(status: string | null | undefined): { words: string; tone: Tone } {
  if (!status) return { words: 'Unknown', tone: 'neutral' };
  return STATUS[status] ?? { words: status, tone: 'neutral' };
}
