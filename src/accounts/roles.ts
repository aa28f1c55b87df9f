import type { Role } from "../config/portal-config.ts";

export const ROLES: readonly Role[] = ["player", "modder", "moderator", "admin"];
/** Roles an account may only hold once its email is verified. */
export const PRIVILEGED_ROLES: readonly Role[] = ["moderator", "admin"];
/** Roles a person may choose for themselves at sign-up (the contract: free player or modder accounts). */
export const SELF_SERVICE_ROLES: readonly Role[] = ["player", "modder"];

export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

/** Stored roles minus privileged ones while the email is unverified. */
export function effectiveRoles(roles: readonly Role[], verified: boolean): Role[] {
  return roles.filter((role) => verified || !PRIVILEGED_ROLES.includes(role));
}

export function hasAnyRole(roles: readonly Role[], allowed: readonly Role[]): boolean {
  return roles.some((role) => allowed.includes(role));
}

/** Stored in a canonical order so that equal sets compare and display equally. */
export function normalizeRoles(roles: readonly Role[]): Role[] {
  return ROLES.filter((role) => roles.includes(role));
}
