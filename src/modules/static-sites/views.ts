// Representations of static sites and their deployments (kept apart from the service so the event
// sources can use them without importing the service).
import type { StaticSiteDeploymentsTable, StaticSitesTable } from './storage.js';

const bool = (n: number) => n === 1;
const list = (s: string) => JSON.parse(s) as string[];

/** GET /static-sites/{id} and the create response. */
export function siteView(s: StaticSitesTable) {
  return {
    id: s.id,
    company_id: s.company_id,
    project_id: s.project_id,
    name: s.name,
    display_name: s.display_name,
    status: s.status,
    source: s.source,
    repo_url: s.repo_url,
    default_branch: s.default_branch,
    auto_deploy: bool(s.auto_deploy),
    is_preview_enabled: bool(s.is_preview_enabled),
    git_type: s.git_type,
    hostname: s.hostname,
    install_command: s.install_command,
    build_command: s.build_command,
    published_directory: s.published_directory,
    root_directory: s.root_directory,
    node_version: s.node_version,
    index_file: s.index_file,
    error_file: s.error_file,
    created_at: s.created_at,
    updated_at: s.updated_at,
    git_lfs_enabled: bool(s.git_lfs_enabled),
    allow_deploy_paths: list(s.allow_deploy_paths),
    ignore_deploy_paths: list(s.ignore_deploy_paths),
  };
}

/** The update response (the settings a PATCH can change, with status and updated_at). */
export function siteUpdateView(s: StaticSitesTable) {
  const v = siteView(s);
  return {
    id: v.id,
    display_name: v.display_name,
    auto_deploy: v.auto_deploy,
    default_branch: v.default_branch,
    build_command: v.build_command,
    node_version: v.node_version,
    published_directory: v.published_directory,
    is_preview_enabled: v.is_preview_enabled,
    install_command: v.install_command,
    root_directory: v.root_directory,
    index_file: v.index_file,
    error_file: v.error_file,
    source: v.source,
    git_type: v.git_type,
    repo_url: v.repo_url,
    updated_at: v.updated_at,
    status: v.status,
    git_lfs_enabled: v.git_lfs_enabled,
    allow_deploy_paths: v.allow_deploy_paths,
    ignore_deploy_paths: v.ignore_deploy_paths,
  };
}

/** GET of one deployment (the contract's get shape has no build id or build error). */
export function deploymentView(d: StaticSiteDeploymentsTable) {
  return {
    id: d.id,
    static_site_id: d.static_site_id,
    status: d.status,
    type: d.type,
    repo_url: d.repo_url,
    branch: d.branch,
    is_preview: bool(d.is_preview),
    author_login: d.author_login,
    author_img: d.author_img,
    commit_sha: d.commit_sha,
    commit_message: d.commit_message,
    created_at: d.created_at,
    updated_at: d.updated_at,
    finished_at: d.finished_at,
    started_at: d.started_at,
  };
}

/** A deployment as listed, triggered and sent in STATIC_SITE_DEPLOY. */
export function deploymentListView(d: StaticSiteDeploymentsTable) {
  return { ...deploymentView(d), cloud_build_id: d.cloud_build_id, build_error: d.build_error };
}
