import { join } from "node:path";
import { parseSettings } from "../../src/config/settings.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import type { CatalogProject } from "./catalog-project.ts";

/** The local portal server on 127.0.0.1:0 over a project's site (constructed the way `svc serve` does). */
export async function startCatalogPortal(project: CatalogProject) {
  const app = {
    config: project.config,
    settings: parseSettings({}, { dataDir: join(project.root, ".data") }),
    siteDir: project.siteDir,
    startedAt: new Date(),
    now: () => new Date(),
    log: () => {},
  };
  const server = createPortalServer(app);
  const { port } = await listen(server, 0, "127.0.0.1");
  const origin = `http://127.0.0.1:${port}`;
  project.setBaseUrl(origin);
  app.config = project.config;
  return {
    origin,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
