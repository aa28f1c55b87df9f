import type { Server } from "node:http";
import { join } from "node:path";
import { loadSiteInputs, renderSite, writeSite } from "../../src/catalog/site.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { createAppContext } from "../../src/http/app.ts";
import type { AppContext } from "../../src/http/context.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import type { tempProject } from "./temp-project.ts";

export interface BrowserPortal {
  origin: string;
  app: AppContext;
  close(): Promise<void>;
}

/**
 * The real local portal on loopback port 0: svc build's site, the router and the backend routes
 * over PGlite in the project folder, developer email mode return-token (tokens in responses).
 */
export async function startBrowserPortal(project: ReturnType<typeof tempProject>): Promise<BrowserPortal> {
  const siteDir = project.site("");
  writeSite(siteDir, renderSite(loadSiteInputs(project.config, join(project.root, "records")), siteDir));
  const app = await createAppContext({
    config: project.config,
    settings: parseSettings({ SVC_DEV_EMAIL: "return-token" }, { dataDir: join(project.root, ".data") }),
    siteDir,
    log: () => {},
  });
  const server: Server = createPortalServer(app);
  const bound = await listen(server, 0, "127.0.0.1");
  return {
    origin: `http://127.0.0.1:${bound.port}`,
    app,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.store?.close();
    },
  };
}
