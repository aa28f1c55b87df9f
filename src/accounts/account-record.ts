import type { Role } from "../config/portal-config.ts";
import { normalizeRoles } from "./roles.ts";

export interface Account {
  id: string;
  email: string;
  displayName: string;
  /** Stored roles; privileged ones count only once verifiedAt is set (see effectiveRoles). */
  roles: Role[];
  createdAt: string;
  verifiedAt: string | null;
}

export interface AccountRow {
  id: string;
  email: string;
  display_name: string;
  roles: Role[];
  created_at: Date;
  verified_at: Date | null;
}

export const ACCOUNT_COLUMNS = "id, email, display_name, roles, created_at, verified_at";

export function iso(value: Date | string | null): string | null {
  return value === null ? null : new Date(value).toISOString();
}

export function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    roles: normalizeRoles(row.roles),
    createdAt: iso(row.created_at)!,
    verifiedAt: iso(row.verified_at),
  };
}

/** Callers get their own copies, so nothing they do to an answer can change the cached one. */
export function copyAccount(account: Account): Account {
  return { ...account, roles: [...account.roles] };
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
