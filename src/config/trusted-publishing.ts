import type { PortalConfig } from "./portal-config.ts";

/** GitHub Actions' OIDC issuer: the only one whose tokens a portal trusts unless its operator says otherwise. */
export const GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com";

export interface TrustedPublishingSettings {
  /** The token's `iss`; its discovery document and JWKS are read from this origin. */
  issuer: string;
  /** The token's `aud`: what a workflow asks for with core.getIDToken(audience). */
  audience: string;
  clockToleranceSeconds: number;
  /** How long an exchanged upload credential lives. */
  credentialLifetimeSeconds: number;
}

/**
 * portal.config.json's trustedPublishing with its defaults. The audience defaults to the URL the
 * exchange answers at (deployment.apiBaseUrl, else baseUrl), path prefix included: two portals on
 * one origin (project Pages sites of one owner) must not accept each other's tokens.
 */
export function trustedPublishingSettings(config: PortalConfig): TrustedPublishingSettings {
  const given = config.trustedPublishing ?? {};
  return {
    issuer: given.issuer ?? GITHUB_ACTIONS_ISSUER,
    audience: given.audience ?? (config.deployment.apiBaseUrl ?? config.baseUrl).replace(/\/+$/, ""),
    clockToleranceSeconds: given.clockToleranceSeconds ?? 30,
    credentialLifetimeSeconds: given.credentialLifetimeSeconds ?? 900,
  };
}
