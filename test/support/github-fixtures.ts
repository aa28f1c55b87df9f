/**
 * Objects as GitHub's REST API returns them, complete (every required field): a user, a release and
 * its assets, for replies a test scripts field by field.
 */

/** A simple-user as GitHub returns it. */
export function githubUser(login = "svc-bot", id = 1) {
  const api = `https://api.github.com/users/${login}`;
  return {
    login,
    id,
    node_id: `U_${id}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${id}`,
    gravatar_id: "",
    url: api,
    html_url: `https://github.com/${login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: "User",
    site_admin: false,
  };
}

/** A release-asset as GitHub returns it. */
export function releaseAsset(fields: {
  id: number;
  name: string;
  size: number;
  repo: string;
  tag: string;
  digest?: string | null;
  apiUrl?: string;
  downloadBase?: string;
}) {
  const api = fields.apiUrl ?? "https://api.github.com";
  return {
    url: `${api}/repos/${fields.repo}/releases/assets/${fields.id}`,
    browser_download_url: `${fields.downloadBase ?? "https://github.com"}/${fields.repo}/releases/download/${fields.tag}/${fields.name}`,
    id: fields.id,
    node_id: `RA_${fields.id}`,
    name: fields.name,
    label: null,
    state: "uploaded" as const,
    content_type: "application/zip",
    size: fields.size,
    digest: fields.digest ?? null,
    download_count: 0,
    created_at: "2026-11-01T10:00:00Z",
    updated_at: "2026-11-01T10:00:00Z",
    uploader: githubUser(),
  };
}

/** A release as GitHub returns it. */
export function githubRelease(fields: {
  id: number;
  tag: string;
  repo: string;
  name?: string;
  body?: string;
  assets?: ReturnType<typeof releaseAsset>[];
  apiUrl?: string;
  uploadUrl?: string;
  publishedAt?: string;
}) {
  const api = fields.apiUrl ?? "https://api.github.com";
  const base = `${api}/repos/${fields.repo}/releases/${fields.id}`;
  return {
    url: base,
    html_url: `https://github.com/${fields.repo}/releases/tag/${fields.tag}`,
    assets_url: `${base}/assets`,
    upload_url: `${fields.uploadUrl ?? "https://uploads.github.com"}/repos/${fields.repo}/releases/${fields.id}/assets{?name,label}`,
    tarball_url: `${api}/repos/${fields.repo}/tarball/${fields.tag}`,
    zipball_url: `${api}/repos/${fields.repo}/zipball/${fields.tag}`,
    id: fields.id,
    node_id: `RE_${fields.id}`,
    tag_name: fields.tag,
    target_commitish: "main",
    name: fields.name ?? fields.tag,
    body: fields.body ?? null,
    draft: false,
    prerelease: false,
    immutable: false,
    created_at: "2026-11-01T10:00:00Z",
    published_at: fields.publishedAt ?? "2026-11-01T10:00:00Z",
    updated_at: "2026-11-01T10:00:00Z",
    author: githubUser(),
    assets: fields.assets ?? [],
  };
}
