// The pipelines module's public entry: what other modules (git-hooks) may use.
export { closePullRequestApp, listPreviewPipelines, openPullRequestApp, updatePullRequestApp, type PullRequest } from './previews.js';
