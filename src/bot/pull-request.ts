/**
 * A submission pull request as plain data: what fetch reads from GitHub and derive reasons about
 * (the types both share, so neither imports the other for them).
 */
import type { RepoRef } from "../github/api.ts";
import type { ChangedFile } from "../github/submission-files.ts";

export interface CommentInfo {
  id: number;
  body: string;
  authorLogin: string;
  authorType: string;
}

export interface ReviewInfo {
  id: number;
  state: string;
  authorLogin: string;
  commitId: string | null;
}

export interface PullRequestInfo {
  repo: RepoRef;
  defaultBranch: string;
  number: number;
  htmlUrl: string;
  open: boolean;
  merged: boolean;
  authorLogin: string;
  /** User or Bot, as GitHub reports the author's account. */
  authorType: string;
  body: string;
  headSha: string;
  /** The head branch: what the app's submitter record is sealed to. */
  headRef: string;
  /** owner/name of the head branch's repository (a fork's, or the portal's own); null when deleted. */
  headRepository?: string | null;
  /** When the pull request last changed (a push, a comment, a label): the sweep leaves fresh ones to the bot. */
  updatedAt: string | null;
  /** GitHub's mergeability (null while it is still computing it). */
  mergeable: boolean | null;
  files: ChangedFile[];
  /** GitHub's count of changed files (the file list stops at 3,000); null when not reported. */
  changedFiles: number | null;
  labels: string[];
  comments: CommentInfo[];
  reviews: ReviewInfo[];
  /** Open pull requests labelled state:pending_review, oldest first. */
  pendingQueue: number[];
  /** The sidecar as committed at the head (untrusted data), null when absent or unreadable. */
  sidecar: unknown;
}
